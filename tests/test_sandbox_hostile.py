"""The sandbox holds below Python. Each test first defeats the worker's audit hook from inside (it empties the hook's
sets of refused events and imports and patches `os.path.realpath`, which its path check relies on), then attempts the
escape; the namespaces, uids and limits of the operating system must stop it anyway. Every process a test sees is
killed by PID at the end. Tests that take `sandbox_backend` run on both backends: `namespaces` (a
process per worker in its own namespaces) and `docker` (a container per environment; the
`docker_daemon` fixture starts Docker)."""
import errno, json, os, signal, socket, subprocess, sys, tempfile, time
from pathlib import Path
import pytest
from envsynth.sandbox import SandboxLimits, SandboxPool, SandboxUnavailable

REPO = Path(__file__).resolve().parents[1]
MARK = f'{os.getpid()}.{time.time_ns() % 10**6}'       # a string only this run's hostile processes carry

BYPASS = r'''
import os, sys
def bypass():
    "Switch the audit hook off from inside: it only consults these sets and os.path.realpath."
    sandbox = sys.modules['envsynth.sandbox_worker']
    for name in ('_BLOCKED_EVENTS', '_PATH_EVENTS', '_BLOCKED_IMPORTS'): getattr(sandbox, name).clear()
    home = os.getcwd()
    os.path.realpath = lambda path, *args, **kwargs: os.path.join(home, 'inside')
'''

def _tree(pid: int) -> list[int]:
    "`pid` and its descendants, read from /proc."
    out, todo = [], [pid]
    while todo:
        p = todo.pop(); out.append(p)
        for task in Path(f'/proc/{p}/task').glob('*'):
            try: todo += [int(c) for c in (task / 'children').read_text().split()]
            except OSError: pass
    return out

def _alive(pid: int) -> bool:
    try: return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] not in ('Z', 'X')
    except (OSError, IndexError): return False

def _marked() -> list[int]:
    "Host PIDs of live processes whose command line carries MARK."
    pids = []
    for d in Path('/proc').glob('[0-9]*'):
        try:
            if MARK.encode() in (d / 'cmdline').read_bytes() and _alive(int(d.name)): pids.append(int(d.name))
        except OSError: pass
    return pids

def _kill(pids) -> None:
    for p in pids:
        try: os.kill(p, signal.SIGKILL)
        except ProcessLookupError: pass

def _wait_marked(seconds: float = 5) -> list[int]:
    "`_marked()` once it finds a process: a process just exec'd in the worker's namespaces can take a moment to show its command line."
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not _marked(): time.sleep(0.05)
    return _marked()

def _wait_gone(pids, seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids): time.sleep(0.05)
    return [p for p in pids if _alive(p)]

def _worker_pids(pool: SandboxPool, slot: int = 0) -> list[int]: return pool.worker(slot).pids()

def _run(pool: SandboxPool, body: str, func: str = 'attack', **kw) -> dict:
    return pool.run(BYPASS + body, func, **kw)

@pytest.fixture
def pool(sandbox_backend):
    p = SandboxPool(size=1, limits=SandboxLimits(call_timeout_s=10), backend=sandbox_backend)
    pids = _worker_pids(p)
    yield p
    pids += _worker_pids(p)
    p.close(); _kill(pids + _marked())

def test_tool_code_starts_no_process(pool):
    "With the hook off, a tool call can neither fork nor run a program (seccomp: threads only), nor raise NPROC's hard limit; the pool carries on."
    body = '''
def attack():
    bypass()
    import subprocess, resource
    out = {}
    try: subprocess.Popen(['sleep', '60']); out['popen'] = 'started'
    except OSError as e: out['popen'] = e.errno
    try:
        pid = os.fork()
        if pid == 0: os._exit(0)
        out['fork'] = 'forked'
    except OSError as e: out['fork'] = e.errno
    try: resource.setrlimit(resource.RLIMIT_NPROC, (1000, 1000)); out['nproc'] = 'raised'
    except (ValueError, OSError): out['nproc'] = resource.getrlimit(resource.RLIMIT_NPROC)
    return out
'''
    out = _run(pool, body)['ok']
    assert out['popen'] == out['fork'] == errno.EPERM, out
    assert out['nproc'] == [pool.limits.processes] * 2, out
    assert pool.run('def f(): return 1', 'f') == {'ok': 1}

ESCAPER = '''
import os as _os, sys as _sys, time as _time
for _n in ('_BLOCKED_EVENTS', '_PATH_EVENTS', '_BLOCKED_IMPORTS'): getattr(_sys.modules['envsynth.sandbox_worker'], _n).clear()
# at import, in the template (it may fork: it forks the episodes): a child that double-forks into a
# new session, the grandchild meant to outlive everything
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        while True: _time.sleep(1)
    _os._exit(0)

class EscapingLibrary(LibraryTools):
    pass
'''

def test_processes_the_pool_did_not_start_are_killed(sandbox_backend):
    "A template's import-time code double-forks a process into a new session: it is killed within a second, long before the pool closes."
    with SandboxPool(size=1, backend=sandbox_backend) as pool:
        honest = _library(pool, '', 'LibraryTools')
        base = len(pool.worker(0).pids())
        _library(pool, ESCAPER, 'EscapingLibrary')
        with honest.reset() as ep: assert ep.step(('get_member_account', {'member_id': 'M00012'})).ok
        extra = 2 if sandbox_backend == 'docker' else 1     # the template (docker: and its container's worker)
        deadline = time.monotonic() + 3
        while len(pool.worker(0).pids()) > base + extra and time.monotonic() < deadline: time.sleep(0.1)
        assert len(pool.worker(0).pids()) <= base + extra + (sandbox_backend == 'docker'), pool.worker(0).pids()

PROBE = r'''
def probe():
    "Every way into a sibling process or out of the namespaces: 'ok' where it worked."
    import errno as E, sys
    f = sys._getframe()                       # ctypes is gone from sys.modules: take the sandbox's own
    while 'proc' not in f.f_locals: f = f.f_back
    ctypes = next(c.cell_contents for c in f.f_locals['proc'].load_filter.__closure__
                  if getattr(c.cell_contents, '__name__', '') == 'ctypes')
    libc = ctypes.CDLL(None, use_errno=True)
    me, out = os.getpid(), {}
    targets = [int(d) for d in os.listdir('/proc') if d.isdigit() and int(d) != me]
    out['targets'] = targets
    def attempt(name, fn):
        try: r = fn()
        except OSError as e: out[name] = E.errorcode.get(e.errno, str(e.errno)); return
        out[name] = 'ok' if r is None or r >= 0 else E.errorcode.get(ctypes.get_errno(), 'err')
    class IOV(ctypes.Structure): _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
    buf = ctypes.create_string_buffer(64)
    for t in targets:
        attempt(f'mem {t}', lambda: open(f'/proc/{t}/mem', 'rb').close())
        attempt(f'fds {t}', lambda: os.listdir(f'/proc/{t}/fd') and None)
        attempt(f'environ {t}', lambda: open(f'/proc/{t}/environ', 'rb').read() and None)
        attempt(f'ptrace {t}', lambda: libc.ptrace(16, t, 0, 0))         # PTRACE_ATTACH
        local, remote = IOV(ctypes.addressof(buf), 8), IOV(0x400000, 8)
        attempt(f'process_vm_readv {t}', lambda: libc.process_vm_readv(
            t, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0))
        attempt(f'pidfd_open {t}', lambda: libc.syscall(434, t, 0))
        attempt(f'kill {t}', lambda: os.kill(t, 0))
    attempt('unshare user', lambda: libc.unshare(0x10000000))
    attempt('unshare mount', lambda: libc.unshare(0x20000))
    attempt('dumpable', lambda: libc.prctl(4, 1, 0, 0, 0))
    attempt('io_uring', lambda: libc.syscall(425, 1, ctypes.byref(ctypes.create_string_buffer(120))))
    return out
'''

PROBER = 'import os\n' + PROBE.replace('\ndef probe', '\ndef _probe') + '''

class ProbingLibrary(LibraryTools):
    @read_tool
    def probe_neighbours(self) -> dict:
        """Attack every other process in sight."""
        import sys
        sandbox = sys.modules['envsynth.sandbox_worker']
        for name in ('_BLOCKED_EVENTS', '_PATH_EVENTS', '_BLOCKED_IMPORTS'): getattr(sandbox, name).clear()
        return _probe()
'''

def test_no_process_reaches_into_another(sandbox_backend):
    "With the hook off, an exec call and an episode try every way into a sibling process (its memory through /proc and process_vm_readv, ptrace, its descriptors, signals) and out of their namespaces (unshare, a user namespace, PR_SET_DUMPABLE back on): each is refused."
    with SandboxPool(size=1, limits=SandboxLimits(call_timeout_s=10), backend=sandbox_backend) as pool:
        env = _library(pool, PROBER, 'ProbingLibrary')
        sibling = env.reset(); sibling.step(('get_member_account', {'member_id': 'M00012'}))
        outs = [_run(pool, PROBE + 'def attack(): bypass(); return probe()')]
        with env.reset() as ep:
            res = ep.step(('probe_neighbours', {})); assert res.ok, res
            outs.append(res.output)
        sibling.close()
        for out in outs:
            out = out.get('ok', out)
            assert out['targets'], out                          # it saw some process to attack
            bad = {k: v for k, v in out.items() if k != 'targets' and v == 'ok'}
            assert not bad, out
def test_fork_bomb_goes_nowhere(pool):
    "With the hook off, the first fork of a fork bomb fails (EPERM), and the pool carries on."
    body = '''
def attack():
    bypass()
    n = 0
    try:
        for _ in range(64):
            if os.fork() == 0:
                import time; time.sleep(30); os._exit(0)
            n += 1
    except OSError as e: return {'forked': n, 'errno': e.errno}
    return {'forked': n}
'''
    out = _run(pool, body)['ok']
    assert out == {'forked': 0, 'errno': errno.EPERM}, out
    pids = _worker_pids(pool)
    pool.close()
    assert not _wait_gone(pids, 5)

def test_writes_never_reach_the_host(pool):
    "With the hook off, /tmp and /dev/shm are private size-limited tmpfs mounts and everything else is read-only."
    host_files = [Path(tempfile.gettempdir()) / f'envsynth-hostile-{MARK}', Path('/dev/shm') / f'envsynth-hostile-{MARK}',
                  Path('/var/tmp') / f'envsynth-hostile-{MARK}']
    body = '''
def attack(paths):
    bypass()
    out = {}
    for p in paths:
        try:
            with open(p, 'w') as f: f.write('pwned')
            out[p] = 'written'
        except OSError as e: out[p] = errno_name(e)
    st = os.statvfs('/tmp')
    out['tmp_mb'] = st.f_blocks * st.f_frsize >> 20
    return out
def errno_name(e):
    import errno
    return errno.errorcode.get(e.errno, str(e.errno))
'''
    try:
        out = _run(pool, body, paths=[str(p) for p in host_files] + [str(REPO / f'hostile-{MARK}'), '/etc/hostile-' + MARK])['ok']
        assert not any(p.exists() for p in host_files), out
        assert not (REPO / f'hostile-{MARK}').exists() and not Path('/etc/hostile-' + MARK).exists()
        assert out['tmp_mb'] <= pool.limits.disk_mb, out
        assert out['/etc/hostile-' + MARK] == 'EROFS', out
    finally:
        for p in host_files + [REPO / f'hostile-{MARK}', Path('/etc/hostile-' + MARK)]: p.unlink(missing_ok=True)

def test_private_tmp_is_size_limited(pool):
    "Filling the private /tmp stops at its size (no file is bigger than RLIMIT_FSIZE, so several files are written)."
    body = '''
def attack():
    bypass()
    import errno
    written = 0
    try:
        for i in range(64):
            with open(f'fill-{i}', 'wb') as f:         # its own folder, in /tmp: kept while it runs
                for _ in range(15): f.write(b'x' * (1 << 20)); written += 1
    except OSError as e: return {'mb': written, 'errno': errno.errorcode[e.errno]}
    return {'mb': written}
'''
    out = _run(pool, body)['ok']
    assert out.get('errno') == 'ENOSPC' and out['mb'] <= pool.limits.disk_mb, out

def test_reads_see_no_repository_and_no_other_process(pool):
    "The project folder, its settings and git config, and other processes' command lines are not visible inside."
    body = '''
def attack(repo, host_pid):
    bypass()
    out = {}
    for p in ('settings.ini', '.git/config', 'pyproject.toml'):
        try: out[p] = len(open(os.path.join(repo, p)).read())
        except OSError as e: out[str(p)] = type(e).__name__
    out['listing'] = sorted(os.listdir(repo))
    out['pids'] = sorted(int(d) for d in os.listdir('/proc') if d.isdigit())
    try: out['host'] = open(f'/proc/{host_pid}/cmdline', 'rb').read().decode(errors='replace')
    except OSError as e: out['host'] = type(e).__name__
    return out
'''
    out = _run(pool, body, repo=str(REPO), host_pid=os.getpid())['ok']
    assert out['settings.ini'] == out['.git/config'] == out['pyproject.toml'] == 'FileNotFoundError', out
    assert 'settings.ini' not in out['listing'] and '.git' not in out['listing'], out
    assert out['host'] == 'FileNotFoundError' and max(out['pids']) < 100, out

def test_uids_are_distinct_across_pools(sandbox_backend):
    "Slot 0 of two pools runs under two uids, and one pool's code cannot kill the other pool's worker."
    a, b = (SandboxPool(size=1, backend=sandbox_backend) for _ in range(2))
    pids = []
    try:
        assert a.probe()['uid'] != b.probe()['uid']
        pids = _worker_pids(a) + _worker_pids(b)
        body = '''
def attack(pids):
    bypass()
    import signal
    out = {}
    for p in pids:
        try: os.kill(p, signal.SIGKILL); out[str(p)] = 'killed'
        except OSError as e: out[str(p)] = type(e).__name__
    return out
'''
        victims = _worker_pids(b)
        out = _run(a, body, pids=victims); assert 'ok' in out, out; out = out['ok']
        assert 'killed' not in out.values(), out
        reply = b.run('def ping(): return "pong"', 'ping')
        assert reply == {'ok': 'pong'} and not b.stats['replaced'], (reply, b.stats)
    finally:
        a.close(); b.close(); _kill(pids)

def test_loopback_is_refused_by_the_network_namespace(pool):
    "A plain TCP connection to a port listening on the host's loopback fails in the kernel (no route: lo is down)."
    server = socket.socket(); server.bind(('127.0.0.1', 0)); server.listen(); server.settimeout(0.3)
    body = '''
def attack(port):
    bypass()
    import socket
    try: socket.create_connection(('127.0.0.1', port), timeout=2); return 'connected'
    except OSError as e: return e.errno
    except Exception as e: return f'{type(e).__name__}: {e}'
'''
    try:
        out = _run(pool, body, port=server.getsockname()[1])
        assert out['ok'] in (errno.ENETUNREACH, errno.ECONNREFUSED), out
        with pytest.raises(socket.timeout): server.accept()
    finally: server.close()

OWNER = '''
import json, sys, threading, time
from envsynth.sandbox import SandboxPool, SandboxLimits
pool = SandboxPool(size=1, limits=SandboxLimits(call_timeout_s=300), backend=sys.argv[1])
pool.probe()
threading.Thread(target=pool.run, args=("def spin():\\n    while True: pass\\n", 'spin'), daemon=True).start()
time.sleep(1)
containers = [c.name for c in getattr(pool.worker(0), 'containers', {}).values()]
print(json.dumps({"pids": pool.worker(0).pids(), "containers": containers}), flush=True)
time.sleep(600)
'''

def _sandbox_dirs() -> set[str]: return {p.name for p in Path(tempfile.gettempdir()).glob('envsynth-sandbox-*')}

def _containers(names: list[str]) -> list[str]:
    "Those of the named sandbox containers that still exist, running or not."
    if not names: return []
    import docker
    client = docker.from_env()
    listed = client.containers.list(all=True, filters={'label': 'envsynth.owner'})
    try: return [c.name for c in listed if c.name in names]
    finally: client.close()

def test_busy_worker_of_a_killed_owner_leaves_nothing(sandbox_backend):
    """SIGKILL the owner while its worker spins: the worker, its containers and its folders go
    (nothing waits for the CPU limit)."""
    before = _sandbox_dirs()
    owner = subprocess.Popen([sys.executable, '-c', OWNER, sandbox_backend],
                             stdout=subprocess.PIPE, text=True)
    pids = []
    try:
        info = json.loads(owner.stdout.readline())
        pids = info['pids']
        assert pids and all(_alive(p) for p in pids)
        assert len(info['containers']) == (sandbox_backend == 'docker')
        owner.kill(); owner.wait()
        assert not _wait_gone(pids, 10), 'the busy worker outlived its owner'
        assert not (_sandbox_dirs() - before), f'left behind: {_sandbox_dirs() - before}'
        deadline = time.monotonic() + 15
        while _containers(info['containers']) and time.monotonic() < deadline: time.sleep(0.2)
        assert not _containers(info['containers']), 'containers outlived their owner'
    finally:
        owner.kill(); owner.wait(); _kill(pids)

def test_weak_mode_removes_stale_folders_of_dead_owners():
    "Without namespaces (an explicit opt-in), a worker's home is a host folder; folders of dead owners go at the next pool start."
    dead = subprocess.Popen(['true']); dead.wait()
    stale = Path(tempfile.gettempdir()) / f'envsynth-sandbox-{dead.pid}-0-stale{MARK.replace(".", "_")}'
    stale.mkdir(); (stale / 'worker.log').write_text('old')
    live = Path(tempfile.mkdtemp(prefix=f'envsynth-sandbox-{os.getpid()}-9-'))
    try:
        with SandboxPool(size=1, limits=SandboxLimits(namespaces=False)) as p:
            assert p.run('def f(): return 1', 'f') == {'ok': 1}
            assert not stale.exists() and live.exists()
    finally:
        import shutil; shutil.rmtree(stale, ignore_errors=True); shutil.rmtree(live, ignore_errors=True)

def test_unavailable_namespaces_are_a_clear_error(monkeypatch):
    "No `unshare`, or not root for per-worker uids: `SandboxUnavailable` says why and how to opt into a weaker mode."
    import envsynth.sandbox as sandbox
    monkeypatch.setattr(sandbox.shutil, 'which', lambda name: None)
    with pytest.raises(SandboxUnavailable, match='unshare'): SandboxPool(size=1)
    monkeypatch.undo()
    monkeypatch.setattr(sandbox.os, 'geteuid', lambda: 1000)
    with pytest.raises(SandboxUnavailable, match='drop_privileges=False'): SandboxPool(size=1)

def test_cpu_limit_is_a_resource_limit(sandbox_backend):
    "A worker that spends its CPU seconds is killed by the kernel, and the call says `resource_limit`, not `crashed`."
    limits = SandboxLimits(cpu_s=3, call_timeout_s=30)
    with SandboxPool(size=1, limits=limits, backend=sandbox_backend) as p:
        out = p.run('def spin():\n    while True: pass\n', 'spin')
        assert out['error']['type'] == 'resource_limit', out
        assert p.run('def f(): return 1', 'f') == {'ok': 1}

LIBRARY = REPO / 'environments' / 'library'
TAMPER = '''
import envsynth.envs as _envs
def _forged(rows): return '0' * 64
_envs.table_hash = _forged                        # at import: every hash this process computes is forged
_envs.EnvRuntime.seed_hashes = lambda self, fresh=False: {t: _forged(r) for t, r in self.seed.items()}

class TamperingLibrary(LibraryTools):
    @read_tool
    def tamper(self) -> str:
        """Forge the hashes again, from inside a call."""
        import builtins
        _envs.table_hash = _forged; builtins.envsynth_tampered = True
        return 'done'
'''

def _library(pool: SandboxPool, extra: str, toolkit: str):
    from envsynth.envs import Environment
    from envsynth.sandbox import SandboxBackend
    meta = json.loads((LIBRARY / 'env.json').read_text())
    backend = SandboxBackend(pool, (LIBRARY / 'tools.py').read_text() + extra, toolkit,
                             json.loads((LIBRARY / 'seed_state.json').read_text()), meta.get('clock_start'))
    return Environment(toolkit, backend)

def environments_tamper(pool: SandboxPool) -> None:
    "Environment A forges `table_hash` at import and in a call, and exec code does too; environment B, loaded later in the same worker, hashes honestly."
    from envsynth.envs import load_environment
    evil = _library(pool, TAMPER, 'TamperingLibrary')
    with evil.reset() as ep: assert ep.step(('tamper', {})).output == 'done'
    assert pool.run('import envsynth.envs\ndef f():\n    envsynth.envs.table_hash = lambda rows: "1" * 64\n    return 1', 'f') == {'ok': 1}
    local, boxed = load_environment(LIBRARY, trusted=True), load_environment(LIBRARY, sandbox=pool)
    assert boxed.backend.seed_hashes(fresh=True) == local.backend.seed_hashes(fresh=True)
    for task in local.tasks.values():
        (_, h1), (_, h2) = local.gold_run(task), boxed.gold_run(task)
        assert h1 == h2 == task.gold_state_hash, (task.id, h2)

def test_environments_cannot_tamper_with_each_other(sandbox_backend):
    with SandboxPool(size=1, backend=sandbox_backend) as pool: environments_tamper(pool)

VICTIM = '''
import os as _os
with open('secret.txt', 'w') as _f: _f.write('the gold answer')   # in its template's own folder

class VictimLibrary(LibraryTools):
    @read_tool
    def whoami(self) -> dict:
        """This episode's process and its template.

        Args:
        """
        return {'pid': _os.getpid(), 'template': _os.getppid(), 'uid': _os.getuid()}
'''

NEIGHBOUR_ATTACK = BYPASS + '''
import glob, signal
bypass()
ATTACK = {}
for _p in (int(p) for p in os.listdir('/proc') if p.isdigit()):
    if _p in (1, os.getpid(), os.getppid()): continue          # its own worker and container
    out = ATTACK[str(_p)] = {}
    for what, how in (('environ', lambda: open(f'/proc/{_p}/environ', 'rb').read()),
                      ('cwd', lambda: os.listdir(f'/proc/{_p}/cwd')),
                      ('secret', lambda: open(f'/proc/{_p}/cwd/secret.txt').read()),
                      ('folder', lambda: os.listdir(f'/tmp/sandbox/t-{_p}')),
                      ('kill', lambda: os.kill(_p, signal.SIGKILL))):
        try: how(); out[what] = 'ok'
        except OSError as e: out[what] = type(e).__name__
ATTACK['listing'] = sorted(glob.glob('/tmp/sandbox/*/secret.txt') + glob.glob('/tmp/sandbox/*'))
ATTACK['uid'] = os.getuid()

class AttackingLibrary(LibraryTools):
    @read_tool
    def attack_results(self) -> dict:
        """What the attack at import found.

        Args:
        """
        return ATTACK
'''

def test_an_environment_cannot_signal_or_read_another(sandbox_backend):
    """Environment A's code, loaded after environment B on the same worker, with the audit hook off and in its
    template (whose filter lets it signal), tries to kill every process it sees, read their environment, list
    their working folder and read B's secret file there: each is refused (namespaces: B runs under a uid of its
    own; Docker: B is in another container), and B's open episode carries on."""
    with SandboxPool(size=1, backend=sandbox_backend) as pool:
        victim = _library(pool, VICTIM, 'VictimLibrary')
        ep = victim.reset()
        pids = ep.step(('whoami', {})).output
        attacker = _library(pool, NEIGHBOUR_ATTACK, 'AttackingLibrary')
        with attacker.reset() as a: out = a.step(('attack_results', {})).output
        listing, uid = out.pop('listing'), out.pop('uid')
        assert uid != pids['uid'], (uid, pids)                 # the two environments' uids differ
        assert not any('secret' in p for p in listing), listing
        if sandbox_backend == 'namespaces':                  # B's template and episode were in sight
            assert {str(pids['pid']), str(pids['template'])} <= out.keys(), (pids, out)
        bad = {p: r for p, r in out.items() if 'ok' in r.values()}
        assert not bad, bad
        assert ep.step(('whoami', {})).output == pids                 # the same processes, alive
        assert ep.state_hash() == victim.reset().state_hash()
        assert pool.stats['replaced'] == {}, pool.stats
        ep.close()

def test_exec_calls_never_take_a_loaded_environment_s_uid(monkeypatch):
    "With a block of 8 uids (the worker's and 7 for its processes), an environment loaded first keeps its uid while exec calls cycle through the other 6: its template and open episode outlive more exec calls than the block has uids (namespaces backend, as root)."
    import envsynth.sandbox as sandbox
    monkeypatch.setattr(sandbox, 'SANDBOX_UID_BLOCK', 8)
    with SandboxPool(size=1) as pool:
        env = _library(pool, VICTIM, 'VictimLibrary')
        ep = env.reset(); pids = ep.step(('whoami', {})).output
        uids = [pool.run('import os\ndef f(): return os.getuid()', 'f')['ok'] for _ in range(10)]
        # 1 is the environment's, 0 the worker's; the calls came round to the start of the block
        assert set(uids) <= set(range(2, 8)) and len(set(uids)) < len(uids), uids
        assert ep.step(('whoami', {})).output == pids        # the same processes, alive
        assert pool.stats['replaced'] == {} and pool.stats['parked'] == 0, pool.stats
        ep.close()

COUNTER = '''
calls_in_module = 0

class CountingLibrary(LibraryTools):
    @read_tool
    def count_call(self) -> dict:
        """Count calls in a module global and in builtins."""
        import builtins
        global calls_in_module
        calls_in_module += 1
        builtins.envsynth_calls = getattr(builtins, 'envsynth_calls', 0) + 1
        return {'module': calls_in_module, 'builtins': builtins.envsynth_calls}
'''

def episodes_start_clean(pool: SandboxPool) -> None:
    "Module globals and builtins changed in one episode are gone in the next, on every worker."
    env = _library(pool, COUNTER, 'CountingLibrary')
    seen = []
    for _ in range(4):
        with env.reset() as ep: seen.append(ep.step(('count_call', {})).output)
    assert seen == [{'module': 1, 'builtins': 1}] * 4, seen

def test_episodes_start_clean(sandbox_backend):
    with SandboxPool(size=2, backend=sandbox_backend) as pool: episodes_start_clean(pool)

def test_memory_bomb_is_bounded(sandbox_backend):
    "With the hook off, one process's allocations stop at RLIMIT_AS, and the pool carries on."
    body = '''
def attack():
    bypass()
    chunks = []
    try:
        while True: chunks.append(bytearray(32 << 20))
    except MemoryError: return {'mb': 32 * len(chunks)}
'''
    limits = SandboxLimits(call_timeout_s=20, memory_mb=256)
    with SandboxPool(size=1, limits=limits, backend=sandbox_backend) as p:
        out = _run(p, body)
        assert 'ok' in out and out['ok']['mb'] < limits.memory_mb, out
        assert p.run('def f(): return 1', 'f') == {'ok': 1}

def test_container_memory_bounds_all_processes(docker_daemon):
    """A call that stays under RLIMIT_AS but passes the container's --memory (threads only: it
    cannot fork): the kernel ends it, the call is a resource_limit, and the host is untouched."""
    body = '''
def attack():
    bypass()
    import threading, time
    blocks = []
    def grab(): blocks.append(bytearray(100 << 20))      # zero-filled: resident
    ts = [threading.Thread(target=grab) for _ in range(4)]
    for t in ts: t.start()
    for t in ts: t.join()
    time.sleep(3)
    return len(blocks)
'''
    limits = SandboxLimits(call_timeout_s=20, memory_mb=600, container_memory_mb=256, processes=10)
    with SandboxPool(size=1, limits=limits, backend='docker') as p:
        out = _run(p, body)
        assert out.get('error', {}).get('type') == 'resource_limit' and out.get('replaced'), out
        assert p.run('def f(): return 1', 'f') == {'ok': 1}

def test_docker_containers_are_locked_down(docker_daemon):
    "What `docker inspect` says of an environment's container; the image is built once per content."
    import docker
    from envsynth.envs import load_environment
    from envsynth.sandbox import sandbox_image
    client = docker.from_env()
    with SandboxPool(size=1, backend='docker') as p:
        env = load_environment(LIBRARY, sandbox=p)
        with env.reset() as ep: assert ep.step(('get_member_account', {'member_id': 'M00012'})).ok
        names = [c.name for c in p.worker(0).containers.values()]
        assert len(names) == 1, names                     # the environment's own container
        info = client.api.inspect_container(names[0])
        host, lim = info['HostConfig'], p.limits
        assert host['NetworkMode'] == 'none' and host['ReadonlyRootfs']
        assert host['CapDrop'] == ['ALL'] and host['SecurityOpt'] == ['no-new-privileges']
        assert host['PidsLimit'] == lim.processes + 2
        assert host['Memory'] == host['MemorySwap'] == lim.container_memory_mb << 20
        assert host['NanoCpus'] == int(lim.container_cpus * 1e9) and '/tmp' in host['Tmpfs']
        assert not any(m['RW'] for m in info['Mounts'])
        assert int(info['Config']['User'].split(':')[0]) >= 2_000_000_000, info['Config']['User']
        tag = sandbox_image(client)
        assert tag == sandbox_image(client) == info['Config']['Image']
    assert not _containers(names), 'a container outlived pool.close()'
    client.close()

def test_stale_containers_are_removed_at_start(docker_daemon):
    "A container whose owner is gone (a host killed before it cleaned up) goes when a pool starts."
    import docker
    from envsynth.sandbox import sandbox_image
    client = docker.from_env()
    dead = subprocess.Popen(['true']); dead.wait()
    boot = Path('/proc/sys/kernel/random/boot_id').read_text().strip()
    stale = client.containers.create(sandbox_image(client), ['/nothing'],
                                     name=f'envsynth-stale-{MARK.replace(".", "-")}',
                                     labels={'envsynth.owner': f'{boot}/{dead.pid}/1'})
    try:
        with SandboxPool(size=1, backend='docker'):
            assert not _containers([stale.name])
    finally:
        try: stale.remove(force=True)
        except docker.errors.NotFound: pass
        client.close()

def test_unavailable_docker_is_a_clear_error(monkeypatch):
    "No docker CLI: `SandboxUnavailable` names the script that installs it."
    import envsynth.sandbox as sandbox
    monkeypatch.setattr(sandbox.shutil, 'which', lambda name: None)
    with pytest.raises(SandboxUnavailable, match='ensure_docker.sh'):
        SandboxPool(size=1, backend='docker')
    with pytest.raises(ValueError, match='backend'): SandboxPool(size=1, backend='vm')

# --- the host side: a dying worker, a forged frame, a hostile environment in a batch, a slow one ---

def test_a_reset_channel_is_a_frame_error():
    "A process that dies with bytes unread resets its socket: reading gives `FrameError('crashed')`, never `ConnectionResetError`."
    from envsynth.sandbox import FrameError, read_frame
    a, b = socket.socketpair()
    a.sendall(b'unread'); b.close()
    with pytest.raises(FrameError) as e: read_frame(a.fileno(), deadline=time.monotonic() + 2)
    assert e.value.kind == 'crashed'
    a.close()

NAP = '''
class NappingLibrary(LibraryTools):
    @read_tool
    def nap(self, seconds: float) -> str:
        """Sleep.

        Args:
            seconds: how long
        """
        import time; time.sleep(seconds); return 'rested'
'''

def _kill_later(pids_of, delay: float, more_than: int = 0):
    "Kill, from the host, every process `pids_of()` names, `delay` seconds after it names more than `more_than` (the call is in flight)."
    import threading
    def go():
        deadline = time.monotonic() + 30
        while len(pids_of()) <= more_than and time.monotonic() < deadline: time.sleep(0.05)
        time.sleep(delay); _kill(pids_of())
    t = threading.Thread(target=go); t.start(); return t

def test_worker_killed_mid_request_is_a_typed_error(sandbox_backend):
    """The worker dies (killed from outside: with Docker, every process of its containers) while a step and while an
    exec call are in flight: typed errors out of `Episode.step` and `pool.run`, the worker replaced once, as
    `crashed`, and the pool carries on. The rest of the batch is unaffected: honest gold runs that waited for the dying
    worker, and honest episodes open on it (replayed on the fresh one), end in their gold state."""
    from concurrent.futures import ThreadPoolExecutor
    from envsynth.envs import load_environment
    from envsynth.sandbox import SandboxError
    limits = SandboxLimits(call_timeout_s=20).for_load(10, 1, environments=2)
    with SandboxPool(size=1, limits=limits, backend=sandbox_backend) as pool:
        env, honest = _library(pool, NAP, 'NappingLibrary'), load_environment(LIBRARY, sandbox=pool)
        tasks = list(honest.tasks.values())[:4]
        ep = env.reset()
        before = [honest.reset() for _ in tasks]          # honest episodes open on the same worker
        t = _kill_later(lambda: pool.worker(0).pids(), 1.0)
        with ThreadPoolExecutor(5) as ex:
            nap = ex.submit(ep.step, ('nap', {'seconds': 10})); time.sleep(0.5)
            # the rest of the batch waits for the worker that is about to die
            batch = [ex.submit(honest.gold_run, task) for task in tasks]
            res = nap.result(); t.join()
        assert res.error is not None and res.error.type == 'crashed', res
        assert pool.stats['replaced'] == {'crashed': 1}, pool.stats    # once: the batch replaced none
        assert [f.result()[1] for f in batch] == [task.gold_state_hash for task in tasks]
        for task, e in zip(tasks, before):                # replayed on the fresh worker
            for action in task.gold_actions: assert e.step(action).ok
            assert e.state_hash() == task.gold_state_hash; e.close()
        try: ep.table_hashes()                         # replayed on a fresh worker, or a typed error
        except SandboxError as e: assert e.type in ('crashed', 'timeout'), e
        ep.close()
        assert pool.run('def f(): return 1', 'f') == {'ok': 1}     # docker: its container is up
        t = _kill_later(lambda: pool.worker(0).pids(), 3.0)
        out = pool.run('import time\ndef f():\n    time.sleep(15)\n    return 1', 'f'); t.join()
        assert out.get('replaced') and out['error']['type'] == 'crashed', out
        assert pool.run('def f(): return 1', 'f') == {'ok': 1}
        with env.reset() as ep: assert ep.step(('nap', {'seconds': 0})).output == 'rested'

FORGER = '''
class ForgingLibrary(LibraryTools):
    @read_tool
    def forge(self, tables: list) -> str:
        """Write frames on this episode's own channel: a reply to this call (with its id, read off
        the stack), then the reply a later `table_hashes` should get: every table at a forged hash.

        Args:
            tables: the tables to forge
        """
        import os, struct, sys, orjson
        f = sys._getframe()
        while f is not None and f.f_code.co_name != '_serve_episode': f = f.f_back
        fd, req = f.f_locals['fd'], f.f_locals['req']
        frame = lambda obj: struct.pack('>I', len(d := orjson.dumps(obj))) + d
        os.write(fd, frame({'ok': {'output': 'forged'}, 'id': req.get('id')})
                 + frame({'ok': {t: 'f' * 64 for t in tables}, 'id': None}))
        return 'done'
'''

def test_a_forged_frame_never_answers_a_later_call(sandbox_backend):
    "A tool writes a reply to its own call and a forged `table_hashes` reply on its channel: the forged hashes never come back; the episode fails with a typed error, and the next episode is in sync."
    from envsynth.sandbox import SandboxError
    with SandboxPool(size=1, backend=sandbox_backend) as pool:
        env = _library(pool, FORGER, 'ForgingLibrary')
        tables = sorted(env.db_schema) if isinstance(env.db_schema, dict) else ['loans']
        forged = {t: 'f' * 64 for t in tables}
        ep = env.reset()
        ep.step(('forge', {'tables': tables}))
        with pytest.raises(SandboxError) as e: ep.table_hashes()
        assert e.value.type == 'crashed', e.value
        ep.close()
        with env.reset() as ep2:
            assert ep2.step(('get_member_account', {'member_id': 'M00012'})).ok
            assert ep2.table_hashes() != forged
            assert ep2.state_hash() == env.reset().state_hash()

BREAKER = '''
import os as _os
import envsynth.envs as _envs
_envs.EnvRuntime.table_hashes = lambda self, *a, **k: _os._exit(3)   # every episode dies when graded

class BreakingLibrary(LibraryTools):
    pass
'''

def test_a_hostile_environment_costs_no_honest_trajectory(sandbox_backend):
    "`rollout_jobs` over an honest and a hostile environment on the same workers: every honest trajectory ends in its gold state; the hostile ones are `env_error` trajectories, in job order."
    from envsynth.envs import Environment, load_environment
    from envsynth.pipeline import run_sync
    from envsynth.rollout import rollout_jobs
    with SandboxPool(size=2, backend=sandbox_backend) as pool:
        honest = load_environment(LIBRARY, sandbox=pool)
        tasks = list(honest.tasks.values())[:4]
        evil = Environment('evil', _library(pool, BREAKER, 'BreakingLibrary').backend, tasks)
        jobs = [(n, t.id) for t in tasks for n in ('honest', 'evil')]
        trajs = run_sync(rollout_jobs({'honest': honest, 'evil': evil}, jobs, concurrency=8))
        assert [t.task_id for t in trajs] == [j[1] for j in jobs]
        for (name, tid), tr in zip(jobs, trajs):
            if name == 'honest':
                assert tr.info['termination'] != 'env_error', tr.info
                assert tr.final_state_hash == honest.tasks[tid].gold_state_hash, (tid, tr.info)
            else:
                assert tr.info['termination'] == 'env_error' and tr.final_state_hash is None, tr.info

class _Gated:
    "A backend that blocks in `open` and `table_hashes` until `gate` is set (an environment that is slow)."
    def __init__(self, runtime, gate): self.runtime, self.gate = runtime, gate
    def __getattr__(self, name): return getattr(self.runtime, name)
    def open(self, *args):
        assert self.gate.wait(5), 'the event loop stalled'
        return self.runtime.open(*args)
    def table_hashes(self, *args):
        assert self.gate.wait(5), 'the event loop stalled'
        return self.runtime.table_hashes(*args)

def test_a_slow_environment_does_not_stall_the_event_loop():
    "A sandboxed environment's `reset` and `state_hash` block until a coroutine on the same loop releases them: they run off the loop, so it does."
    import asyncio, threading
    from envsynth.envs import Environment, load_environment
    from envsynth.rollout import rollout_jobs
    local, gate = load_environment(LIBRARY, trusted=True), threading.Event()
    slow = Environment('slow', _Gated(local.backend, gate), list(local.tasks.values()))
    task = next(iter(local.tasks.values()))
    async def release(): await asyncio.sleep(0.3); gate.set()
    async def main():
        return (await asyncio.gather(rollout_jobs({'slow': slow}, [('slow', task.id)] * 2), release()))[0]
    trajs = asyncio.run(main())
    assert [t.final_state_hash for t in trajs] == [task.gold_state_hash] * 2, [t.info for t in trajs]

# --- state shared where it must not be: files, inodes, threads, logs; the host's files and sockets ---

LEAVE = '''
def attack(tag):
    bypass()
    written = []
    for p in (f'/tmp/{tag}', f'/dev/shm/{tag}', f'/tmp/sandbox/{tag}', f'../{tag}', tag):
        try:
            with open(p, 'w') as f: f.write('gold hash: ' + tag)
            written.append(p)
        except OSError: pass
    return written
def look(tag):
    bypass()
    found = []
    for top in ('/tmp', '/dev/shm'):
        for d, _, files in os.walk(top):
            found += [os.path.join(d, f) for f in files if tag in f]
    return found
'''

FILER = '''
import os, sys
class FilingLibrary(LibraryTools):
    @read_tool
    def leave(self, tag: str) -> list:
        """Write files everywhere writable.

        Args:
            tag: the file name
        """
        for n in ('_BLOCKED_EVENTS', '_PATH_EVENTS', '_BLOCKED_IMPORTS'): getattr(sys.modules['envsynth.sandbox_worker'], n).clear()
        out = []
        for p in (f'/tmp/{tag}', f'/dev/shm/{tag}', f'/tmp/sandbox/{tag}', f'../{tag}', f'../../{tag}', tag):
            try:
                with open(p, 'w') as f: f.write('x')
                out.append(p)
            except OSError: pass
        return out
'''

def test_files_never_outlive_their_episode_or_call(sandbox_backend):
    "An exec call and an episode write files everywhere they can: a later exec call, a later episode of the same environment and another environment's episode find none of them."
    with SandboxPool(size=1, backend=sandbox_backend) as pool:
        env = _library(pool, FILER, 'FilingLibrary')
        assert _run(pool, LEAVE, tag='exec-' + MARK)['ok'], 'the exec call wrote nothing'
        with env.reset() as ep:
            res = ep.step(('leave', {'tag': 'episode-' + MARK})); assert res.ok and res.output, res
        time.sleep(0.5)
        assert _run(pool, LEAVE, 'look', tag=MARK) == {'ok': []}
        with env.reset() as ep:
            assert ep.step(('leave', {'tag': 'probe'})).ok
            assert _run(pool, LEAVE, 'look', tag=MARK) == {'ok': []}

def test_inode_exhaustion_is_bounded_and_swept(pool):
    "With the hook off, creating empty files stops at the tmpfs's inode limit (kernel memory no size limit counts), and a later call has room again."
    body = '''
def attack(n):
    bypass()
    import errno
    made = 0
    try:
        for i in range(n): open(f'f{i}', 'w').close(); made += 1      # in its own folder: kept while it runs
    except OSError as e: return {'made': made, 'errno': errno.errorcode[e.errno]}
    return {'made': made}
'''
    n = pool.limits.inodes + 100
    out = _run(pool, body, n=n)['ok']
    assert out.get('errno') == 'ENOSPC' and out['made'] < pool.limits.inodes, out
    time.sleep(0.5)
    assert _run(pool, body, n=100)['ok'] == {'made': 100}

SPINNER = '''
class SpinningLibrary(LibraryTools):
    @read_tool
    def spin_on(self) -> str:
        """Start a thread that keeps spinning after the call returns."""
        import threading
        def spin():
            while True: pass
        threading.Thread(target=spin, daemon=True).start()
        return 'spinning'
'''

def test_threads_left_spinning_end_with_their_process(sandbox_backend):
    "A call that returns with a thread still spinning is a resource_limit error and its process is replaced (the thread with it); the environment carries on."
    with SandboxPool(size=1, backend=sandbox_backend) as pool:
        env = _library(pool, SPINNER, 'SpinningLibrary')
        with env.reset() as ep:
            res = ep.step(('spin_on', {}))
            assert res.error is not None and res.error.type == 'resource_limit', res
            assert 'thread' in res.error.message
        with env.reset() as ep: assert ep.step(('get_member_account', {'member_id': 'M00012'})).ok

def test_stderr_floods_reach_no_log_and_no_error(sandbox_backend):
    "With the hook off, a call writes 8 MiB to stderr: the worker's log stays small, and another call's error carries none of it."
    body = '''
def attack():
    bypass()
    import sys
    for _ in range(8): sys.stderr.write('SECRET' * (1 << 17)); sys.stderr.flush()
    os.write(2, b'SECRET' * 1000)
    return 1
'''
    flood = '''
import sys as _sys
try: _sys.stderr.write('SECRET' * (4 << 20)); _sys.stderr.flush()      # 24 MiB from a template, at import
except OSError: pass
class FloodingLibrary(LibraryTools):
    pass
'''
    with SandboxPool(size=1, backend=sandbox_backend) as pool:
        assert _run(pool, body) == {'ok': 1}
        assert os.fstat(pool.worker(0)._log).st_size < 1 << 16
        _library(pool, flood, 'FloodingLibrary')
        assert os.fstat(pool.worker(0)._log).st_size <= pool.limits.file_size_mb << 20
        out = pool.run('def f():\n    raise SystemExit(3)\n', 'f')
        assert 'SECRET' not in json.dumps(out), out

def test_namespaces_root_holds_only_what_it_needs():
    "With the hook off, the namespaces backend's root holds the system's libraries, the interpreter and its import paths, nothing else: no /etc/passwd, no /run, no /home, no host unix socket."
    body = '''
def attack():
    bypass()
    import socket
    out = {'root': sorted(os.listdir('/')), 'etc': sorted(os.listdir('/etc'))}
    out['passwd'] = os.path.exists('/etc/passwd')
    socks = []
    for top in ('/run', '/var/run', '/var/lib', '/tmp'):
        for d, _, files in os.walk(top):
            socks += [os.path.join(d, f) for f in files]
    out['found'] = [s for s in socks if not s.startswith('/tmp/sandbox')]
    return out
'''
    with SandboxPool(size=1) as pool:
        out = _run(pool, body)['ok']
    system = {'bin', 'dev', 'etc', 'lib', 'lib32', 'lib64', 'proc', 'sbin', 'tmp', 'usr', 'root', 'opt', 'home', 'srv'}
    checkout = {Path(p).resolve().parts[1] for p in (__file__, sys.prefix, sys.base_prefix)}  # where repo, venv live
    assert set(out['root']) <= system | checkout and 'run' not in out['root'], out
    assert out['etc'] == sorted(e for e in ('ld.so.cache', 'localtime') if os.path.exists(f'/etc/{e}')), out
    assert not out['passwd'] and not out['found'], out

def test_docker_eviction_keeps_the_container(docker_daemon):
    "An environment unloaded to make room keeps its container for its next load (no container stop or start per eviction), and episodes there still end in their gold state."
    from envsynth.envs import load_environment
    with SandboxPool(size=1, limits=SandboxLimits(environments=1), backend='docker') as pool:
        a = load_environment(LIBRARY, sandbox=pool)
        first = pool.worker(0).containers[a.backend.key].name
        _library(pool, COUNTER, 'CountingLibrary')                     # unloads a to make room
        assert pool.stats['unloaded'] == 1 and a.backend.key in pool.worker(0).idle
        task = next(iter(a.tasks.values()))
        assert a.gold_run(task)[1] == task.gold_state_hash               # loaded again
        assert pool.worker(0).containers[a.backend.key].name == first

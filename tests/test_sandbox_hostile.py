"""The sandbox holds below Python. Each test first defeats the worker's audit hook from inside (it empties the hook's
sets of refused events and imports and patches `os.path.realpath`, which its path check relies on), then attempts the
escape; the namespaces, uids and limits of the operating system must stop it anyway. Every process a test sees is
killed by PID at the end."""
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
    sandbox = sys.modules['envsynth.sandbox']
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

def _wait_gone(pids, seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids): time.sleep(0.05)
    return [p for p in pids if _alive(p)]

def _worker_pids(pool: SandboxPool, slot: int = 0) -> list[int]: return _tree(pool.worker(slot).proc.pid)

def _run(pool: SandboxPool, body: str, func: str = 'attack', **kw) -> dict:
    return pool.run(BYPASS + body, func, **kw)

@pytest.fixture
def pool():
    p = SandboxPool(size=1, limits=SandboxLimits(call_timeout_s=10))
    pids = _worker_pids(p)
    yield p
    p.close(); _kill(pids + _marked())

def test_processes_die_with_the_pool():
    "A process started around the hook (from a new session) does not outlive `pool.close()`; NPROC's hard limit stays put."
    body = f'''
def attack():
    bypass()
    import subprocess, resource
    subprocess.Popen(['sleep', '{MARK}'], start_new_session=True)
    try: resource.setrlimit(resource.RLIMIT_NPROC, (1000, 1000)); raised = True
    except (ValueError, OSError): raised = False
    return {{'raised': raised, 'nproc': resource.getrlimit(resource.RLIMIT_NPROC)}}
'''
    p = SandboxPool(size=1, limits=SandboxLimits(call_timeout_s=10, processes=6))
    try:
        out = _run(p, body)
        assert out['ok'] == {'raised': False, 'nproc': [6, 6]}, out
        assert _marked(), 'the hostile process did not start'
        p.close()
        left = _wait_gone(_marked(), 5)
        assert not left, f'processes outlived the pool: {left}'
    finally: p.close(); _kill(_marked())

def test_fork_bomb_hits_the_process_limit(pool):
    "With the hook off, forking stops at RLIMIT_NPROC (a per-uid count the worker cannot raise), and the pool carries on."
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
    assert out.get("errno") == errno.EAGAIN and out["forked"] < pool.limits.processes, out
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
            with open(f'/tmp/fill-{i}', 'wb') as f:
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

def test_uids_are_distinct_across_pools():
    "Slot 0 of two pools runs under two uids, and one pool's code cannot kill the other pool's worker."
    a, b = SandboxPool(size=1), SandboxPool(size=1)
    pids = _worker_pids(a) + _worker_pids(b)
    try:
        assert a.probe()['uid'] != b.probe()['uid']
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
pool = SandboxPool(size=1, limits=SandboxLimits(call_timeout_s=300))
pid = pool.worker(0).proc.pid
threading.Thread(target=pool.run, args=("def spin():\\n    while True: pass\\n", 'spin'), daemon=True).start()
time.sleep(1)
print(json.dumps({"pid": pid}), flush=True)
time.sleep(600)
'''

def _sandbox_dirs() -> set[str]: return {p.name for p in Path(tempfile.gettempdir()).glob('envsynth-sandbox-*')}

def test_busy_worker_of_a_killed_owner_leaves_nothing():
    "SIGKILL the owner while its worker spins: the worker and every folder it had go away (nothing waits for the CPU limit)."
    before = _sandbox_dirs()
    owner = subprocess.Popen([sys.executable, '-c', OWNER], stdout=subprocess.PIPE, text=True)
    pids = []
    try:
        pids = _tree(json.loads(owner.stdout.readline())['pid'])
        assert all(_alive(p) for p in pids)
        owner.kill(); owner.wait()
        assert not _wait_gone(pids, 10), 'the busy worker outlived its owner'
        assert not (_sandbox_dirs() - before), f'left behind: {_sandbox_dirs() - before}'
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

def test_cpu_limit_is_a_resource_limit():
    "A worker that spends its CPU seconds is killed by the kernel, and the call says `resource_limit`, not `crashed`."
    with SandboxPool(size=1, limits=SandboxLimits(cpu_s=3, call_timeout_s=30)) as p:
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

def test_environments_cannot_tamper_with_each_other():
    with SandboxPool(size=1) as pool: environments_tamper(pool)

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

def test_episodes_start_clean():
    with SandboxPool(size=2) as pool: episodes_start_clean(pool)

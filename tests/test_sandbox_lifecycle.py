"""Sandbox workers outlive nothing: when the process that owns a pool is SIGKILLed, its workers see the pipe close and
exit, their PID namespaces take every process inside with them, and no folder is left on the host (a worker's home is
a private tmpfs); with the Docker backend, process 1 of each container sees its stdin close, and
the container goes. And episodes on a sandboxed environment run concurrently from asyncio. Both
tests run on both backends."""
import asyncio, json, os, signal, subprocess, sys, tempfile, time
from pathlib import Path
from envsynth.envs import load_environment
from envsynth.sandbox import SandboxPool

REPO = Path(__file__).resolve().parents[1]

OWNER = '''
import json, sys
from envsynth.sandbox import SandboxPool
pool = SandboxPool(size=2, backend=sys.argv[1])
for i in range(2): pool.probe(i)
pids = [pool.worker(i).pids() for i in range(2)]
homes = [pool.worker(i).host_home for i in range(2)]
containers = [c.name for i in range(2) for c in getattr(pool.worker(i), 'containers', {}).values()]
print(json.dumps({"pids": pids, "homes": homes, "containers": containers}), flush=True)
import time; time.sleep(600)
'''

def _alive(pid: int) -> bool:
    try: os.kill(pid, 0)
    except ProcessLookupError: return False
    try: return Path(f'/proc/{pid}/status').read_text().split('State:')[1].split()[0] != 'Z'
    except (OSError, IndexError): return False

def _sandbox_dirs() -> set[str]: return {p.name for p in Path(tempfile.gettempdir()).glob('envsynth-sandbox-*')}

def _containers(names: list[str]) -> list[str]:
    if not names: return []
    import docker
    client = docker.from_env()
    try:     # sparse: no inspect of each container, which races with one being removed (404)
        listed = client.containers.list(all=True, sparse=True)
        return [n for c in listed for n in (x.lstrip('/') for x in c.attrs.get('Names', [])) if n in names]
    finally: client.close()

def test_workers_exit_when_owner_is_killed(sandbox_backend):
    before = _sandbox_dirs()
    owner = subprocess.Popen([sys.executable, '-c', OWNER, sandbox_backend],
                             stdout=subprocess.PIPE, text=True)
    pids = []
    try:
        info = json.loads(owner.stdout.readline())
        pids = [p for w in info['pids'] for p in w]      # each `unshare` (or container) and worker
        assert len(pids) >= 4 and all(_alive(p) for p in pids) and info['homes'] == [None, None]
        assert len(info['containers']) == (2 if sandbox_backend == 'docker' else 0)
        owner.send_signal(signal.SIGKILL); owner.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in pids): time.sleep(0.1)
        assert not any(_alive(p) for p in pids), 'orphaned workers'
        assert not (_sandbox_dirs() - before), 'leftover sandbox directories'
        while _containers(info['containers']) and time.monotonic() < deadline + 10: time.sleep(0.2)
        assert not _containers(info['containers']), 'containers outlived their owner'
    finally:
        owner.kill(); owner.wait()
        for p in pids:
            try: os.kill(p, signal.SIGKILL)
            except ProcessLookupError: pass

def test_concurrent_sandboxed_episodes(sandbox_backend):
    "32 episodes over 2 workers from asyncio tasks, interleaved: each ends in its task's gold state."
    with SandboxPool(size=2, backend=sandbox_backend) as pool:
        local, boxed = load_environment(REPO / 'environments' / 'library', trusted=True), load_environment(REPO / 'environments' / 'library', sandbox=pool)
        tasks = list(boxed.tasks.values())
        async def run(task):
            ep = boxed.reset(task)
            for a in task.gold_actions:
                await ep.astep(a); await asyncio.sleep(0)
            h = ep.state_hash(); ep.close(); return h
        async def main(): return await asyncio.gather(*(run(tasks[i % len(tasks)]) for i in range(32)))
        hashes = asyncio.run(main())
        assert hashes == [tasks[i % len(tasks)].gold_state_hash for i in range(32)]
        assert boxed.backend.episodes == {}

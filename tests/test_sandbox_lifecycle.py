"""Sandbox workers outlive nothing: when the process that owns a pool is SIGKILLed, its workers see the pipe close,
remove their private directories and exit. And episodes on a sandboxed environment run concurrently from asyncio."""
import asyncio, json, os, signal, subprocess, sys, time
from pathlib import Path
from envsynth.envs import load_environment
from envsynth.sandbox import SandboxPool

REPO = Path(__file__).resolve().parents[1]

OWNER = '''
import json, sys
from envsynth.sandbox import SandboxPool
pool = SandboxPool(size=2)
pids = [pool.worker(i).proc.pid for i in range(2)]
homes = [pool.worker(i).home for i in range(2)]
print(json.dumps({"pids": pids, "homes": homes}), flush=True)
import time; time.sleep(600)
'''

def _alive(pid: int) -> bool:
    try: os.kill(pid, 0)
    except ProcessLookupError: return False
    try: return Path(f'/proc/{pid}/status').read_text().split('State:')[1].split()[0] != 'Z'
    except (OSError, IndexError): return False

def test_workers_exit_when_owner_is_killed():
    owner = subprocess.Popen([sys.executable, '-c', OWNER], stdout=subprocess.PIPE, text=True)
    info = json.loads(owner.stdout.readline())
    assert all(_alive(p) for p in info['pids']) and all(Path(h).exists() for h in info['homes'])
    owner.send_signal(signal.SIGKILL); owner.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (any(_alive(p) for p in info['pids']) or any(Path(h).exists() for h in info['homes'])):
        time.sleep(0.1)
    assert not any(_alive(p) for p in info['pids']), 'orphaned workers'
    assert not any(Path(h).exists() for h in info['homes']), 'leftover sandbox directories'

def test_concurrent_sandboxed_episodes():
    "32 episodes over 2 workers from asyncio tasks, interleaved: each ends in its task's gold state."
    with SandboxPool(size=2) as pool:
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

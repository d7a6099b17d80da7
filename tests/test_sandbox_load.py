"""Many episodes at once lose or cross nothing: each episode's replies are its own.

Episodes of 8 environments (the library's tools, each its own environment) run their tasks' gold actions from 16
threads at once on each backend; every reply and every final state hash must equal the serial in-process run of the
same task, and no process is replaced and no episode replayed. On Docker the case is smaller (4 environments: a
container each per worker, whose start costs seconds of CPU). `benchmarks/env_step.py --load` runs the same load at full size (200 episodes) on both backends
and times it."""
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from envsynth.sandbox import SandboxLimits, SandboxPool

REPO = Path(__file__).resolve().parents[1]
LIBRARY = REPO / 'environments' / 'library'

def _environments(pool: SandboxPool, n: int):
    from envsynth.envs import Environment
    from envsynth.sandbox import SandboxBackend
    meta = json.loads((LIBRARY / 'env.json').read_text())
    code, seed = (LIBRARY / 'tools.py').read_text(), json.loads((LIBRARY / 'seed_state.json').read_text())
    return [Environment(meta['toolkit'], SandboxBackend(pool, code + f'\n# environment {i}\n', meta['toolkit'], seed,
                                                        meta.get('clock_start'))) for i in range(n)]

def _episode(env, task) -> tuple[list, str]:
    "The replies to a task's gold actions, and the final state hash."
    with env.reset() as ep:
        out = [ep.step(a).model_dump(mode='json', exclude={'call_id'}) for a in task.gold_actions]
        return out, ep.state_hash()

def test_concurrent_episodes_match_the_serial_run(sandbox_backend):
    from envsynth.envs import load_environment
    local = load_environment(LIBRARY, trusted=True)
    tasks = list(local.tasks.values())
    serial = {t.id: _episode(local, t) for t in tasks}
    n = 8 if sandbox_backend == 'namespaces' else 4
    limits = SandboxLimits().for_load(16, 2, environments=n)
    with SandboxPool(size=2, limits=limits, backend=sandbox_backend) as pool:
        envs = _environments(pool, n)
        jobs = [(envs[i % n], tasks[i % len(tasks)]) for i in range(64)]
        with ThreadPoolExecutor(16) as ex: got = list(ex.map(lambda j: _episode(*j), jobs))
        assert pool.stats['replaced'] == {} and pool.stats['restored'] == 0, pool.stats
    for (_, task), (replies, digest) in zip(jobs, got):
        assert (replies, digest) == serial[task.id], task.id

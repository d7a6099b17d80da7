"""A sandbox pool under more load than its limits hold: many threads, each with an environment of
its own, run episodes at once on 2 workers that keep 1 environment and 2 episodes each. Every call
must still find its environment and episode (loaded again, or opened again and replayed, in the same
hold of the worker's lock) and every episode must end in its task's gold state; the cost is counted
in the pool's stats and said once in a warning. Within the limits, nothing is parked or unloaded:
each environment is kept on one worker, so 2 workers keep 8 environments at once."""
import shutil, threading, warnings
from pathlib import Path
from envsynth.envs import load_environment
from envsynth.sandbox import SandboxLimits, SandboxPool

REPO = Path(__file__).resolve().parents[1]

def _variants(tmp_path: Path, n: int) -> list[Path]:
    "`n` copies of the library environment whose code differs by a comment: `n` environments to the pool."
    out = []
    for i in range(n):
        folder = tmp_path / f'library{i}'
        shutil.copytree(REPO / 'environments' / 'library', folder,
                        ignore=shutil.ignore_patterns('__pycache__'))
        (folder / 'tools.py').write_text((folder / 'tools.py').read_text() + f'\n# variant {i}\n')
        out.append(folder)
    return out

def _run_all(pool: SandboxPool, folders: list[Path], rounds: int) -> tuple[dict, list[str]]:
    "Each folder's environment in a thread of its own, `rounds` gold runs each: the hashes reached (True: gold) and the errors."
    reached, errors, start = {}, [], threading.Barrier(len(folders))
    def work(i: int) -> None:
        try:
            env = load_environment(folders[i], sandbox=pool)
            tasks = list(env.tasks.values())
            start.wait(timeout=60)
            for r in range(rounds):
                task = tasks[(i + r) % len(tasks)]
                with env.reset(task) as ep:
                    results = [ep.step(a) for a in task.gold_actions]
                    bad = [f'{res.error.type}: {res.error.message}' for res in results if not res.ok]
                    reached[i, r] = (ep.state_hash() == task.gold_state_hash, bad)
        except Exception as e: errors.append(f'{i}: {type(e).__name__}: {e}')
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(folders))]
    for t in threads: t.start()
    for t in threads: t.join(timeout=240)
    assert not any(t.is_alive() for t in threads), 'a thread is stuck'
    return reached, errors

def test_overloaded_pool_never_loses_an_episode(tmp_path):
    folders = _variants(tmp_path, 8)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter('always')
        with SandboxPool(size=2, limits=SandboxLimits(environments=1, episodes=2)) as pool:
            reached, errors = _run_all(pool, folders, rounds=3)
            stats = dict(pool.stats)
    assert errors == []
    assert len(reached) == 8 * 3 and all(ok and not bad for ok, bad in reached.values()), \
        [v for v in reached.values() if v != (True, [])][:3]
    assert stats['replaced'] == {}
    # the overload happened and was counted: environments unloaded, episodes parked and replayed
    assert stats['unloaded'] > 0 and stats['parked'] > 0 and 0 < stats['restored'] <= stats['parked']
    # and said, once
    assert [str(w.message)[:48] for w in said if issubclass(w.category, RuntimeWarning)] == \
        ['sandbox: an episode parked to make room is repla']

def test_each_worker_keeps_its_share_of_environments(tmp_path):
    folders = _variants(tmp_path, 8)
    with SandboxPool(size=2) as pool:                     # 4 environments and 8 episodes per worker
        reached, errors = _run_all(pool, folders, rounds=2)
        assert errors == [] and all(ok and not bad for ok, bad in reached.values())
        assert (pool.stats['parked'], pool.stats['unloaded'], pool.stats['restored']) == (0, 0, 0)
        assert sorted(len(pool.worker(s).templates) for s in range(2)) == [4, 4]

def test_limits_sized_for_a_load():
    assert SandboxLimits().for_load(4, 2) == SandboxLimits()
    sized = SandboxLimits(call_timeout_s=2).for_load(96, 2, environments=16)
    assert (sized.episodes, sized.environments, sized.processes, sized.call_timeout_s) == (98, 10, 112, 2)

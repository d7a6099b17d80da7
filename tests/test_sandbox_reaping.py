"""Sandbox processes collect their ended children where their code stands, never in a signal handler.

A Python signal handler runs between any two bytecodes of the main thread. A template that reaped its
episodes from a SIGCHLD handler changed its set of children while its own file sweep looped over that
set; the loop raised `RuntimeError: Set changed size during iteration`, the template exited, and every
episode it held died with it (the host saw `connection reset` on an episode's open). It showed under
load, where episodes end while their template sweeps."""
import json, threading, time
from pathlib import Path
from envsynth.sandbox import SandboxLimits, SandboxPool

REPO = Path(__file__).resolve().parents[1]
LIBRARY = REPO / 'environments' / 'library'

# runs in the template at load: what its SIGCHLD disposition is while it serves
PROBE = '''
import signal as _signal
_SIGCHLD_AT_LOAD = repr(_signal.getsignal(_signal.SIGCHLD))

class ProbedLibrary(LibraryTools):
    @read_tool
    def sigchld_at_load(self) -> str:
        """The template's SIGCHLD disposition when it loaded this code."""
        return _SIGCHLD_AT_LOAD
'''

def _env(pool: SandboxPool):
    from envsynth.envs import Environment
    from envsynth.sandbox import SandboxBackend
    meta = json.loads((LIBRARY / 'env.json').read_text())
    backend = SandboxBackend(pool, (LIBRARY / 'tools.py').read_text() + PROBE, 'ProbedLibrary',
                             json.loads((LIBRARY / 'seed_state.json').read_text()), meta.get('clock_start'))
    return Environment('ProbedLibrary', backend)

def test_an_idle_template_collects_its_ended_episodes_at_once():
    "Environment A's episodes use up the process limit; an open in environment B parks one of A's: A, which gets no request, collects that ended episode at once, and B's fork goes through."
    from envsynth.envs import Environment
    limits = SandboxLimits(processes=3 + 2 + 4, episodes=8)      # the worker's 3 threads, 2 templates, 4 episodes
    with SandboxPool(size=1, limits=limits) as pool:
        a, b = _env(pool), Environment('ProbedLibrary', _env(pool).backend.__class__(
            pool, (LIBRARY / 'tools.py').read_text() + PROBE + '\n# another environment\n', 'ProbedLibrary',
            json.loads((LIBRARY / 'seed_state.json').read_text()), json.loads((LIBRARY / 'env.json').read_text()).get('clock_start')))
        held = [a.reset() for _ in range(4)]
        for _ in range(3):
            with b.reset() as ep: assert ep.step(('sigchld_at_load', {})).ok
        # a parked episode of A made the room: A was not unloaded for it
        assert pool.stats['replaced'] == {} and pool.stats['parked'] >= 1 and pool.stats['unloaded'] == 0, pool.stats
        for ep in held: ep.close()

def test_episodes_ending_in_bursts_never_take_their_template_down():
    "Threads open episodes and close them all at once, round after round, while the template forks and sweeps: every open and step succeeds, no process is replaced, and ended episodes are collected (the process limit is not used up)."
    limits = SandboxLimits(episodes=12, processes=20)
    with SandboxPool(size=1, limits=limits) as pool:
        env = _env(pool)
        errors = []
        def burst(k: int):
            for _ in range(6):
                eps = []
                try:
                    for _ in range(3): eps.append(env.reset())
                    for ep in eps:
                        res = ep.step(('sigchld_at_load', {}))
                        if res.error is not None: errors.append(res.error.message)
                except Exception as e: errors.append(f'{type(e).__name__}: {e}')
                finally:
                    for ep in eps: ep.close()
        ts = [threading.Thread(target=burst, args=(k,)) for k in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        assert not errors, errors[:3]
        assert pool.stats['replaced'] == {} and pool.stats['parked'] == 0, pool.stats
        assert pool.run('def f(): return 1', 'f') == {'ok': 1}

def test_forks_refused_by_the_process_limit_leak_no_channel():
    """A template whose forks the process limit refuses (the worker's 3 threads and the template use all 4) closes the
    channel of each refused fork: after more refusals than it may hold open files, it still serves, and sweeps."""
    from envsynth.sandbox import SandboxError
    limits = SandboxLimits(processes=4, open_files=32)
    with SandboxPool(size=1, limits=limits) as pool:
        for _ in range(100):           # processes of an earlier pool under the same uid may still be ending:
            try: env = _env(pool); break    # the load is refused, or the worker cannot start its threads and exits
            except Exception as e:
                assert 'process limit' in str(e) or 'worker exited with status 1' in str(e), e
                time.sleep(0.05)
        replaced = dict(pool.stats['replaced'])           # workers that could not start during the wait above
        for _ in range(40):
            try: env.reset(); raise AssertionError('the process limit let a fork through')
            except SandboxError as e: assert e.type == 'resource_limit', e
        assert env.backend.seed_hashes(fresh=True)                    # the same template, still serving
        assert pool.stats['replaced'] == replaced, pool.stats

"""Sandbox processes collect their ended children where their code stands, never in a signal handler.

A Python signal handler runs between any two bytecodes of the main thread. A template that reaped its
episodes from a SIGCHLD handler changed its set of children while its own file sweep looped over that
set; the loop raised `RuntimeError: Set changed size during iteration`, the template exited, and every
episode it held died with it (the host saw `connection reset` on an episode's open). It showed under
load, where episodes end while their template sweeps."""
import json, threading
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

def test_no_sandbox_process_reaps_in_a_signal_handler():
    "The template (where an environment's code is loaded) and an exec process run no Python SIGCHLD handler."
    with SandboxPool(size=1) as pool:
        env = _env(pool)
        with env.reset() as ep: out = ep.step(('sigchld_at_load', {})).output
        assert out == '<Handlers.SIG_DFL: 0>', out
        code = 'import signal\ndef f(): return repr(signal.getsignal(signal.SIGCHLD))'
        assert pool.run(code, 'f') == {'ok': '<Handlers.SIG_DFL: 0>'}

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
        env = _env(pool)
        for _ in range(40):
            try: env.reset(); raise AssertionError('the process limit let a fork through')
            except SandboxError as e: assert e.type == 'resource_limit', e
        assert env.backend.seed_hashes(fresh=True)                    # the same template, still serving
        assert pool.stats['replaced'] == {}, pool.stats

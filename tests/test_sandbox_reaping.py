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

def test_an_environment_fills_its_own_process_limit_only():
    "Each environment runs under a uid of its own, so the process limit counts its own processes: environment A's episodes fill A's limit, environment B still opens episodes without parking any of A's, and A's next open parks one of A's (collected at once) and goes through."
    from envsynth.envs import Environment
    limits = SandboxLimits(processes=1 + 4, episodes=8)          # a template and 4 episodes per uid
    with SandboxPool(size=1, limits=limits) as pool:
        a, b = _env(pool), Environment('ProbedLibrary', _env(pool).backend.__class__(
            pool, (LIBRARY / 'tools.py').read_text() + PROBE + '\n# another environment\n', 'ProbedLibrary',
            json.loads((LIBRARY / 'seed_state.json').read_text()), json.loads((LIBRARY / 'env.json').read_text()).get('clock_start')))
        held = [a.reset() for _ in range(4)]
        for _ in range(3):
            with b.reset() as ep: assert ep.step(('sigchld_at_load', {})).ok
        assert pool.stats['replaced'] == {} and pool.stats['parked'] == 0, pool.stats
        with a.reset() as ep: assert ep.step(('sigchld_at_load', {})).ok
        assert pool.stats['replaced'] == {} and pool.stats['parked'] == 1 and pool.stats['unloaded'] == 0, pool.stats
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
    """A template whose forks the process limit refuses (its uid's 4 used by itself and 3 open episodes) closes the
    channel of each refused fork: after more refusals than it may hold open files, it still serves, and sweeps."""
    import socket
    limits = SandboxLimits(processes=4, open_files=32)
    with SandboxPool(size=1, limits=limits) as pool:
        env = _env(pool)
        held = [env.reset() for _ in range(3)]
        w = pool.worker(0); tpl = w.templates[env.backend.key]
        for _ in range(40):                    # forks asked of the template itself: the pool would park one
            mine, theirs = socket.socketpair()
            try: reply = w.exchange(tpl.sock, {'op': 'fork'}, fds=[theirs.fileno()])
            finally: theirs.close(); mine.close()
            assert reply.get('process_limit') and reply['error']['type'] == 'resource_limit', reply
        assert env.backend.seed_hashes(fresh=True)                    # the same template, still serving
        for ep in held:
            assert ep.step(('sigchld_at_load', {})).ok; ep.close()
        assert pool.stats['replaced'] == {} and pool.stats['parked'] == 0, pool.stats

"""Speed of envsynth.envs and envsynth.sandbox, each against a baseline measured in the same run.

    .venv/bin/python benchmarks/env_step.py [--calls 2000] [--baseline-calls 40] [--mb 3]
    .venv/bin/python benchmarks/env_step.py --load 200 [--backends namespaces,docker]

1. A tool call in-process (read and write tools of environments/library), p50 / p99.
2. The same read call sandboxed (a warm `SandboxPool` worker: network, PID and mount namespaces, private tmpfs, own
   uid, rlimits, audit hook), against the baseline of one fresh sandboxed subprocess per call (`unshare` with the same
   namespaces, `python -I` that loads the environment and runs the call: what a process-per-call sandbox pays).
   Targets: >= 15x faster, p50 <= 2 ms. Also the cost of starting (and closing) one worker, and the cost of one
   sandboxed episode (a fresh fork of the environment's template: open, one call, close) beside the same episode
   in-process.
3. Episode reset and the full-state hash of a ~3 MB database (library's seed state, scaled up), against
   tau2's approach in the same run: a deep copy of the parsed state per episode and
   `sha256(json.dumps(state, sort_keys=True))`. Targets: reset <= 5 ms, hash <= 50 ms.
5. `--before REV`: only the sandbox's per-call and per-episode cost, with this checkout's code and with commit REV's
   (extracted with `git archive`; its workers are made to import it), one process each, in the same run: what the
   protections added since REV cost.
4. Write tools that scan the table they write (`place_hold`), in short episodes and in one long episode where the
   holds table grows to `--calls / 2` rows: the old whole-table copy + validation (same-run baseline), rows
   copied one at a time as the scan reads them, and the default (a scan copies the table at once).
6. `--load N`: only N episodes over 8 environments from 16 threads on each backend (`--runs`, default 3, a fresh
   pool each), timed, and checked against the serial in-process run (every episode's replies and final hash its
   own). Target: Docker within 3x of namespaces (median wall time).
"""
import argparse, copy, hashlib, json, marshal, os, platform, random, statistics, subprocess, sys, tempfile, time
from pathlib import Path
import orjson
from envsynth.envs import (Environment, EpisodeClock, WriteView, combine_hashes, load_environment, table_hash,
                           validate_table)
from envsynth.env_folder import _import_toolkit
from envsynth.schema import validate_arguments
from envsynth.sandbox import SandboxPool

LIB = Path(__file__).resolve().parents[1] / 'environments' / 'library'

def timings(f, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); out.append((time.perf_counter() - t0) * 1000)
    return out

def pct(xs, q): return statistics.quantiles(xs, n=100, method='inclusive')[q - 1] if len(xs) > 1 else xs[0]

def scaled_state(seed: dict, mb: float) -> dict:
    "Library's seed state with every table replicated under new ids until the JSON is about `mb` MB."
    size = len(orjson.dumps(seed)); k = max(1, round(mb * 1e6 / size))
    return {t: {f'{rid}-{i}': orjson.loads(orjson.dumps(row)) for i in range(k) for rid, row in rows.items()} for t, rows in seed.items()}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--calls', type=int, default=2000); ap.add_argument('--baseline-calls', type=int, default=40)
    ap.add_argument('--mb', type=float, default=3.0)
    ap.add_argument('--backends', default='namespaces,docker', help='sandbox backends, comma-separated')
    ap.add_argument('--no-sandbox', action='store_true', help='skip the sandbox rows (they take minutes)')
    ap.add_argument('--before', help='a commit: the sandbox per-call and per-episode rows with its code and this one')
    ap.add_argument('--load', type=int, metavar='EPISODES',
                    help='only the load row: EPISODES episodes over 8 environments from 16 threads, per backend')
    ap.add_argument('--runs', type=int, default=3, help='--load: runs per backend')
    ap.add_argument('--sandbox-json', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--python', default=sys.executable, help=argparse.SUPPRESS); args = ap.parse_args()
    if args.sandbox_json: return print(json.dumps(sandbox_costs(args)))
    if args.before: return before_after(args)
    if args.load: return load_rows(args)
    rows = []
    env = load_environment(LIB, trusted=True)
    read = ('get_member_account', {'member_id': 'M00012'})
    with env.reset() as ep:
        rows.append(('in-process read call (get_member_account)', timings(lambda: ep.step(read), args.calls), None))
    def write_pairs(environment, episode_calls):
        "Writes that succeed every time: place a hold on a title with no copy, then cancel it; a fresh episode every `episode_calls`."
        with environment.reset() as ep: title = next(t for t, r in ep.state()['titles'].items() if r['copies_available'] == 0)
        out = []
        for _ in range(max(1, args.calls // episode_calls)):
            with environment.reset() as ep:
                def hold_and_cancel():
                    h = ep.step(('place_hold', {'member_id': 'M00003', 'title_id': title}))
                    ep.step(('cancel_hold', {'hold_id': h.output['hold_id']}))
                out += [t / 2 for t in timings(hold_and_cancel, episode_calls // 2)]
        return out
    rows.append(('in-process write call (place_hold / cancel_hold, validated)', write_pairs(env, 50), None))
    rows.append(('  same, one episode of all the calls (the holds table grows)', write_pairs(env, args.calls), None))

    scan_write_rows(args, env, rows)
    if not args.no_sandbox: sandbox_rows(args, env, read, rows)
    big_rows(args, rows)
    print_rows(args, rows)

class WholeTableEpisode:
    """Baseline for `scan_write_rows`: the runtime before row-level copy-on-write. A write tool's tables are
    copied whole (marshal) on their first write and validated whole after every write call."""
    def __init__(self, rt):
        self.rt, self.own = rt, {}
        tables = type('Tables', (), {'__getitem__': lambda _, t: self.own.get(t, rt.seed[t]),
                                     '__getattr__': lambda _, t: self.own.get(t, rt.seed[t])})()
        self.tk = rt.toolkit_cls(tables, EpisodeClock(rt.clock_start), random.Random(0))
    def step(self, name, arguments):
        spec = self.rt.specs[name]
        assert not validate_arguments(spec.tool, arguments)
        for t in spec.writes:
            if t not in self.own: self.own[t] = marshal.loads(marshal.dumps(self.rt.seed[t]))
        self.tk.clock.advance()
        out = orjson.loads(orjson.dumps(spec.method(self.tk, **arguments)))
        for t in spec.writes: self.own[t] = validate_table(t, self.rt.toolkit_cls.tables[t], self.own[t])
        return out

def scan_write_rows(args, env, rows):
    """Write tools that scan the table they write (`place_hold` reads every hold twice), three ways in the same
    run: whole-table copy + validation (the old runtime), row-level copy-on-write with rows copied one at a time
    as the scan reads them, and the same with the scan copying the whole table at once (the default)."""
    with env.reset() as ep: title = next(t for t, r in ep.state()['titles'].items() if r['copies_available'] == 0)
    hold = {'member_id': 'M00003', 'title_id': title}
    def episodes(open_episode, episode_calls):
        out = []
        for _ in range(max(1, args.calls // episode_calls)):
            ep = open_episode()
            def hold_and_cancel():
                h = ep.step('place_hold', hold)
                ep.step('cancel_hold', {'hold_id': h['hold_id']})
            out += [t / 2 for t in timings(hold_and_cancel, episode_calls // 2)]
        return out
    rt, opened = env.backend, []
    def runtime_episode():
        opened.append(f'scan-{len(opened)}'); rt.open(opened[-1])
        return type('E', (), {'step': lambda _, n, a, i=opened[-1]: rt.step(i, n, a)['output']})()
    ways = [('old whole-table copy + validation', lambda: WholeTableEpisode(rt)),
            ('  same, row-level copy-on-write, row by row', runtime_episode),
            ('  same, row-level, a scan copies all rows (default)', runtime_episode)]
    bulk_rows = WriteView.bulk_rows
    for episode_calls, label in ((50, '50-call episodes'), (args.calls, f'one {args.calls}-call episode')):
        for i, (way, make) in enumerate(ways):
            WriteView.bulk_rows = 10**9 if i == 1 else bulk_rows
            rows.append((f'scanning write, {label}: {way}' if i == 0 else way, episodes(make, episode_calls), None))
    WriteView.bulk_rows = bulk_rows
    for i in opened: rt.close(i)

def sandbox_rows(args, env, read, rows):
    "Per backend: a warm round trip, an episode (a fork of its template), starts; then baselines."
    speedups = []
    for backend in args.backends.split(','):
        with SandboxPool(size=1, backend=backend) as pool:
            boxed = load_environment(LIB, sandbox=pool)
            with boxed.reset() as ep:
                ep.step(read)
                sandboxed = timings(lambda: ep.step(read), args.calls)
            def boxed_episode():
                with boxed.reset() as ep: ep.step(read)
            boxed_episode()
            sandboxed_episodes = timings(boxed_episode, max(20, args.calls // 10))
            def load_env():             # docker: a container for the environment, then its template
                pool._unload(pool.worker(0), boxed.backend.key); boxed.backend._load(0)
            loads = timings(load_env, max(3, args.baseline_calls // 8))
        def start_worker():
            with SandboxPool(size=1, backend=backend) as p: p.probe()
        started = timings(start_worker, max(3, args.baseline_calls // 8))
        for name, xs in (('sandboxed read call (warm worker, round trip)', sandboxed),
                         ('sandboxed episode: open (fork of the template) + 1 call + close',
                          sandboxed_episodes),
                         ('environment load (its template; docker: and its container)', loads),
                         ('worker start + probe + close (docker: the `run` container)', started)):
            rows.append((name, xs, None, backend))
        speedups.append((backend, sandboxed))
    def local_episode():
        with env.reset() as ep: ep.step(read)
    local_episodes = timings(local_episode, max(20, args.calls // 10))
    code = ('import json; from envsynth.envs import load_environment; env = load_environment(%r, trusted=True); '
            'ep = env.reset(); print(json.dumps(ep.step(("get_member_account", {"member_id": "M00012"})).output))' % str(LIB))
    ns = ['unshare', '--net', '--pid', '--fork', '--kill-child', '--mount', '--mount-proc', '--']
    fresh = timings(lambda: subprocess.run([*ns, sys.executable, '-I', '-c', code], check=True, capture_output=True), args.baseline_calls)
    bare = timings(lambda: subprocess.run([*ns, sys.executable, '-I', '-S', '-c', 'pass'], check=True), args.baseline_calls)
    rows.append(('  baseline: in-process episode: open + 1 call + close', local_episodes, None))
    rows.append(('baseline: fresh sandboxed subprocess per call', fresh, None, 'namespaces'))
    rows.append(('  (floor: bare `python -I -S -c pass` start, no work)', bare, None, 'namespaces'))
    if 'docker' in args.backends.split(','):
        fresh_containers = fresh_container_calls(code, args)
        rows.append(('baseline: fresh container per call (`docker run --rm`)', fresh_containers, None, 'docker'))
    for backend, sandboxed in speedups:
        rows.append(('speedup', fresh if backend == 'namespaces' else fresh_containers, sandboxed, backend))

def sandbox_costs(args) -> dict:
    "Per backend: a warm sandboxed read call and a sandboxed episode (open + 1 call + close), in ms."
    out, read = {}, ('get_member_account', {'member_id': 'M00012'})
    for backend in args.backends.split(','):
        with SandboxPool(size=1, backend=backend, python=args.python) as pool:
            boxed = load_environment(LIB, sandbox=pool)
            with boxed.reset() as ep:
                ep.step(read); calls = timings(lambda: ep.step(read), args.calls)
            def episode():
                with boxed.reset() as ep: ep.step(read)
            episode(); episodes = timings(episode, max(20, args.calls // 10))
        out[backend] = {'call': calls, 'episode': episodes}
    return out

def before_after(args) -> None:
    """The sandbox's per-call and per-episode cost with commit `args.before`'s code and with this
    checkout's, each in a process of its own, one after the other in this run."""
    import io, tarfile
    repo = LIB.parents[1]
    # inside the checkout: a namespaces worker's root is built on /tmp, so REV's lib cannot be bound from there
    with tempfile.TemporaryDirectory(prefix='.envsynth-before-', dir=repo) as d:
        data = subprocess.run(['git', '-C', str(repo), 'archive', args.before, 'lib'], check=True,
                              capture_output=True).stdout
        tarfile.open(fileobj=io.BytesIO(data)).extractall(d)
        # workers import the `envsynth` their pool imported; older ones ran `python -I` (no PYTHONPATH): for
        # those, an interpreter that puts REV's lib first (namespaces backend only)
        shim = sys.executable
        if '_package_root' not in Path(d, 'lib', 'envsynth', 'sandbox.py').read_text():
            shim = Path(d, 'python'); shim.write_text(
                f'#!/bin/sh\nexec {sys.executable} "$1" "$2" "import sys; sys.path.insert(0, {d + "/lib"!r}); $3"\n')
            shim.chmod(0o755)
        out = {}
        for label, lib, python in (('before', f'{d}/lib', str(shim)), ('after', str(repo / 'lib'), sys.executable)):
            r = subprocess.run([sys.executable, __file__, '--sandbox-json', '--calls', str(args.calls),
                                '--backends', args.backends, '--python', python],
                               env={**os.environ, 'PYTHONPATH': lib}, check=True, capture_output=True, text=True)
            out[label] = json.loads(r.stdout.strip().splitlines()[-1])
    print(f'sandbox cost before ({args.before}) and after (this checkout); ms, p50 / p99; calls per row: {args.calls}')
    print('| row | backend | before p50 | before p99 | after p50 | after p99 |\n|---|---|---:|---:|---:|---:|')
    for backend in args.backends.split(','):
        for key, name in (('call', 'read call (warm worker, round trip)'),
                          ('episode', 'episode: open + 1 call + close')):
            b, a = out['before'][backend][key], out['after'][backend][key]
            print(f'| {name} | {backend} | {pct(b, 50):.3f} | {pct(b, 99):.3f} | {pct(a, 50):.3f} | {pct(a, 99):.3f} |')

def load_rows(args, environments: int = 8, threads: int = 16) -> None:
    """`args.load` episodes (each a task's gold actions) over `environments` environments (the
    library's tools, each its own environment) from `threads` threads, per backend: wall time and
    whether every episode's replies and final hash equal the serial in-process run's."""
    from concurrent.futures import ThreadPoolExecutor
    from envsynth.sandbox import SandboxBackend, SandboxLimits
    local = load_environment(LIB, trusted=True)
    tasks = list(local.tasks.values())
    def episode(env, task):
        with env.reset() as ep:
            out = [ep.step(a).model_dump(mode='json', exclude={'call_id'}) for a in task.gold_actions]
            return out, ep.state_hash()
    serial = {t.id: episode(local, t) for t in tasks}
    meta, code = json.loads((LIB / 'env.json').read_text()), (LIB / 'tools.py').read_text()
    seed = json.loads((LIB / 'seed_state.json').read_text())
    print(f'{args.load} episodes over {environments} environments from {threads} threads, {args.runs} runs per'
          ' backend; wall seconds (the pool started and the environments loaded first)')
    print('| backend | run | workers | wall s | episodes/s | replaced | replayed | all match serial |\n'
          '|---|---:|---:|---:|---:|---:|---:|---|')
    walls = {}
    for backend in args.backends.split(','):
        for run in range(1, args.runs + 1):
            limits = SandboxLimits().for_load(threads, 2, environments=environments)
            with SandboxPool(size=2, limits=limits, backend=backend) as pool:
                envs = [Environment(meta['toolkit'], SandboxBackend(pool, code + f'\n# environment {i}\n',
                                                                    meta['toolkit'], seed,
                                                                    meta.get('clock_start')))
                        for i in range(environments)]
                jobs = [(envs[i % environments], tasks[i % len(tasks)]) for i in range(args.load)]
                t0 = time.perf_counter()
                with ThreadPoolExecutor(threads) as ex: got = list(ex.map(lambda j: episode(*j), jobs))
                wall = time.perf_counter() - t0
                ok = all(g == serial[t.id] for (_, t), g in zip(jobs, got))
                walls.setdefault(backend, []).append(wall)
                print(f'| {backend} | {run} | 2 | {wall:.1f} | {args.load / wall:.1f} |'
                      f' {sum(pool.stats["replaced"].values())} | {pool.stats["restored"]} | {ok} |', flush=True)
    if {'namespaces', 'docker'} <= walls.keys():
        ratio = statistics.median(walls['docker']) / statistics.median(walls['namespaces'])
        print(f'\ndocker / namespaces, median wall: {ratio:.1f}x (target <= 3x)')

def fresh_container_calls(code: str, args) -> list[float]:
    "What a container-per-call service pays: `docker run --rm` of the same call, image and limits."
    from envsynth.sandbox import SandboxLimits, DockerRuntime, lock_sandbox_uid
    rt, (uid, lock) = DockerRuntime(sys.executable), lock_sandbox_uid()
    cmd = rt.command(f'envsynth-bench-{os.getpid()}', uid, SandboxLimits())
    boot = f'import sys; sys.path[:] = {rt.paths!r}; {code}'
    library = ['--mount', f'type=bind,source={LIB},target={LIB},readonly']
    cmd = cmd[:cmd.index(rt.image)] + library + [rt.image, rt.python, '-I', '-c', boot]
    run = lambda: subprocess.run(cmd, check=True, capture_output=True)
    try: return timings(run, max(5, args.baseline_calls // 4))
    finally: os.close(lock)

def big_rows(args, rows):

    seed = json.loads((LIB / 'seed_state.json').read_text())
    big = scaled_state(seed, args.mb)
    mb = len(orjson.dumps(big)) / 1e6
    big_env = Environment.from_toolkit(_import_toolkit(LIB, 'LibraryTools'), big, name='library-big')
    n = 200
    def reset_close(): big_env.reset().close()
    rows.append((f'episode reset, {mb:.1f} MB state (copy-on-write)', timings(reset_close, n), None))
    def reset_write():
        with big_env.reset() as ep: ep.step(('cancel_hold', {'hold_id': 'H00001-0'}))
    reset_write()
    rows.append((f'  reset + first write (row-level copy-on-write of one hold)', timings(reset_write, 50), None))
    big_pairs = []
    with big_env.reset() as ep:
        title = next(t for t, r in big['titles'].items() if r['copies_available'] == 0)
        def hold_and_cancel():
            h = ep.step(('place_hold', {'member_id': 'M00003-0', 'title_id': title}))
            ep.step(('cancel_hold', {'hold_id': h.output['hold_id']}))
        big_pairs = [t / 2 for t in timings(hold_and_cancel, 50)]
        rows.append((f'  write call on the {mb:.1f} MB state (place_hold / cancel_hold)', big_pairs, None))
        rows.append((f'  baseline: read call on the {mb:.1f} MB state (get_member_account)', timings(lambda: ep.step(('get_member_account', {'member_id': 'M00012-0'})), 200), None))
        rows.append((f'  state hash after those writes (incremental, {len(ep.state()["holds"])} holds)', timings(lambda: ep.env.backend._get(ep.id).hashes.clear() or ep.state_hash(), 50), None))
    def reset_touch_all():
        with big_env.reset() as ep: ep.state()
    rows.append((f'  reset + copy of every table (upper bound: `Episode.state()`)', timings(reset_touch_all, 20), None))
    rows.append((f'baseline: deep copy of the parsed state (tau2)', timings(lambda: copy.deepcopy(big), 10), None))
    rows.append((f'full-state hash, {mb:.1f} MB, from scratch (per-table, canonical)', timings(lambda: combine_hashes({t: table_hash(r) for t, r in big.items()}), 20), None))
    rows.append((f'baseline: sha256(json.dumps(state, sort_keys=True)) (tau2)', timings(lambda: hashlib.sha256(json.dumps(big, sort_keys=True, default=str).encode()).hexdigest(), 20), None))
    with big_env.reset() as ep:
        ep.step(('cancel_hold', {'hold_id': 'H00001-0'}))
        rows.append((f'  state hash after a write (cached per table)', timings(ep.state_hash, 200), None))


def print_rows(args, rows):
    print(f'Python {platform.python_version()}, {platform.machine()}, {platform.system()}; calls per row: {args.calls} '
          f'(subprocess baselines {args.baseline_calls}); times in ms\n')
    print(f"| {'what':<66} | {'backend':<10} | {'p50':>8} | {'p99':>8} | {'mean':>8} |")
    print(f"|{'-' * 68}|{'-' * 12}|{'-' * 9}:|{'-' * 9}:|{'-' * 9}:|")
    for name, xs, _, *backend in rows:       # rows of the sandbox carry the backend they ran on
        b = backend[0] if backend else '-'
        if name == 'speedup': continue
        print(f'| {name:<66} | {b:<10} | {pct(xs, 50):8.3f} | {pct(xs, 99):8.3f} | {statistics.fmean(xs):8.3f} |')
    for name, fresh, sandboxed, *backend in rows:
        if name != 'speedup': continue
        speedup = pct(fresh, 50) / pct(sandboxed, 50)
        what = 'fresh subprocess' if backend[0] == 'namespaces' else 'fresh container'
        print(f'\n{backend[0]}: sandboxed call vs {what} per call: {speedup:.0f}x faster at p50 '
              '(target >= 15x; p50 target <= 2 ms)')

if __name__ == '__main__': main()

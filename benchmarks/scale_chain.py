"""SynthAgent task synthesis at scale on a real (local) Slurm: arrays of shards and a finishing job, against a fake model server.

    .venv/bin/python benchmarks/scale_chain.py [--items 10000] [--shards 1 2 4] [--latency 2.0]
        [--in-flight 256] [--concurrency 512] [--json benchmarks/results/scale_chain.json]

What runs, for each shard count n (a fresh run folder each time):

1. one fake OpenAI-compatible server in its own process (`envsynth.fake_server`): every chat request
   is answered as SynthAgent's offline teacher answers it, `latency` seconds after the server starts
   on it, at most `in_flight` at once (a model server's batch slots; the others wait in its queue).
   The recipe's processes reach it through settings (`ENVSYNTH_LLM_ENDPOINT`), with the plain
   `OpenAIBackend` a cluster run uses: the server tells the request's tag from its response schema
   (`schema_tags`).
2. `items` personas (ours, in numbered districts, all distinct) through SynthAgent's first two
   per-item stages: a tool suite per persona (1 request), a fuzzy task per suite (tool check, gap
   check: 3 requests). On Slurm, `--layout chained` (the default): an array of n tasks
   `envsynth synthagent run --stages tool_suites,tasks --shard i/n`, each running both stages on its
   shard, the tasks stage fed by its own tool suites as they are kept (a task belongs to the shard of
   its persona); `--layout stages`: an array per stage (`--stages tool_suites --shard i/n`, then,
   afterok, `--stages tasks --shard i/n`). Then the finishing job (afterany):
   `python -m envsynth.pipeline check-shards` (refuses a missing or failed shard), then the plain
   `--stages tool_suites tasks` command, which merges the shards' journals into the unsharded
   layout. The later stages (demonstrations, rubrics, rewards: about 35 requests per task) do not run.
3. Each job's command runs under `--measure`: its wall time, CPU time and peak RSS (`ru_maxrss` of
   the command, one Python process).

The table: items per hour (items / the chain's wall time, first submission to the finishing job's
end) against the ideal the server allows (requests x latency / in_flight: the server busy with no
gap), efficiency = ideal / wall (and ideal / the server's busy span, first request to last), the
peak RSS of the biggest shard and of the finishing job (and of each job: `<stage>_rss_mb`, one number per array
task), each stage's span and the finishing job's time, client CPU per request, and whether the
stage folders (entries without timings, stats) equal the first row's (n = 1) exactly.
"""
import argparse, json, os, resource, shutil, subprocess, sys, tempfile, time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'tests'))
from _slurm import LocalSlurm  # noqa: E402  the tests' single-node Slurm, started and stopped the same way
ENVSYNTH = str(Path(sys.executable).parent / 'envsynth')
STAGES = (('tool_suites', '02_tool_suites'), ('tasks', '03_tasks'))
# the arrays of each layout, in order: (array name, the `--stages` its tasks run)
LAYOUTS = {'chained': (('synth', 'tool_suites,tasks'),),     # one job per shard runs both stages, fed
           'stages': (('tool_suites', 'tool_suites'), ('tasks', 'tasks'))}   # an array per stage, afterok
CLUSTER_COMMANDS = ('sbatch', 'squeue', 'scontrol', 'scancel', 'slurmctld', 'slurmd', 'munged')

# ---------------------------------------------------------------- the server (its own process)

def synthagent_tags() -> dict:
    "SynthAgent's task-synthesis tags by the pydantic model of their answers."
    from envsynth.synthagent.tasks import CheckedTools, FuzzyTask, GapVerdict, ToolSuiteDraft
    return {'synthagent.tool_suite': ToolSuiteDraft, 'synthagent.fuzzy_task': FuzzyTask,
            'synthagent.tool_check': CheckedTools, 'synthagent.gap_check': GapVerdict}

def serve(latency: float, in_flight: int, log: Path):
    """Serve until stdin closes, then write a summary of the requests to `log`: counts per tag and
    status, first start, last end, busy request-seconds, CPU seconds of serving."""
    from envsynth.fake_server import FakeOpenAIServer, schema_tags, teacher_handler
    from envsynth.synthagent.offline import offline_synthagent_teacher
    handler = teacher_handler(offline_synthagent_teacher(), latency, tag_of=schema_tags(synthagent_tags()))
    with FakeOpenAIServer(handler, headers=True, max_in_flight=in_flight) as srv:
        ready = time.process_time()
        print(srv.base_url, flush=True)
        sys.stdin.read()
    cpu, entries, tag_of = time.process_time() - ready, srv.log, schema_tags(synthagent_tags())
    tags, statuses = {}, {}
    for e in entries:
        tag = e['tag'] or tag_of(srv.requests[e['request']]) or 'untagged'
        tags[tag] = tags.get(tag, 0) + 1
        statuses[str(e['status'])] = statuses.get(str(e['status']), 0) + 1
    log.write_text(json.dumps({
        'requests': len(entries), 'tags': tags, 'statuses': statuses, 'cpu_s': cpu,
        'first_start': min((e['start'] for e in entries), default=None),
        'last_end': max((e['end'] for e in entries), default=None),
        'busy_s': sum(e['end'] - e['start'] for e in entries),
        'queued_s': sum(e['start'] - e['arrived'] for e in entries)}))

class Server:
    "The fake server process: `url`; `stop()` returns its summary."
    def __init__(self, latency: float, in_flight: int, folder: Path):
        self.log = folder / 'server.json'
        self.proc = subprocess.Popen(
            [sys.executable, __file__, '--serve', '--latency', str(latency), '--in-flight', str(in_flight),
             '--log', str(self.log)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url: self.proc.kill(); raise RuntimeError('the fake server did not start')

    def stop(self) -> dict:
        self.proc.stdin.close()
        try: self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired: self.proc.kill(); self.proc.wait()
        if self.proc.returncode: raise RuntimeError(f'the fake server exited {self.proc.returncode}')
        return json.loads(self.log.read_text())

# ---------------------------------------------------------------- one job's command, measured

def measure(out: Path, command: list[str]) -> int:
    "Run `command`; write its exit status, wall and CPU seconds and peak RSS to `out`; its status."
    t0 = time.time()
    rc = subprocess.run(command).returncode
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({'command': command, 'rc': rc, 'start': t0, 'end': time.time(),
                               'cpu_s': ru.ru_utime + ru.ru_stime, 'peak_rss_mb': ru.ru_maxrss / 1024}))
    return rc

# ---------------------------------------------------------------- a throwaway Slurm cluster

class Cluster(LocalSlurm):
    """The tests' single-node Slurm (tests/_slurm.py: tests/slurm_up.sh in a temporary folder; root, Slurm and munge
    installed); `env` runs its commands; `stop()` cancels every job and stops the daemons by PID."""
    def __init__(self):
        missing = [c for c in CLUSTER_COMMANDS if not (shutil.which(c) or Path('/usr/sbin', c).exists())]
        if missing: raise RuntimeError(f'Slurm is not installed here (missing {missing})')
        if os.geteuid() != 0: raise RuntimeError('the local Slurm needs root (munged, mknod)')
        super().__init__('envsynth-scale-slurm-')
        r = self.start()
        if r.returncode:
            self.stop(); raise RuntimeError(f'slurm_up.sh failed:\n{r.stdout}\n{r.stderr}')

    def stop(self) -> list[str]:
        left = super().stop(); self.remove(); return left

    def sbatch(self, *options: str, wrap: str, env: dict) -> str:
        r = subprocess.run(['sbatch', '--parsable', *options, '--wrap', wrap], env={**self.env, **env},
                           capture_output=True, text=True, timeout=60)
        if r.returncode: raise RuntimeError(f'sbatch failed: {r.stderr.strip()}')
        return r.stdout.strip().split(';')[0]

    def wait(self, ids: list[str], timeout_s: float, poll_s: float = 0.5) -> dict[str, str]:
        "Wait until no job of `ids` is queued or running; each job's (array task's) final state."
        deadline = time.monotonic() + timeout_s
        while True:
            q = subprocess.run(['squeue', '-h', '-o', '%i', '-j', ','.join(ids)], env=self.env,
                               capture_output=True, text=True, timeout=30)
            if q.returncode == 0 and not q.stdout.strip(): break
            if time.monotonic() > deadline: raise TimeoutError(f'jobs {ids} not done after {timeout_s:.0f} s')
            time.sleep(poll_s)
        states = {}
        for job in ids:
            out = subprocess.run(['scontrol', 'show', 'job', '-o', job], env=self.env, capture_output=True,
                                 text=True, timeout=30).stdout
            for line in out.splitlines():
                f = dict(x.split('=', 1) for x in line.split() if '=' in x)
                task = f.get('ArrayTaskId')
                states[f'{job}_{task}' if task and task != 'N/A' else job] = f.get('JobState', '?')
        return states

# ---------------------------------------------------------------- the chain

def persona(i: int, base: list[str]) -> str:
    """Persona `i`: one of `base` who looks after a thing with a made-up name of its own (the offline
    teacher names the tools after it), so no two items ask the server the same thing."""
    word, n = '', i
    while True:
        word, n = 'bcdfghjklmnpqrstvwz'[n % 19] + 'aeiou'[(n // 19) % 5] + word, n // 95
        if not n: break
    return f'{base[i % len(base)][:-1]}, who looks after the {word}ster.'

def write_inputs(folder: Path, items: int, concurrency: int) -> Path:
    "`items` distinct personas and a parameter file that reads them; the parameter file's path."
    from envsynth.synthagent.tasks import OUR_PERSONAS
    folder.mkdir(parents=True, exist_ok=True)
    personas = folder / 'personas.jsonl'
    personas.write_text(''.join(json.dumps({'persona': persona(i, OUR_PERSONAS)}) + '\n' for i in range(items)))
    params = folder / 'params.yaml'
    params.write_text(json.dumps({'run_dir': '', 'overrides': {
        'persona_files': [str(personas)], 'max_personas': items, 'problem_files': [],
        'concurrency': concurrency, 'seed': 0}}) + '\n')      # JSON is YAML
    return params

def recipe_command(run_dir: Path, params: Path, *extra: str) -> list[str]:
    return [ENVSYNTH, 'synthagent', 'run', '--run-dir', str(run_dir), '--params', str(params), *extra]

def submit_chain(cluster: Cluster, run_dir: Path, params: Path, shards: int, env: dict,
                 fail_shard: int | None = None, layout: str = 'chained') -> dict:
    """The arrays of `layout` (each after the one before: afterok) and the finishing job (afterany:
    it checks the shards itself and refuses, naming the missing ones); `{array: job id, ...,
    'finish': id}`. `fail_shard`: that task of the first array exits 3 without running."""
    logs, meas = run_dir / 'logs', run_dir / 'measure'
    logs.mkdir(parents=True, exist_ok=True); meas.mkdir(parents=True, exist_ok=True)
    common = [f'--chdir={REPO}', '--cpus-per-task=1', '--mem=2G', '--time=02:00:00']
    me = [sys.executable, str(Path(__file__).resolve())]
    ids, after = {}, None
    task = '$SLURM_ARRAY_TASK_ID'
    for array, stages in LAYOUTS[layout]:
        cmd = [*me, '--measure', f'{meas}/{array}-{task}.json', '--',
               *recipe_command(run_dir, params, '--stages', stages, '--shard', f'{task}/{shards}')]
        wrap = ' '.join(cmd)
        if fail_shard is not None and not ids:
            wrap = f'if [ {task} = {fail_shard} ]; then exit 3; fi; {wrap}'
        ids[array] = cluster.sbatch(*common, f'--array=0-{shards - 1}', f'--job-name=scale-{array}',
                                    f'--output={logs}/%x-%A_%a.out',
                                    *([f'--dependency=afterok:{after}'] if after else []),
                                    wrap=wrap, env=env)
        after = ids[array]
    check = [sys.executable, '-m', 'envsynth.pipeline', 'check-shards', '--of', str(shards),
             *(str(run_dir / folder) for _, folder in STAGES)]
    finish = [*me, '--measure', f'{meas}/finish.json', '--',
              *recipe_command(run_dir, params, '--stages', ','.join(s for s, _ in STAGES))]
    ids['finish'] = cluster.sbatch(*common, '--job-name=scale-finish', f'--output={logs}/%x-%j.out',
                                   f'--dependency=afterany:{after}',
                                   wrap=f'{" ".join(check)} && {" ".join(finish)}', env=env)
    return ids

def stage_contents(run_dir: Path) -> dict:
    "What two runs must agree on: each stage's entries (timings dropped) and its stats without the shard list."
    from envsynth.pipeline import read_entries, without_timing
    out = {}
    for _, folder in STAGES:
        stats = json.loads((run_dir / folder / 'stats.json').read_text()); stats.pop('shards', None)
        out[folder] = {'entries': without_timing(read_entries(run_dir / folder)), 'stats': stats}
    return out

def client_env(url: str, in_flight: int) -> dict:
    "The environment of the recipe's processes: every role on the server at `url`, `in_flight` requests at most per role."
    return {'ENVSYNTH_LLM_ENDPOINT': url, 'ENVSYNTH_LLM_MODEL': 'fake', 'ENVSYNTH_LLM_MAX_CONCURRENCY': str(in_flight),
            'PYTHONPATH': os.pathsep.join(p for p in (str(REPO / 'lib'), os.environ.get('PYTHONPATH')) if p)}

def run_one(cluster: Cluster, folder: Path, items: int, shards: int, latency: float, in_flight: int,
            concurrency: int, timeout_s: float, layout: str = 'chained') -> dict:
    "One chain at `shards`, against a fresh server: its measurements."
    params = write_inputs(folder / 'inputs', items, concurrency)
    run_dir = folder / 'run'
    server = Server(latency, in_flight, folder)
    env = client_env(server.url, concurrency)
    try:
        t0 = time.time()
        ids = submit_chain(cluster, run_dir, params, shards, env, layout=layout)
        states = cluster.wait(list(ids.values()), timeout_s)
    finally: served = server.stop()
    bad = {k: v for k, v in states.items() if v != 'COMPLETED'}
    if bad:
        logs = '\n'.join(f'== {p.name}\n{p.read_text()[-1500:]}' for p in sorted((run_dir / 'logs').glob('*.out')))
        raise RuntimeError(f'jobs did not complete: {bad}\n{logs}')
    jobs = {p.stem: json.loads(p.read_text()) for p in sorted((run_dir / 'measure').glob('*.json'))}
    wall = jobs['finish']['end'] - t0
    ideal = served['requests'] * latency / in_flight
    llm_wall = served['last_end'] - served['first_start']
    stats = {folder: json.loads((run_dir / folder / 'stats.json').read_text()) for _, folder in STAGES}
    row = {'layout': layout, 'shards': shards, 'concurrency': concurrency, 'items': items, 'tasks_kept': stats['03_tasks']['kept'],
           'requests': served['requests'], 'wall_s': round(wall, 1), 'llm_wall_s': round(llm_wall, 1),
           'ideal_s': round(ideal, 1), 'items_per_h': round(items / wall * 3600),
           'ideal_items_per_h': round(items / ideal * 3600), 'efficiency': round(ideal / wall, 3),
           'efficiency_llm': round(ideal / llm_wall, 3),
           'mean_in_flight': round(served['busy_s'] / llm_wall, 1),
           'peak_rss_mb_shard': round(max(j['peak_rss_mb'] for k, j in jobs.items() if k != 'finish')),
           'peak_rss_mb_finish': round(jobs['finish']['peak_rss_mb']),
           'client_cpu_ms_per_request': round(1000 * sum(j['cpu_s'] for j in jobs.values()) / served['requests'], 2),
           'server_cpu_ms_per_request': round(1000 * served['cpu_s'] / served['requests'], 2)}
    for array, _ in LAYOUTS[layout]:
        mine = [j for k, j in jobs.items() if k.startswith(array + '-')]
        row[f'{array}_span_s'] = round(max(j['end'] for j in mine) - min(j['start'] for j in mine), 1)
        row[f'{array}_rss_mb'] = [round(j['peak_rss_mb']) for j in mine]
    # from the first submission to the last array task's start: Slurm's hand-offs and scheduling
    row['last_array_start_s'] = round(max(j['start'] for k, j in jobs.items() if k != 'finish') - t0, 1)
    row['finish_wait_s'] = round(jobs['finish']['start'] - max(j['end'] for k, j in jobs.items()
                                                                 if k != 'finish'), 1)
    row['load_average_1m'] = round(os.getloadavg()[0], 2)
    row['finish_s'] = round(jobs['finish']['end'] - jobs['finish']['start'], 1)
    if set(served['statuses']) != {'200'}: raise RuntimeError(f'requests failed at the server: {served}')
    return {'row': row, 'server': served, 'contents': stage_contents(run_dir), 'run_dir': str(run_dir)}

COLUMNS = ('layout', 'shards', 'concurrency', 'items', 'tasks_kept', 'requests', 'wall_s', 'llm_wall_s', 'ideal_s', 'items_per_h',
           'ideal_items_per_h', 'efficiency', 'efficiency_llm', 'mean_in_flight', 'peak_rss_mb_shard',
           'peak_rss_mb_finish', 'synth_rss_mb', 'tool_suites_rss_mb', 'tasks_rss_mb', 'synth_span_s',
           'tool_suites_span_s', 'tasks_span_s', 'finish_wait_s', 'finish_s', 'client_cpu_ms_per_request',
           'server_cpu_ms_per_request', 'load_average_1m', 'exact')

def print_table(rows: list[dict], columns=COLUMNS):
    print('| ' + ' | '.join(columns) + ' |')
    print('|' + '|'.join('---:' for _ in columns) + '|')
    for r in rows: print('| ' + ' | '.join(str(r.get(c, '')) for c in columns) + ' |')

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--items', type=int, default=10_000, help='personas (items of the first stage)')
    ap.add_argument('--shards', type=int, nargs='+', default=[1, 2, 4], help='array sizes, one chain each')
    ap.add_argument('--latency', type=float, default=2.0, help='seconds per request at the server')
    ap.add_argument('--in-flight', type=int, default=256, help='requests the server serves at once')
    ap.add_argument('--concurrency', type=int, default=None,
                    help='items in flight per stage, all shards together, split evenly over them (default: '
                         '2 x --in-flight: a queue at the server, as a real deployment keeps one)')
    ap.add_argument('--timeout', type=float, default=3600, help='seconds one chain may take')
    ap.add_argument('--layout', choices=list(LAYOUTS), nargs='+', default=['chained'],
                    help="'chained': one array whose task i runs both stages on shard i (the tasks stage fed "
                         "by the tool suites as they are kept); 'stages': an array per stage, each after the "
                         'one before; several: each shard count runs each layout')
    ap.add_argument('--json', type=Path, help='write the rows here')
    ap.add_argument('--keep', type=Path, help='keep the run folders under this folder')
    ap.add_argument('--serve', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--log', type=Path, help=argparse.SUPPRESS)
    ap.add_argument('--measure', type=Path, help=argparse.SUPPRESS)
    ap.add_argument('command', nargs='*', help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.serve: serve(a.latency, a.in_flight, a.log); return 0
    if a.measure: return measure(a.measure, a.command)
    if a.items < 1 or a.in_flight < 1 or a.latency <= 0 or min(a.shards) < 1:
        ap.error('--items, --in-flight and --shards must be >= 1 and --latency > 0')
    root = a.keep or Path(tempfile.mkdtemp(prefix='envsynth-scale-'))
    print(f'{a.items} personas, fake server: {a.latency * 1000:.0f} ms per request, {a.in_flight} at once; '
          f'{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}', flush=True)
    cluster, rows, first = Cluster(), [], None
    try:
        for n, layout in ((n, layout) for n in a.shards for layout in a.layout):
            out = run_one(cluster, root / f'{layout}-shards-{n}', a.items, n, a.latency, a.in_flight,
                          -(-(a.concurrency or 2 * a.in_flight) // n), a.timeout, layout)
            first = first or out['contents']
            out['row']['exact'] = out['contents'] == first
            rows.append(out['row']); print(json.dumps(out['row']), flush=True)
    finally:
        cluster.stop()
        if not a.keep: shutil.rmtree(root, ignore_errors=True)
    print(); print_table(rows, [c for c in COLUMNS if any(c in r for r in rows)])
    if a.json:
        a.json.write_text(json.dumps({'latency_s': a.latency, 'in_flight': a.in_flight,
                                      'cpus': os.cpu_count(), 'load_average_end': os.getloadavg()[0],
                                      'rows': rows}, indent=1) + '\n')
    return 0 if all(r['exact'] for r in rows) else 1

if __name__ == '__main__': sys.exit(main())

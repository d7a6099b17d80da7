"""Do the recipes keep a model server busy? Each recipe against a fake server with fixed latency.

    .venv/bin/python benchmarks/recipe_efficiency.py [--recipes astra ...] [--latency 0.2]
        [--concurrency 64] [--items [RECIPE=]N ...] [--personas N] [--set KEY VALUE ...]

On a cluster the cost that matters is the GPU time of the model server. The fake server
(`envsynth.fake_server`, its own process) answers every chat request as the recipe's offline teacher
would (same content, tool calls and structured output: `teacher_handler`), `latency` seconds after
it starts on it, serving at most `concurrency` requests at once. The recipe runs in this process
with one `LLMClient` for every role (`TagHeaderBackend`: each request names its tag, so the server
picks the teacher's responder), `concurrency` requests in flight at most, no cache, a fresh run
folder, and `concurrency` items in flight per stage (the parameter files' `concurrency`; `--items`
changes it).

The server logs each request's tag (the stage), start and end. Per recipe: requests, the wall time
of the LLM-bound part (first start to last end), the ideal = max(requests x latency / concurrency,
chain x latency) and efficiency = ideal / wall; per stage (tag) the mean requests in flight (busy
request-seconds / the stage's span). chain is the most requests on one path of dependencies, where a
request depends on an answer it quotes (its text, a tool call's arguments, a long string of a JSON
answer) that came back shortly before it was sent (`--dependency-window` latencies): agent turns,
the tool emulator's and user simulator's replies, repairs, records handed from one stage to the
next. Dependencies that quote nothing (the k demonstrations of a SynthAgent task share a world, one
after another) are not seen, so chain is a lower bound and the ideal never flatters. The same-run
baseline is the ideal itself: a server kept busy at `concurrency` with no gaps. The recipe's process
CPU time (client_cpu_s; one Python process, so one core at most) bounds it too: on a small machine a
recipe cannot finish its LLM-bound part faster than its own CPU work.
"""
import argparse, asyncio, bisect, importlib, json, os, shutil, subprocess, sys, tempfile, threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPES = ('agentscaler', 'astra', 'synthagent', 'envfactory')
COLUMNS = ('recipe', 'requests', 'llm_wall_s', 'ideal_throughput_s', 'chain', 'ideal_chain_s',
           'ideal_s', 'efficiency', 'run_wall_s', 'client_cpu_s', 'client_cpu_ms_per_request',
           'server_cpu_ms_per_request')
STAGE_COLUMNS = ('recipe', 'stage', 'requests', 'first_s', 'last_s', 'mean_in_flight')

# ---------------------------------------------------------------- server side (its own process)

def _lazy(make):
    "A responder made by `make()` on its first call (the run's tasks exist by then)."
    state, lock = {}, threading.Lock()
    def respond(req):
        with lock:
            if 'fn' not in state: state['fn'] = make()
        return state['fn'](req)
    return respond

def _tasks(run_dir: Path, folder: str):
    from envsynth.pipeline import read_records
    from envsynth.schema import Task
    return [Task.model_validate(r) for r in read_records(run_dir / folder)]

def server_teacher(recipe: str, run_dir: Path, params):
    """The recipe's offline teacher; the agent's responder, which the recipe registers offline once
    its tasks exist, is made from the run folder's tasks on the first agent request."""
    from envsynth.llm import OfflineTeacher
    if recipe == 'agentscaler':
        from envsynth.agentscaler.interplay import AGENT_TAG
        from envsynth.agentscaler.offline import offline_recipe_teacher, register_offline_agent
        t = offline_recipe_teacher()
        agent = lambda: register_offline_agent(
            OfflineTeacher(), _tasks(run_dir, '04_tasks'), params.agent_noise).responders[AGENT_TAG]
        t.register(AGENT_TAG, _lazy(agent))
    elif recipe == 'astra':
        from envsynth.astra.offline import offline_recipe_teacher, register_offline_agent
        from envsynth.astra.trajectories import AGENT_TAG
        t = offline_recipe_teacher()
        agent = lambda: register_offline_agent(
            OfflineTeacher(), _tasks(run_dir, '04_task_scores')).responders[AGENT_TAG]
        t.register(AGENT_TAG, _lazy(agent))
    elif recipe == 'envfactory':
        from envsynth.envfactory.envgen import TAGS
        from envsynth.envfactory.offline import offline_envfactory_teacher, register_offline_agent
        t = offline_envfactory_teacher()
        agent = lambda: register_offline_agent(OfflineTeacher(), _tasks(run_dir, '04_queries'),
                                               params.agent_noise).responders[TAGS['agent']]
        t.register(TAGS['agent'], _lazy(agent))
    else:
        from envsynth.synthagent.offline import offline_synthagent_teacher
        t = offline_synthagent_teacher()
    return t

MIN_QUOTE = 24          # shorter answers ("ok", a bare number) would be found everywhere

def answer_quotes(body) -> list[str]:
    """What a request built on this answer would quote (as it appears in JSON text): the answer's
    text, each tool call's arguments, and the long string values of a JSON answer."""
    if not isinstance(body, dict) or not body.get('choices'): return []
    message = body['choices'][0]['message']
    text = message.get('content') or ''
    quotes = [text] + [c['function']['arguments'] for c in message.get('tool_calls') or []]
    try: quotes += list(_strings(json.loads(text)))
    except ValueError: pass
    return [json.dumps(q)[1:-1] for q in quotes if isinstance(q, str) and len(q) >= MIN_QUOTE]

def _strings(obj):
    if isinstance(obj, str): yield obj
    elif isinstance(obj, dict): yield from (x for v in obj.values() for x in _strings(v))
    elif isinstance(obj, list): yield from (x for v in obj for x in _strings(v))

def quoted_answers(log: list[dict], texts: list[str], quotes: list[list[str]],
                   window: float) -> list[list[int]]:
    """For each log entry, the requests (indices into the server's `requests`) whose answer its
    request quotes, among those answered in the `window` seconds before it arrived: the requests it
    depends on."""
    done = sorted(log, key=lambda e: e['end'])
    ends = [e['end'] for e in done]
    out = []
    for e in log:
        lo = bisect.bisect_left(ends, e['arrived'] - window)
        hi = bisect.bisect_right(ends, e['arrived'])
        text = texts[e['request']]
        out.append([d['request'] for d in done[lo:hi]
                    if any(q in text for q in quotes[d['request']])])
    return out

def serve(a):
    "Serve until stdin closes, then write the log (one entry per chat request) to `a.log`."
    from envsynth.fake_server import FakeOpenAIServer, teacher_handler
    params = read_params(a.serve, a.params)
    answer = teacher_handler(server_teacher(a.serve, Path(a.run_dir), params), a.latency)
    replies = {}
    def handle(body, headers):
        out = answer(body, headers); replies[id(body)] = out.body; return out
    with FakeOpenAIServer(handle, headers=True, max_in_flight=a.concurrency) as srv:
        ready = time.process_time()                 # after the imports: CPU of serving only
        print(srv.base_url, flush=True)
        sys.stdin.read()
    cpu = time.process_time() - ready
    texts = [json.dumps(b.get('messages') or []) for b in srv.requests]
    quotes = [answer_quotes(replies.get(id(b))) for b in srv.requests]
    after = quoted_answers(srv.log, texts, quotes, window=a.dependency_window * a.latency)
    log = [{**e, 'after': deps} for e, deps in zip(srv.log, after)]
    Path(a.log).write_text(json.dumps({'entries': log, 'cpu_s': cpu}))

# ---------------------------------------------------------------- client side

def recipe_module(recipe: str):
    return importlib.import_module(f'envsynth.{recipe}.recipe')

def read_params(recipe: str, path: str, **overrides):
    return recipe_module(recipe).read_params(path, **overrides)

async def run_recipe(recipe: str, params, run_dir: Path, client):
    run = getattr(recipe_module(recipe), f'run_{recipe}')
    if recipe == 'synthagent': return await run(params, run_dir, clients=client)
    return await run(params, run_dir, client)

def measure(recipe: str, a) -> tuple[dict, list[dict]]:
    "Run `recipe` against a fresh fake server; its summary row and per-stage rows."
    params_file = a.params or str(REPO / 'papers_repro' / recipe / 'smoke.yaml')
    tmp = Path(tempfile.mkdtemp(prefix=f'eff-{recipe}-'))
    try: return _measure(recipe, a, params_file, tmp)
    finally: shutil.rmtree(tmp, ignore_errors=True)

def _measure(recipe, a, params_file, tmp):
    import yaml
    from envsynth.fake_server import TagHeaderBackend
    from envsynth.llm import LLMClient
    run_dir, log = tmp / 'run', tmp / 'server.json'
    command = [sys.executable, __file__, '--serve', recipe, '--params', params_file,
               '--run-dir', str(run_dir), '--log', str(log), '--latency', str(a.latency),
               '--dependency-window', str(a.dependency_window), '--concurrency', str(a.concurrency)]
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=REPO)
    try:
        url = server.stdout.readline().strip()
        if not url: raise RuntimeError(f'the fake server for {recipe} did not start')
        sets = {k: yaml.safe_load(v) for k, v in a.set or []}
        if recipe == 'synthagent' and a.personas:
            sets |= more_personas(a.personas, tmp / 'personas.jsonl')
        sets = {'concurrency': items_in_flight(a, recipe), **sets}
        params = read_params(recipe, params_file, **sets)
        client = LLMClient(TagHeaderBackend(url, timeout_s=600), 'fake', timeout_s=600,
                           max_concurrency=a.concurrency, max_retries=0)
        t0, c0 = time.perf_counter(), time.process_time()
        card = asyncio.run(run_recipe(recipe, params, run_dir, client))
        run_wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        server.stdin.close(); server.wait(timeout=60)
    if server.returncode:
        raise RuntimeError(f'the fake server for {recipe} exited {server.returncode}')
    if 'shard' in card: raise RuntimeError(f'{recipe}: the run did not finish: {card}')
    failures = {t: s['failures'] for t, s in client.ledger.to_dict().items()
                if s.get('failures')}
    if failures: raise RuntimeError(f'{recipe}: failed model calls: {failures}')
    served = json.loads(log.read_text())
    row, stages = summarize(recipe, served['entries'], a.latency, a.concurrency, run_wall)
    per_request = lambda seconds: round(1000 * seconds / row['requests'], 1)
    row |= {'client_cpu_s': round(cpu, 1), 'client_cpu_ms_per_request': per_request(cpu),
            'server_cpu_ms_per_request': per_request(served['cpu_s'])}
    return row, stages

def more_personas(n: int, path: Path) -> dict:
    "SynthAgent parameters for `n` personas: ours, as newcomers and veterans, in numbered towns."
    from envsynth.synthagent.tasks import OUR_PERSONAS
    kinds = [*OUR_PERSONAS, *(f'{p[:-1]}, new to the job.' for p in OUR_PERSONAS),
             *(f'{p[:-1]}, with twenty years in the role.' for p in OUR_PERSONAS)]
    rows = [{'persona': f'{kinds[i % len(kinds)][:-1]} (town {i // len(kinds) + 1}).'}
            for i in range(n)]
    path.write_text(''.join(json.dumps(r) + '\n' for r in rows))
    return {'persona_files': [str(path)], 'max_personas': n}

def longest_chain(log: list[dict]) -> int:
    "The most requests on one path of the log's dependencies (`after`: the requests each quotes)."
    depth = {}
    for e in sorted(log, key=lambda e: e['arrived']):
        depth[e['request']] = 1 + max((depth.get(r, 0) for r in e['after']), default=0)
    return max(depth.values(), default=0)

def summarize(recipe: str, log: list[dict], latency: float, concurrency: int, run_wall: float):
    "The recipe's row and its stages' rows from the server's log."
    if bad := [e for e in log if e['status'] != 200]:
        raise RuntimeError(f'{recipe}: {len(bad)} requests failed at the server')
    n, start, end = len(log), min(e['start'] for e in log), max(e['end'] for e in log)
    by_tag = {}
    for e in log: by_tag.setdefault(e['tag'], []).append(e)
    stages = []
    for tag, es in sorted(by_tag.items(), key=lambda kv: min(e['start'] for e in kv[1])):
        s0, s1 = min(e['start'] for e in es), max(e['end'] for e in es)
        busy = sum(e['end'] - e['start'] for e in es)
        stages.append({'recipe': recipe, 'stage': tag, 'requests': len(es),
                       'first_s': round(s0 - start, 2), 'last_s': round(s1 - start, 2),
                       'mean_in_flight': round(busy / max(s1 - s0, 1e-9), 1)})
    chain = longest_chain(log)
    ideal_tp, ideal_chain = n * latency / concurrency, chain * latency
    ideal = max(ideal_tp, ideal_chain)
    row = {'recipe': recipe, 'requests': n, 'llm_wall_s': round(end - start, 2),
           'ideal_throughput_s': round(ideal_tp, 2), 'chain': chain,
           'ideal_chain_s': round(ideal_chain, 2),
           'ideal_s': round(ideal, 2), 'efficiency': round(ideal / (end - start), 3),
           'run_wall_s': round(run_wall, 2)}
    return row, stages

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--recipes', nargs='+', default=list(RECIPES), choices=RECIPES)
    ap.add_argument('--latency', type=float, default=0.2, help='seconds per request at the server')
    ap.add_argument('--concurrency', type=int, default=64,
                    help='requests the server serves at once')
    ap.add_argument('--items', nargs='+', default=[], metavar='[RECIPE=]N',
                    help='items in flight per stage, for all recipes or one (default: concurrency)')
    ap.add_argument('--params', default=None,
                    help='parameter file (default: papers_repro/<recipe>/smoke.yaml)')
    ap.add_argument('--personas', type=int, default=None,
                    help='SynthAgent: this many personas (a bigger scale)')
    ap.add_argument('--dependency-window', type=float, default=5.0,
                    help='a request depends on answers it quotes from this many latencies back')
    ap.add_argument('--set', nargs=2, action='append', metavar=('KEY', 'VALUE'), type=str)
    ap.add_argument('--out', default=str(REPO / 'benchmarks' / 'results' /
                                         'recipe_efficiency.json'))
    ap.add_argument('--serve', choices=RECIPES, help=argparse.SUPPRESS)
    ap.add_argument('--run-dir', help=argparse.SUPPRESS)
    ap.add_argument('--log', help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve: return serve(a)
    load = os.getloadavg()
    rows, stages = [], []
    for recipe in a.recipes:
        row, st = measure(recipe, a)
        rows.append(row); stages += st
    end_load = os.getloadavg()[0]
    print(f'fake server: latency {a.latency * 1000:.0f} ms, {a.concurrency} at once (own process); '
          f'{os.cpu_count()} CPUs, load average {load[0]:.1f} at the start, '
          f'{end_load:.1f} at the end\n')
    print_table(rows, COLUMNS)
    print()
    print_table(stages, STAGE_COLUMNS)
    out = {'latency_s': a.latency, 'concurrency': a.concurrency,
           'items_in_flight': {r: items_in_flight(a, r) for r in a.recipes},
           'cpus': os.cpu_count(), 'load_average_start': round(load[0], 2),
           'load_average_end': round(end_load, 2), 'recipes': rows, 'stages': stages}
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1) + '\n')
    return out

def items_in_flight(a, recipe: str) -> int:
    "Items in flight per stage of `recipe`: `--items N` or `--items RECIPE=N`, else concurrency."
    given = dict(x.split('=', 1) if '=' in x else ('*', x) for x in a.items)
    return int(given.get(recipe, given.get('*', a.concurrency)))

def print_table(rows, columns):
    print('| ' + ' | '.join(columns) + ' |')
    print('|' + '|'.join('---' if c in ('recipe', 'stage') else '---:' for c in columns) + '|')
    for r in rows:
        cells = (f'{r[c]:.0%}' if c == 'efficiency' else str(r[c]) for c in columns)
        print('| ' + ' | '.join(cells) + ' |')

if __name__ == '__main__': main()

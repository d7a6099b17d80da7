"""Every path through a recipe's run folder ends in the same folder (DESIGN.md, "Seams: exact sharding").

For each of the five recipe commands (`envsynth astra run`, `envsynth astra rl`, `envsynth synthagent run`,
`envsynth envfactory run`, `envsynth agentscaler run`), on its smoke parameters:

1. all shards (`--stages S --shard i/2`, i = 0, 1, for every per-item stage S in order) and then the plain command
   give the clean, unsharded run's folder;
2. a run SIGKILLed in three different per-item stages and then finished gives the clean run's folder;
3. a stage given `--shard` either does its share (its `stats-0000i-of-00002.json` is written) or refuses with a
   non-zero exit and one line on stderr: never exit 0 having done nothing;
4. journal keys hash content, never timings: the entries compared include their keys, made by other processes
   at other times in every path.

What "the same folder" means (`folder_contents`): every file, by its path relative to the run folder, compared as
content: JSON and JSONL parsed, with every dict key ending in `latency_s`, `wall_s` or `seconds` (at any depth)
dropped; parquet files as their rows; SQLite files other than the LLM cache (e.g. the embedding cache) as the sorted
rows of each table (read with its write-ahead log, so `-wal`/`-shm` side files are not compared on their
own); anything else by its bytes. Left out: `llm_cache*.sqlite*` (a cache, written in call order), the
shard locks `.shard-*.lock`, `*.tmp` files, `__pycache__`, and the per-process ledger journals under `ledger/`.

The journals and per-shard stats of a per-item stage (`shard-*-of-*.jsonl`, `stats-*-of-*.json`) are layout: how
many files the items were written to depends on how the run was split. What must agree is what is read back: the
stage's entries (`read_entries`: key, index, status, drop reason and detail, records; timings dropped) and its
`stats.json` without the `shards` list (which names the files); `stage.json` is compared as it is.

The token ledger (`ledger.json` and the data card's `ledger`) is compared per tag on `requests`, `backend_calls`,
`prompt_tokens`, `completion_tokens`, `cache_hits` and `failures` for the sharded path. After kills only the
spending (`backend_calls`, `prompt_tokens`, `completion_tokens`) must agree: what a killed process asked for is kept
only if the ledger is journaled per call, and a resumed run answers from the LLM cache what the killed one paid for
(`requests`/`cache_hits` then legitimately differ; the test prints them, and `data_card.md` is compared without the
rows of its ledger table, which show them).

One clean run per recipe is shared by the tests of that recipe through a module-scoped fixture."""
import fnmatch, hashlib, json, sqlite3, subprocess, sys, time
from dataclasses import dataclass
from pathlib import Path
import pytest
from envsynth.pipeline import read_entries
from _recipe_runs import first_diff, kill_during, short, start, untimed_all

pytestmark = pytest.mark.timeout(900)
REPO = Path(__file__).resolve().parents[1]
ENVSYNTH = str(Path(sys.executable).parent / 'envsynth')
LEDGER_FIELDS = ('requests', 'backend_calls', 'prompt_tokens', 'completion_tokens', 'cache_hits', 'failures')
SPENDING = ('backend_calls', 'prompt_tokens', 'completion_tokens')


@dataclass(frozen=True)
class Recipe:
    name: str
    command: tuple[str, ...]                # the command words after `envsynth`
    params: tuple[str, ...]                 # --params and --set options
    stages: tuple[tuple[str, str], ...]     # per-item stages in order: (stage, folder)
    kill_in: tuple[str, str, str]           # three per-item stages to SIGKILL a run in, in order

    def cmd(self, run_dir: Path, *extra: str) -> list[str]:
        return [ENVSYNTH, *self.command, '--run-dir', str(run_dir), *self.params, *extra]

    @property
    def folders(self) -> dict[str, str]: return dict(self.stages)


def _smoke(path: str, *sets: str) -> tuple[str, ...]:
    return ('--params', str(REPO / 'papers_repro' / path), '--set', 'concurrency=2',
            *(x for s in sets for x in ('--set', s)))

RECIPES = {r.name: r for r in (
    Recipe('astra', ('astra', 'run'), _smoke('astra/smoke.yaml'),
           (('chains', '02_chains'), ('tasks', '03_tasks'), ('task_scores', '04_task_scores'),
            ('trajectories', '05_trajectories'), ('rewards', '06_rewards')),
           ('tasks', 'trajectories', 'rewards')),
    Recipe('astra_rl', ('astra', 'rl'), _smoke('astra/rl_smoke.yaml'),
           (('qa', '01_qa'), ('qa_validation', '02_qa_validation'), ('env_synthesis', '04_env_synthesis'),
            ('merge', '05_merge'), ('package', '06_package'), ('mix', '08_mix')),
           ('qa', 'env_synthesis', 'package')),
    Recipe('synthagent', ('synthagent', 'run'), _smoke('synthagent/smoke.yaml'),
           (('tool_suites', '02_tool_suites'), ('tasks', '03_tasks'), ('demos', '04_demos'),
            ('rubrics', '05_rubrics'), ('rewards', '06_rewards'), ('reasoning', '07_reasoning')),
           ('tasks', 'demos', 'rewards')),
    Recipe('envfactory', ('envfactory', 'run'), _smoke('envfactory/smoke.yaml'),
           (('build', '02_build'), ('queries', '04_queries'), ('solutions', '05_solutions')),
           ('build', 'queries', 'solutions')),
    Recipe('agentscaler', ('agentscaler', 'run'),
           _smoke('agentscaler/smoke.yaml', 'max_domains=3', 'decontamination=false'),
           (('materialize', '03_materialize'), ('tasks', '04_tasks'), ('interplay', '05_interplay'),
            ('filter', '06_filter')),
           ('materialize', 'interplay', 'filter')),
)}


def _run(cmd: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _ok(recipe: Recipe, r: subprocess.CompletedProcess, what: str):
    assert r.returncode == 0, f'{recipe.name}: {what} exited {r.returncode}: {r.stderr[-3000:]}'


# --- what two run folders are compared on -------------------------------------------------------------------------

SKIP = ('llm_cache*.sqlite*', '*.sqlite-wal', '*.sqlite-shm', '.shard-*.lock', '*.tmp', '*.pyc')
LAYOUT = ('shard-*-of-*.jsonl', 'stats-*-of-*.json')


def _ledger(x, fields):
    "The ledger's per-tag counts, only `fields` of each."
    return {tag: ({k: v for k, v in s.items() if k in fields} if isinstance(s, dict) else s) for tag, s in x.items()}


def _sqlite_rows(path: Path) -> dict:
    con = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
    try:
        tables = [t for (t,) in con.execute("select name from sqlite_master where type='table' order by name")]
        return {t: sorted(map(repr, con.execute(f'select * from "{t}"'))) for t in tables}
    finally: con.close()


def _load(path: Path, rel: str, ledger_fields, tags=frozenset()):
    "What a file is compared on (`tags`: the ledger's, whose table rows in `data_card.md` go when requests are not compared)."
    if rel == 'data_card.md' and 'requests' not in ledger_fields:
        return [l for l in path.read_text().splitlines()
                if not (l.startswith('|') and l.strip('|').split('|')[0].strip() in tags)]
    if path.suffix == '.json':
        x = untimed_all(json.loads(path.read_text()))
        if rel == 'ledger.json': return _ledger(x, ledger_fields)
        if rel == 'data_card.json' and isinstance(x.get('ledger'), dict): x['ledger'] = _ledger(x['ledger'], ledger_fields)
        return x
    if path.suffix == '.jsonl':
        return [untimed_all(json.loads(l)) for l in path.read_text().splitlines() if l.strip()]
    if path.suffix == '.parquet':
        import pyarrow.parquet as pq
        return untimed_all(pq.read_table(path).to_pylist())
    if path.suffix in ('.sqlite', '.db', '.sqlite3'): return _sqlite_rows(path)
    return {'sha256': hashlib.sha256(path.read_bytes()).hexdigest()}


def folder_contents(recipe: Recipe, run_dir: Path, ledger_fields=LEDGER_FIELDS) -> dict[str, object]:
    "Relative path → what the file is compared on; a per-item stage's journals as `<folder>/<entries>` (see above)."
    item_folders = set(recipe.folders.values())
    ledger = run_dir / 'ledger.json'
    tags = frozenset(json.loads(ledger.read_text())) | {'total'} if ledger.exists() else frozenset()
    out = {}
    for f in sorted(run_dir.rglob('*')):
        if not f.is_file(): continue
        rel = f.relative_to(run_dir)
        if rel.parts[0] == 'ledger' or '__pycache__' in rel.parts or any(fnmatch.fnmatch(f.name, p) for p in SKIP): continue
        if len(rel.parts) == 2 and rel.parts[0] in item_folders:
            if any(fnmatch.fnmatch(f.name, p) for p in LAYOUT): continue
            if f.name == 'stats.json':
                out[str(rel)] = {k: v for k, v in json.loads(f.read_text()).items() if k != 'shards'}; continue
        out[str(rel)] = _load(f, str(rel), ledger_fields, tags)
    for folder in sorted(item_folders):
        if (run_dir / folder).is_dir(): out[f'{folder}/<entries>'] = untimed_all(read_entries(run_dir / folder))
    return out


def digest(contents: dict) -> dict[str, str]:
    "Relative path → sha256 of the canonical JSON of what it is compared on."
    return {k: hashlib.sha256(json.dumps(v, sort_keys=True, separators=(',', ':'), default=str).encode()).hexdigest()
            for k, v in contents.items()}


def folder_differences(recipe: Recipe, clean: Path, other: Path, path: str, ledger_fields=LEDGER_FIELDS) -> list[str]:
    "One line per file that differs: its path and the first differing record/field."
    a, b = folder_contents(recipe, clean, ledger_fields), folder_contents(recipe, other, ledger_fields)
    da, db = digest(a), digest(b)
    problems = []
    if only := sorted(set(da) - set(db)): problems.append(f'only in the clean run: {only[:10]}')
    if only := sorted(set(db) - set(da)): problems.append(f'only in the {path} run: {only[:10]}')
    for k in sorted(set(da) & set(db)):
        if da[k] != db[k]:
            where, x, y = first_diff(a[k], b[k]) or ('?', '?', '?')
            problems.append(f'{k} at {where}: clean {short(x)} != {path} {short(y)}')
    return problems


def report(recipe: Recipe, path: str, problems: list[str], extra: list[str] = ()) -> str:
    return (f'{recipe.name}: the {path} run folder differs from the clean one in {len(problems)} file(s):\n  '
            + '\n  '.join(problems[:15]) + ''.join(f'\n{e}' for e in extra))


# --- the shared clean runs ------------------------------------------------------------------------------------------

@dataclass
class Clean:
    dir: Path
    seconds: float


@pytest.fixture(scope='module')
def clean_runs(tmp_path_factory):
    "recipe name → its clean run, made on first use and shared by the module's tests."
    made = {}
    def get(recipe: Recipe) -> Clean:
        if recipe.name not in made:
            root = tmp_path_factory.mktemp(f'clean-{recipe.name}')
            t0 = time.monotonic()
            _ok(recipe, _run(recipe.cmd(root / 'a')), 'the clean run')
            made[recipe.name] = Clean(root / 'a', time.monotonic() - t0)
        return made[recipe.name]
    return get


names = pytest.mark.parametrize('name', list(RECIPES))


@names
def test_sharded_then_finished_equals_unsharded(name, clean_runs, tmp_path):
    """Every per-item stage as two shards running at once, stage after stage (as Slurm array tasks would), then the
    plain command: the run folder equals the clean one (records, stats, data card, SFT/RL rows, every other file; the ledger on all its
    counts). Also check 3: a stage given `--shard` does its share or refuses (non-zero exit, one stderr line)."""
    recipe = RECIPES[name]
    clean = clean_runs(recipe)
    run_dir = tmp_path / 'sharded'
    idle = []
    for stage, folder in recipe.stages:
        procs = [start(recipe.cmd(run_dir, '--stages', stage, '--shard', f'{i}/2')) for i in (0, 1)]
        for i, p in enumerate(procs):        # both shards at once, as a Slurm array runs them
            out, err = p.communicate(timeout=600)
            r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
            if r.returncode == 0:
                if not (run_dir / folder / f'stats-{i:05d}-of-00002.json').exists():
                    idle.append(f'{stage} --shard {i}/2')
            else:
                lines = r.stderr.strip().splitlines()
                assert len(lines) == 1, f'{name}: `--stages {stage} --shard {i}/2` exited {r.returncode} without a ' \
                                        f'one-line error: {r.stderr[-2000:]}'
    _ok(recipe, _run(recipe.cmd(run_dir)), 'the finishing run after the shards')
    # Two shards running at once can both miss the shared LLM cache on the same prompt (each pays for it): the ledger
    # must agree on failures and on spending up to that overlap (never less than the clean run).
    problems = folder_differences(recipe, clean.dir, run_dir, 'sharded', ('failures',))
    problems += spending_differences(json.loads((clean.dir / 'ledger.json').read_text()),
                                     json.loads((run_dir / 'ledger.json').read_text()), kills=len(recipe.stages))
    problems = [p for p in problems if not spent_on_card(p)]
    extra = [f'exited 0 with --shard having done nothing (no stats file of its shard): {idle}'] if idle else []
    assert not problems and not idle, report(recipe, 'sharded', problems, extra)


@names
def test_killed_at_three_points_then_finished_equals_clean(name, clean_runs, tmp_path):
    """SIGKILL (the whole process group) during three per-item stages of one run folder, each time starting the run
    again, then finish it with the plain command: the folder equals the clean one, the ledger on its spending
    (backend calls and tokens: kept only if the ledger is journaled per call)."""
    recipe = RECIPES[name]
    clean = clean_runs(recipe)
    run_dir = tmp_path / 'cut'
    mid = {stage: kill_during(lambda: start(recipe.cmd(run_dir)), run_dir, recipe.folders[stage])
           for stage in recipe.kill_in}
    _ok(recipe, _run(recipe.cmd(run_dir)), 'the finishing run after three kills')
    a = json.loads((clean.dir / 'ledger.json').read_text())
    b = json.loads((run_dir / 'ledger.json').read_text())
    for f in ('requests', 'cache_hits'):
        print(f'{name}: ledger {f} clean {sum(s.get(f, 0) for s in a.values() if isinstance(s, dict))}, '
              f'after kills {sum(s.get(f, 0) for s in b.values() if isinstance(s, dict))} (killed mid-stage: {mid})')
    problems = folder_differences(recipe, clean.dir, run_dir, 'killed-and-resumed', ())
    problems += spending_differences(a, b, kills=len(recipe.kill_in))
    problems = [p for p in problems if not spent_on_card(p)]
    assert not problems, report(recipe, 'killed-and-resumed', problems, [f'killed mid-stage: {mid}'])


def spent_on_card(problem: str) -> bool:
    "A card figure made from the ledger's spending (SynthAgent's tokens per task), checked by `spending_differences`."
    return 'avg_tokens_per_task' in problem

def spending_differences(clean: dict, cut: dict, kills: int, in_flight: int = 2) -> list[str]:
    """What the killed-and-resumed run spent against the clean run, per tag: the same, except that a call answered
    in the instant between its ledger line and its cache entry is paid (and counted) again by the resumed run: at
    most `in_flight` (the runs' concurrency) more backend calls per kill, never fewer."""
    problems = []
    for tag in sorted(set(clean) | set(cut)):
        x, y = clean.get(tag, {}), cut.get(tag, {})
        extra = {k: y.get(k, 0) - x.get(k, 0) for k in SPENDING}
        if any(v < 0 for v in extra.values()) or (extra['backend_calls'] == 0 and any(extra.values())):
            problems.append(f'ledger.json {tag}: clean spent {short(x)}, the resumed run {short(y)}')
        elif tag != 'total' and extra['backend_calls'] > kills * in_flight:
            problems.append(f'ledger.json {tag}: {extra["backend_calls"]} backend calls more than the clean run')
    return problems

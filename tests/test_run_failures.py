"""A run whose model fails is a failed run: `envsynth agentscaler run` against a teacher endpoint that answers HTTP
500, 400 or garbage exits non-zero with a one-line reason, journals nothing of what it computed while the model
failed as a result, and a resume with a working model gives exactly the outputs of a clean run. Also: the same
inputs give the same prompts and journal keys whatever the hash seed, and command-line errors are one line."""
import json, os, subprocess, sys
from pathlib import Path
import pytest
from envsynth.fake_server import FakeOpenAIServer, Reply
from envsynth.pipeline import read_entries
from _recipe_runs import untimed

pytestmark = pytest.mark.timeout(1500)
SETS = ['--set', 'max_domains=2', '--set', 'attempts=1', '--set', 'decontamination=false', '--set', 'concurrency=2']
ITEM_STAGES = ('03_materialize', '04_tasks', '05_interplay', '06_filter')
ENVSYNTH = str(Path(sys.executable).parent / 'envsynth')

def _recipe(run_dir: Path, *extra, endpoint: str | None = None, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith('ENVSYNTH_LLM')}
    # every role on the failing endpoint (a role left offline beside it would stop the run at start)
    if endpoint: env |= {'ENVSYNTH_LLM_ENDPOINT': endpoint, 'ENVSYNTH_LLM_MAX_RETRIES': '1', 'ENVSYNTH_LLM_TIMEOUT_S': '2'}
    return subprocess.run([ENVSYNTH, 'agentscaler', 'run', '--run-dir', str(run_dir), *SETS, *extra], env=env,
                          capture_output=True, text=True, timeout=900)

def _ok(res: subprocess.CompletedProcess) -> dict:
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])

def _failed(res: subprocess.CompletedProcess, *said: str) -> str:
    "The one-line reason of a failed run."
    assert res.returncode == 1, (res.returncode, res.stdout[-1000:], res.stderr[-3000:])
    assert 'Traceback' not in res.stderr, res.stderr[-3000:]
    line = [l for l in res.stderr.splitlines() if l.startswith('envsynth agentscaler run: error:')]
    assert len(line) == 1 and all(s in line[0] for s in said), res.stderr[-3000:]
    assert not res.stdout.strip(), res.stdout          # no success summary
    return line[0]

def _outputs(run_dir: Path) -> dict:
    "Everything a run produces except wall-clock measurements and the ledger."
    out = {}
    for f in sorted(run_dir.rglob('*')):
        rel = f.relative_to(run_dir)
        if not f.is_file() or rel.parts[0] in ('ledger', 'llm_cache.sqlite') or '__pycache__' in rel.parts or f.name.startswith('.'): continue
        if rel.name in ('ledger.json', 'data_card.png', 'llm_cache.sqlite-wal', 'llm_cache.sqlite-shm'): continue
        if rel.suffix == '.jsonl' and rel.parts[0] in ITEM_STAGES:
            out[str(rel)] = untimed(read_entries(f.parent)); continue
        text = f.read_bytes()
        if rel.name in ('data_card.json', 'data_card.md'):
            text = json.dumps(untimed({k: v for k, v in json.loads(text).items() if k != 'ledger'})) if rel.suffix == '.json' else \
                _without_ledger_section(text)
        out[str(rel)] = text
    return out

def _without_ledger_section(markdown: bytes) -> bytes:
    "The card's markdown without wall-clock lines and the token ledger table (the resumed run also spent on the outages)."
    out, skipping = [], False
    for line in markdown.splitlines():
        if line.startswith(b'## '): skipping = b'ledger' in line.lower()
        if not skipping and b'wall' not in line: out.append(line)
    return b'\n'.join(out)

def _outage(kind: str):
    "An endpoint that never answers usefully."
    def handler(body):
        if kind == '500': return Reply({'error': {'message': 'the model server is overloaded'}}, status=500)
        if kind == '400': return Reply({'error': {'message': 'this model does not exist'}}, status=400)
        return Reply('<html>502 Bad Gateway</html>', status=200)        # a proxy's page instead of JSON
    return FakeOpenAIServer(handler)

def test_outage_fails_the_run_and_a_resume_matches_a_clean_run(tmp_path):
    clean = _ok(_recipe(tmp_path / 'clean'))
    assert clean['kept_trajectories'] > 0

    cut = tmp_path / 'cut'
    with _outage('500') as srv:                      # stage 2's edge review fails: nothing of it is cached
        _failed(_recipe(cut, endpoint=srv.base_url), "step 'domains'", 'TransportError', 'HTTP 500')
        assert srv.requests
    assert not (cut / '02_domains' / 'domains.jsonl').exists() and not (cut / 'data_card.json').exists()

    _ok(_recipe(cut, '--stages', 'materialize,tasks'))   # the model is back for a while
    for kind, said in (('400', 'RequestError'), ('garbage', 'TransportError')):
        with _outage(kind) as srv:                   # interplay: the agent's and the user's calls fail
            _failed(_recipe(cut, endpoint=srv.base_url), "step 'interplay'", said, 're-run')
            assert srv.requests
        entries = read_entries(cut / '05_interplay')
        assert entries and all(e['status'] == 'failed' for e in entries), {e['status'] for e in entries}
        assert not (cut / '06_filter' / 'stats.json').exists() and not (cut / 'data_card.json').exists()

    resumed = _ok(_recipe(cut))                    # the model works again: the run finishes
    same = lambda summary: {k: v for k, v in summary.items() if k not in ('run_dir', 'wall_s')}
    assert same(resumed) == same(clean)
    a, b = _outputs(tmp_path / 'clean'), _outputs(cut)
    assert sorted(a) == sorted(b)
    for k in a: assert a[k] == b[k], f'{k} differs between the clean run and the run resumed after outages'

PROMPTS = '''
import asyncio, hashlib, json
from envsynth.agentscaler.pool import api_pool, build_domains
from envsynth.agentscaler.offline import offline_recipe_teacher
from envsynth.embed import Embedder
from envsynth.llm import LLMClient
teacher, seen = offline_recipe_teacher(), []
review = teacher.responders['graph.refine_edges']
teacher.register('graph.refine_edges', lambda req: seen.append(req.messages[-1].content) or review(req))
split = asyncio.run(build_domains(api_pool(), Embedder(), LLMClient(teacher, 'offline-teacher')))
print(json.dumps({'prompts': hashlib.sha256(json.dumps(sorted(seen)).encode()).hexdigest(), 'n': len(seen),
                  'domains': hashlib.sha256(json.dumps([d.model_dump(mode='json') for d in split.domains]).encode()).hexdigest()}))
'''

def test_edge_review_prompts_do_not_depend_on_the_hash_seed():
    def run(seed):
        res = subprocess.run([sys.executable, '-c', PROMPTS], env={**os.environ, 'PYTHONHASHSEED': str(seed)},
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        return json.loads(res.stdout.strip().splitlines()[-1])
    a, b = run(1), run(2)
    assert a['n'] > 0 and a == b

def test_filter_items_are_keyed_without_timings(tmp_path):
    "The filter stage's inputs carry latencies: two runs (different timings) must journal the same keys."
    import asyncio
    from envsynth.agentscaler.recipe import RECIPE, AgentScalerParams, AgentScalerRun, stage_filter
    from envsynth.llm import LLMClient, OfflineTeacher
    p = AgentScalerParams()
    traj = {'task_id': 't1', 'messages': [], 'info': {'turns': [{'role': 'user', 'latency_s': 0.25}], 'wall_s': 1.5}}
    keys = []
    for run_no, latency in enumerate((0.25, 0.75)):
        run, client = RECIPE.run_folder(tmp_path / f'run{run_no}'), LLMClient(OfflineTeacher(), 'offline-teacher')
        r = AgentScalerRun(RECIPE, p, run, {'teacher': client, 'user_simulator': client}, [], None)
        for step in run.upstream('filter'):     # the stages the filter reads, finished (empty): the shard's stats, the total
            empty = {'inputs': 0, 'kept': 0, 'dropped': {}, 'failed': {}}
            run.write_json(step, 'stats-00000-of-00001.json', empty)
            run.write_json(step, 'stats.json', {**empty, 'shards': ['00000-of-00001']})
        rec = json.loads(json.dumps(traj)); rec['info']['turns'][0]['latency_s'] = latency; rec['info']['wall_s'] = latency * 3
        with pytest.raises(Exception):          # no task 't1': the item fails, but its key is journaled
            asyncio.run(stage_filter(r, [], [rec]))
        keys.append([e['key'] for e in read_entries(run.dir('filter'))])
    assert keys[0] and keys[0] == keys[1]

@pytest.mark.parametrize('case', ['yaml', 'folder', 'file_run_dir', 'shard', 'torn_journal', 'settings'])
def test_command_line_errors_are_one_line(tmp_path, case):
    run_dir, extra, env = tmp_path / 'run', [], dict(os.environ)
    if case == 'yaml':
        (tmp_path / 'p.yaml').write_text('attempts: [1, 2\nseed: 0\n'); extra = ['--params', str(tmp_path / 'p.yaml')]
    if case == 'folder': extra = ['--params', str(tmp_path)]
    if case == 'file_run_dir': run_dir.write_text('not a folder')
    if case == 'shard': extra = ['--stages', 'tasks', '--shard', '5/3']
    if case == 'torn_journal':
        (run_dir / '01_pool').mkdir(parents=True)
        (run_dir / '03_materialize').mkdir()
        (run_dir / '03_materialize' / 'shard-00000-of-00001.jsonl').write_text('{"key": "a", "ind\n{"key": "b"}\n')
        extra = ['--stages', 'materialize']
    if case == 'settings': env['ENVSYNTH_LLM_TEACHER_TIMEOUT_S'] = 'soon'
    res = subprocess.run([ENVSYNTH, 'agentscaler', 'run', '--run-dir', str(run_dir), *SETS, *extra], env=env,
                         capture_output=True, text=True, timeout=600)
    lines = res.stderr.strip().splitlines()
    assert res.returncode in (1, 2) and 'Traceback' not in res.stderr, res.stderr[-3000:]
    assert lines and lines[-1].startswith('envsynth agentscaler run: error: '), res.stderr[-3000:]
    said = {'yaml': 'p.yaml', 'folder': 'a folder', 'file_run_dir': 'is a file', 'shard': '5/3', 'torn_journal': 'not JSON',
            'settings': 'TIMEOUT_S'}[case]
    assert said in lines[-1], lines[-1]
    if case in ('shard', 'settings', 'yaml', 'folder'): assert not run_dir.exists()      # nothing written before the checks

def test_serve_mcp_on_a_broken_folder_is_one_line(tmp_path):
    import shutil
    from envsynth.env_library import environments_dir
    folder = tmp_path / 'bank'
    shutil.copytree(environments_dir() / 'bank', folder)
    meta = json.loads((folder / 'env.json').read_text()); del meta['toolkit']
    (folder / 'env.json').write_text(json.dumps(meta))
    res = subprocess.run([ENVSYNTH, 'serve-mcp', str(folder)], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert res.returncode != 0 and 'Traceback' not in res.stderr, res.stderr[-3000:]
    assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith('envsynth serve-mcp: error:'), res.stderr

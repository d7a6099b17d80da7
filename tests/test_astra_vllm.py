"""Slow tier: ASTRA's trajectory pipeline (`envsynth astra run`, smoke scale) with its LLM roles
on a real vLLM server on the CPU (a tiny random Qwen3, as in test_vllm_server.py), each role
through its own settings: teacher and judge in `[llm.teacher]` and `[llm.judge]` sections of a
settings file, tool emulator and user simulator in `ENVSYNTH_LLM_<ROLE>_*` variables (§2.1 has no
user simulator; it is set so that no role is left offline). `[llm]` itself points at a port where
nothing listens, so a role that fell back to it would fail the run.

A random model answers every request but produces nothing usable. The run must count that, never
pass anything by default, and still finish its card: `status: no_sft_data`, and exit 1 with one
line (a run with no data is never a success); a model that does not answer at all also exits 1,
with no card (test_astra_recipe.py). Three runs: the whole pipeline with every role on the server
(the judge's clarity check comes first: its unparseable verdicts are `clarity_unknown` drops),
then rollouts and the reward on tasks made offline, once with the agent on the server and once
with the offline agent, so that real MCP tools and the emulator on the server are both called.
"""
import json, os, shutil, subprocess, sys
from pathlib import Path
import pytest
from envsynth.astra.reward import DIMENSIONS, REWARD_TAGS
from envsynth.local_models import build_tiny_qwen3
from envsynth.pipeline import read_entries
from _vllm import ensure_vllm_venv, vllm_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
REPO = Path(__file__).resolve().parents[1]
ENVSYNTH = str(Path(sys.executable).parent / 'envsynth')
SMOKE = ['--params', str(REPO / 'papers_repro/astra/smoke.yaml'),
         '--set', 'concurrency=2', '--set', 'max_tasks_per_server=1']
ROLE = {'model': 'tiny-qwen3', 'max_retries': '1', 'timeout_s': '120', 'max_concurrency': '4'}
# reasons decided before the judge is asked: these tools never reached the clarity check
BEFORE_CLARITY = ('excluded_server', 'invalid_schema', 'vague_description', 'duplicate_server',
                  'duplicate_tool')

@pytest.fixture(scope='module')
def vllm_url(tmp_path_factory):
    "The server, with a long context: ASTRA's prompts hold tool documents and whole trajectories."
    python, tmp = ensure_vllm_venv(), tmp_path_factory.mktemp('vllm')
    model = build_tiny_qwen3(tmp / 'tiny-qwen3')
    config = json.loads((model / 'config.json').read_text())
    (model / 'config.json').write_text(json.dumps(config | {'max_position_embeddings': 32768}))
    # a random model seldom ends its answer: the server caps each one at 64 tokens
    with vllm_server(python, model, tmp / 'server.log', '--max-model-len', '32768',
                     '--override-generation-config', '{"max_new_tokens": 64}') as url:
        yield url

def _settings(tmp: Path, url: str | None, roles=('teacher', 'judge'), dead_default=True) -> Path:
    """A settings file with `roles` on `url`, and `[llm]` at a dead port (`dead_default`) or offline
    (then every role without a section of its own is answered by the offline stand-ins)."""
    lines = ['[llm]', 'endpoint = http://127.0.0.1:9/v1' if url and dead_default else 'endpoint =',
             'model = not-served', 'max_retries = 0', 'timeout_s = 5']
    for role in roles if url else ():
        lines += ['', f'[llm.{role}]', f'endpoint = {url}']
        lines += [f'{k} = {v}' for k, v in ROLE.items()]
    path = tmp / f'settings-{"-".join(roles) if url else "offline"}.ini'
    path.write_text('\n'.join(lines) + '\n')
    return path

def _env(settings: Path, url: str | None = None, roles=('tool_emulator', 'user_simulator')) -> dict:
    "The environment of a run: `settings`, and `roles` on `url` through their variables."
    env = {k: v for k, v in os.environ.items() if not k.startswith('ENVSYNTH_LLM')}
    env['ENVSYNTH_SETTINGS'] = str(settings)
    for role in roles if url else ():
        env[f'ENVSYNTH_LLM_{role.upper()}_ENDPOINT'] = url
        env |= {f'ENVSYNTH_LLM_{role.upper()}_{k.upper()}': v for k, v in ROLE.items()}
    return env

def _run(run_dir: Path, env: dict, *extra) -> dict:
    """`envsynth astra run` without a traceback: its summary line (exit 0), or, for a run that
    finished with no data (exit 1, one line naming its card), the card's status and wall time."""
    r = subprocess.run([ENVSYNTH, 'astra', 'run', '--run-dir', str(run_dir), *SMOKE, *extra],
                       env=env, capture_output=True, text=True, timeout=900)
    assert 'Traceback' not in r.stderr, r.stderr[-3000:]
    if r.returncode == 1 and 'NoDataError' in r.stderr.strip().splitlines()[-1]:
        assert not r.stdout.strip()                    # no success summary
        card = json.loads((run_dir / 'data_card.json').read_text())
        return {'status': card['status'], 'sft_rows': card['stages']['sft']['kept'] or 0,
                'wall_s': card['wall_s']}
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])

def _by_client(card: dict) -> dict:
    "The card's ledger by client: its tags are `<client>/<tag>` when the roles have clients of their own."
    out = {}
    for key, s in card['ledger'].items():
        if key != 'total': client, tag = key.split('/', 1); out.setdefault(client, {})[tag] = s
    return out

def _card(run_dir: Path) -> dict:
    "The data card, after checking that every stage accounts for each of its inputs."
    card = json.loads((run_dir / 'data_card.json').read_text())
    for name, s in card['stages'].items():
        assert not s.get('failed'), (name, s)
        assert s['inputs'] == s['kept'] + sum(s['dropped'].values()), (name, s)
    return card

def _counts(card: dict) -> dict:
    return {k: (v['inputs'], v['kept'], v['dropped']) for k, v in card['stages'].items()}

def _failures(ledger: dict, tag: str) -> int:
    "Requests under `tag` whose answers never parsed (the server answered: no transport failure)."
    s = ledger.get(tag, {'failures': {}})
    assert set(s['failures']) <= {'structured_output'}, (tag, s)
    return s['failures'].get('structured_output', 0)

def test_every_role_on_the_server_the_clarity_check_fails_closed(vllm_url, tmp_path):
    summary = _run(tmp_path / 'whole', _env(_settings(tmp_path, vllm_url), vllm_url))
    card = _card(tmp_path / 'whole')
    assert summary['status'] == card['status'] == 'no_sft_data' and summary['sft_rows'] == 0
    journals = {f.name.split('.', 1)[0] for f in (tmp_path / 'whole' / 'ledger').glob('*.jsonl')}
    assert journals == {'teacher', 'judge', 'tool_emulator'}                 # a client per role
    assert 'judge' in _by_client(card) and set(_by_client(card)) <= journals  # (no clear tool: only the judge spoke)
    docs, judge = card['stages']['tool_docs'], _by_client(card)['judge']
    checked = docs['inputs'] - sum(docs['dropped'].get(k, 0) for k in BEFORE_CLARITY)
    clarity = judge['astra.tool_clarity']
    assert checked > 0 and clarity['requests'] == checked and clarity['completion_tokens'] > 0
    # an unparseable verdict is a `clarity_unknown` drop; a parsed one a verdict, then the size rule
    unknown = docs['dropped'].get('clarity_unknown', 0)
    assert unknown == _failures(judge, 'astra.tool_clarity') > 0
    decided = sum(docs['dropped'].get(k, 0) for k in ('unclear_description', 'small_server'))
    assert unknown + decided + docs['kept'] == checked
    assert all('astra.tool_clarity' not in _by_client(card).get(r, {}) for r in ('teacher', 'tool_emulator'))
    print('whole run on vLLM:', _counts(card), summary['wall_s'], 's')

@pytest.fixture(scope='module')
def offline_tasks(tmp_path_factory):
    "A run folder with stages 1-3 done offline (the θ-gated tasks); copied by each rollout run."
    tmp = tmp_path_factory.mktemp('astra')
    out = _run(tmp / 'tasks', _env(_settings(tmp, None)), '--stages', 'chains,tasks,task_scores')
    assert out['stages'] == ['chains', 'tasks', 'task_scores']
    return tmp / 'tasks'

def _rollouts(offline_tasks: Path, run_dir: Path, env: dict, *extra) -> tuple[dict, dict]:
    shutil.copytree(offline_tasks, run_dir)
    summary = _run(run_dir, env, '--stages', 'trajectories,rewards', *extra)
    return summary, _card(run_dir)

def _check_rewards(run_dir: Path, card: dict):
    "No trajectory passes: a judge answer that does not parse makes its dimension unknown."
    st, judge = card['stages'], _by_client(card)['judge']
    assert st['rewards']['inputs'] == st['trajectories']['kept'] > 0 and st['rewards']['kept'] == 0
    assert card['status'] == 'no_sft_data' and card['distributions']['rewards'] == []
    drops = [e for e in read_entries(run_dir / '06_rewards') if e['status'] == 'dropped']
    unknown = [set(e['detail'].split(',')) for e in drops if e['reason'] == 'reward_unknown']
    assert len(unknown) == st['rewards']['dropped'].get('reward_unknown', 0) > 0
    assert all(u and u <= set(DIMENSIONS) for u in unknown)
    for dim in ('QU', 'QP'):                       # one request per trajectory for each of these
        assert judge[REWARD_TAGS[dim]]['requests'] == st['rewards']['inputs']
        assert sum(dim in u for u in unknown) == _failures(judge, REWARD_TAGS[dim]), dim
    fa_failures = sum(_failures(judge, REWARD_TAGS[k]) for k in ('FA_corr', 'FA_summ'))
    assert fa_failures >= sum('FA' in u for u in unknown)

def test_agent_emulator_and_judge_on_the_server(vllm_url, offline_tasks, tmp_path):
    "The random agent answers with text (or a malformed call the parser rejects): episodes end."
    settings = _settings(tmp_path, vllm_url)
    summary, card = _rollouts(offline_tasks, tmp_path / 'agent', _env(settings, vllm_url))
    st, agent = card['stages']['trajectories'], _by_client(card)['teacher']['astra.agent']
    assert st['inputs'] == 4                                            # 4 servers x 1 task
    assert agent['requests'] >= st['inputs'] and agent['completion_tokens'] > 0
    assert set(st['dropped']) <= {'max_turns', 'timeout', 'error'}, st
    _check_rewards(tmp_path / 'agent', card)
    routes = card['distributions']['tool_calls_by_route']
    emulator = _by_client(card).get('tool_emulator', {}).get('astra.tool_emulator', {'requests': 0})
    assert emulator['requests'] <= routes.get('emulated', 0)
    print('agent on vLLM:', _counts(card), routes, summary['wall_s'], 's')

def test_real_mcp_tools_and_the_emulator_on_the_server(vllm_url, offline_tasks, tmp_path):
    "The offline agent calls tools; an emulator answer that does not parse is an error result."
    settings = _settings(tmp_path, vllm_url, roles=('judge',), dead_default=False)  # offline agent
    summary, card = _rollouts(offline_tasks, tmp_path / 'tools', _env(settings, vllm_url),
                              '--set', 'allow_offline_roles=true')     # the offline agent, on purpose
    d, emulator = card['distributions'], _by_client(card)['tool_emulator']
    # the run's ledger: the offline stages' shared client and this run's client per role
    assert {'teacher', 'judge', 'tool_emulator'} <= set(_by_client(card))
    assert d['tool_calls_by_route']['emulated'] > 0
    if (REPO / '.venv-mcp-servers' / 'bin' / 'mcp-server-sqlite').exists():
        assert d['tool_calls_by_route']['mcp'] > 0
    # each emulator request is an emulated answer or a counted failure (repeats are answered once)
    requests = emulator['astra.tool_emulator']['requests']
    failed = d['emulator'].get('emulator_failures', 0)
    assert d['emulator'].get('emulated', 0) + failed == requests > 0
    assert failed == _failures(emulator, 'astra.tool_emulator')
    _check_rewards(tmp_path / 'tools', card)
    print('emulator and judge on vLLM:', _counts(card), d['tool_calls_by_route'], d['emulator'],
          summary['wall_s'], 's')

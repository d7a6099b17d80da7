"""ASTRA's reward is one function in the recipe and in the trainer: on the recipe's own RL rows, the
environment checks' rewards (oracle, do-nothing, spammer) equal what `compute_score` gives for the same
episodes run in the row's environment; each reward ablation file changes what `compute_score` gives;
a correct call with another surface form (explicit defaults, other case) scores 1.0 in both places,
and a policy that only calls the last hop (whose result echoes the first hop's answer) stays below
the oracle."""
import asyncio, json
from pathlib import Path
import pyarrow.parquet as pq
import pytest
from envsynth.astra.f1_reward import AstraF1Reward, astra_f1
from envsynth.astra.distractors import SpamPolicy
from envsynth.astra.rl_recipe import read_params, reward_spec, run_astra_rl
from envsynth.pipeline import read_records
from envsynth.rollout import DoNothingPolicy, OraclePolicy
from envsynth.schema import Action, Task
from envsynth.train.rl import EPISODE_KEY, compute_score, row_task, run_row_episode

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[1]
ABLATIONS = REPO / 'papers_repro' / 'astra' / 'ablations'

@pytest.fixture(scope='module')
def astra_rows(tmp_path_factory):
    "An ASTRA RL smoke run: its folder, its train and val rows, and the recipe's checks by task id."
    run_dir = tmp_path_factory.mktemp('astra-rl')
    card = asyncio.run(run_astra_rl(read_params(REPO / 'papers_repro/astra/rl_smoke.yaml'), run_dir))
    assert card['status'] == 'ok', card['status']
    rows = {part: pq.read_table(run_dir / '09_rl_data' / f'{part}.parquet').to_pylist()
            for part in ('train', 'val')}
    checks = {rec['instance']['id']: rec['checks'] for rec in read_records(run_dir / '08_mix')}
    return run_dir, rows, checks

@pytest.fixture(scope='module')
def sandbox():
    from envsynth.sandbox import SandboxPool
    with SandboxPool(size=2) as pool: yield pool

def run(row, policy, run_dir, sandbox):
    return asyncio.run(run_row_episode(row, policy, row['agent_name'], env_root=run_dir, sandbox=sandbox))

def trainer(row, episode, spec=None) -> dict:
    extra = row['extra_info'] | {EPISODE_KEY: episode.model_dump_json()}
    if spec is not None: extra['reward_spec'] = spec.to_json()
    return asyncio.run(compute_score(row['data_source'], '', row['reward_model']['ground_truth'], extra))

def all_rows(astra_rows):
    _, rows, _ = astra_rows
    return rows['train'] + rows['val']

def test_validation_rows_are_never_training_rows(astra_rows):
    _, rows, checks = astra_rows
    train = {r['extra_info']['task_id'] for r in rows['train']}
    val = {r['extra_info']['task_id'] for r in rows['val']}
    assert train and val and not train & val and train | val == set(checks)
    assert {r['extra_info']['split'] for r in rows['val']} == {'val'}

def test_recipe_checks_equal_compute_score_on_the_exported_rows(astra_rows, sandbox):
    "For every row: the oracle, do-nothing and spammer rewards the recipe recorded == compute_score."
    run_dir, _, checks = astra_rows
    for row in all_rows(astra_rows):
        task, recorded = row_task(row), checks[row['extra_info']['task_id']]
        assert json.loads(row['extra_info']['reward_spec']) == {'paper': 'astra', 'mode': 'f1', 'eps': 1e-08, 'conduct': None}
        for name, policy in (('oracle', OraclePolicy(task)), ('do_nothing', DoNothingPolicy(task)),
                             ('spammer', SpamPolicy(task))):
            ep = run(row, policy, run_dir, sandbox)
            got = trainer(row, ep)
            assert got['score'] == recorded[name]['reward'], (task.id, name, got, recorded[name])
            assert (got['recall'], got['precision']) == (recorded[name]['recall'], recorded[name]['precision'])

@pytest.mark.parametrize('ablation, mode', [('rl_recall_only.yaml', 'recall'),
                                            ('rl_precision_only.yaml', 'precision')])
def test_each_reward_ablation_changes_the_trainers_reward(astra_rows, sandbox, ablation, mode):
    "The ablation's spec goes into the rows; compute_score then scores the spammer differently."
    run_dir, _, _ = astra_rows
    spec = reward_spec(read_params(ABLATIONS / ablation))
    assert spec == AstraF1Reward(mode=mode)
    row = all_rows(astra_rows)[0]
    spam = run(row, SpamPolicy(row_task(row)), run_dir, sandbox)
    f1, ablated = trainer(row, spam)['score'], trainer(row, spam, spec)['score']
    assert ablated != f1
    assert ablated == (1.0 if mode == 'recall' else trainer(row, spam)['precision'])

def surface_variant(action: Action, tools: dict) -> Action:
    "The same call written differently: every optional parameter with a default given explicitly, strings lower-cased."
    props = tools[action.name]['function']['parameters'].get('properties', {})
    args = {k: v.lower() if isinstance(v, str) else v for k, v in action.arguments.items()}
    args |= {k: s['default'] for k, s in props.items() if k not in args and 'default' in s}
    return Action(name=action.name, arguments=args)

def test_a_correct_call_in_another_surface_form_scores_1_in_both_places(astra_rows, sandbox):
    run_dir, _, _ = astra_rows
    changed = 0
    for row in all_rows(astra_rows):
        task = row_task(row)
        tools = {t['function']['name']: t for t in json.loads(row['extra_info']['env_json'])['tools']}
        variants = [surface_variant(a, tools) for a in task.gold_actions]
        changed += sum(v != a for v, a in zip(variants, task.gold_actions))
        ep = run(row, OraclePolicy(variants), run_dir, sandbox)
        assert ep.info['tool_errors'] == 0, task.id
        assert astra_f1(AstraF1Reward(), task, ep).score == 1.0 == trainer(row, ep)['score'], task.id
    assert changed >= len(all_rows(astra_rows))          # every row had calls written differently

def test_calling_only_the_last_hop_stays_below_the_oracle(astra_rows, sandbox):
    "n calls of the last hop's tool: its result may echo earlier answers, which were its input."
    run_dir, _, _ = astra_rows
    multi_hop = [r for r in all_rows(astra_rows) if len({s.hop for s in row_task(r).sub_questions if s.needs_tool}) > 1]
    assert multi_hop
    for row in multi_hop:
        task = row_task(row)
        last = task.gold_actions[-1]
        ep = run(row, OraclePolicy([last] * len(task.gold_actions)), run_dir, sandbox)
        assert trainer(row, ep)['score'] < 1.0, task.id

"""EnvFactory's reward is one function carried in the RL row: on the recipe's own trajectories the reward the recipe
computed equals what verl's compute_score gives on the exported row; each reward ablation changes what compute_score
gives; a scheduled α travels in the training rows in order; bad spec values fail loudly."""
import asyncio, json, shutil, subprocess, sys
from pathlib import Path
import pytest
import yaml
from pydantic import ValidationError
from test_envfactory_recipe import SMOKE, shared_smoke_run

pytestmark = pytest.mark.timeout(600)
ABLATIONS = Path(SMOKE).parent / 'ablations'

@pytest.fixture(scope='module')
def smoke(tmp_path_factory):
    return shared_smoke_run(tmp_path_factory)

def _rows(run_dir: Path, name: str) -> list[dict]:
    import pyarrow.parquet as pq
    path = run_dir / '06_data' / f'{name}.parquet'
    return pq.read_table(path).to_pylist() if path.exists() else []

def _score(row: dict, traj: dict | str) -> dict:
    from envsynth.train.rl import compute_score
    episode = traj if isinstance(traj, str) else json.dumps(traj)
    extra = row['extra_info'] | {'envsynth_episode': episode}          # as the agent loop hands it over
    return asyncio.run(compute_score(row['data_source'], '', row['reward_model']['ground_truth'], extra))

def _solutions(run_dir: Path) -> list[dict]:
    from envsynth.pipeline import read_records
    return read_records(run_dir / '05_solutions')

def test_recipe_reward_equals_compute_score_on_the_exported_row(smoke):
    from envsynth.envfactory.recipe import read_params, reward_spec
    from envsynth.envfactory.reward import envfactory_reward_of
    from envsynth.schema import Task, Trajectory
    run_dir, _ = smoke
    train, val = _rows(run_dir, 'rl_train'), _rows(run_dir, 'rl_val')
    assert train and val and not {r['extra_info']['task_id'] for r in train} & {r['extra_info']['task_id'] for r in val}
    by_task = {r['extra_info']['task_id']: r for r in train + val}
    spec, checked = reward_spec(read_params(SMOKE)), 0
    for sol in _solutions(run_dir):
        task, row = Task.model_validate(sol['task']), by_task[sol['task']['id']]
        got = _score(row, sol['trajectory'])                           # the kept trajectory: the recipe's own score of it
        assert got['score'] == sol['reward']['score'] and got['paper'] == 'envfactory'
        assert all(got[k] == v for k, v in sol['reward']['parts'].items()), (got, sol['reward'])
        for traj in sol['candidate_trajectories']:                     # every candidate the recipe scored
            mine = envfactory_reward_of(spec, task, Trajectory.model_validate(traj))
            assert _score(row, traj)['score'] == mine.score
            checked += 1
    assert checked >= len(by_task)
    card = json.loads((run_dir / 'data_card.json').read_text())['rows']
    assert (card['rl_train_rows'], card['rl_val_rows']) == (len(train), len(val)) and card['alpha_schedule'] is None

def _reward_overrides(path: Path) -> dict:
    from envsynth.envfactory.reward import EnvFactoryReward
    keys = set(EnvFactoryReward.model_fields) | {'alpha_end', 'length_cap'}
    return {k: v for k, v in (yaml.safe_load(path.read_text()).get('overrides') or {}).items() if k in keys}

def test_each_reward_ablation_changes_compute_score(smoke):
    "A kept trajectory whose end state is not the gold one (R_traj = 1, R_state = 0): default, α = 0 and α = 1 differ."
    from envsynth.data import rl_row
    from envsynth.envfactory.recipe import read_params, reward_spec
    from envsynth.schema import Task
    run_dir, _ = smoke
    sol = _solutions(run_dir)[0]
    task = Task.model_validate(sol['task'])
    exported = next(r for r in _rows(run_dir, 'rl_train') + _rows(run_dir, 'rl_val') if r['extra_info']['task_id'] == task.id)
    tools = json.loads(exported['extra_info']['env_json'])['tools']
    traj = sol['trajectory'] | {'final_state_hash': 'elsewhere'}
    files = {p.stem: _reward_overrides(p) for p in sorted(ABLATIONS.glob('*.yaml'))}
    reward_files = {k: v for k, v in files.items() if v}
    assert set(reward_files) == {'alpha_0', 'alpha_1'}, files
    scores = {}
    for name, over in {'default': {}, **reward_files}.items():
        row = rl_row(task, tools, data_source='envfactory', reward=reward_spec(read_params(SMOKE, **over)))
        out = _score(row, traj)
        assert (out['r_traj'], out['r_state']) == (1.0, 0.0)
        scores[name] = out['score']
    p_len = _score(rl_row(task, tools, data_source='envfactory', reward=reward_spec(read_params(SMOKE))), sol['trajectory'])['length_penalty']
    assert scores == pytest.approx({'default': 0.5 - p_len, 'alpha_0': 0.0 - p_len, 'alpha_1': 1.0 - p_len})

def test_a_scheduled_alpha_travels_in_the_training_rows(smoke, tmp_path):
    from envsynth.envfactory.recipe import read_params, rl_overrides, train_order, train_specs
    from envsynth.train.rl import get_rl_preset
    run_dir, _ = smoke
    batch = get_rl_preset('envfactory').train_batch_size
    specs, schedule = train_specs(read_params(SMOKE, alpha=0.2, alpha_end=0.8), 3 * batch + 5)
    alphas = [s.alpha for s in specs]
    assert alphas == sorted(alphas) and alphas[0] == 0.2 and len(set(alphas)) == 4
    assert [s.schedule.step for s in specs] == [i // batch for i in range(len(specs))]
    assert schedule['total_steps'] == 3 and schedule['verl'] == ['data.shuffle=False', 'trainer.total_epochs=1'] == rl_overrides(specs)
    assert train_order(['a', 'b', 'c'], 2, 0) == train_order(['c', 'b', 'a'], 2, 0) and sorted(train_order(['a', 'b', 'c'], 2, 0)) == list('aabbcc')
    run = tmp_path / 'run'             # the smoke run's rows re-exported with a schedule (same α at the start: solutions kept)
    shutil.copytree(run_dir, run)
    r = subprocess.run([sys.executable, '-m', 'envsynth.envfactory.recipe', '--run-dir', str(run), '--params', SMOKE,
                        '--set', 'alpha_end=1.0'], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    train, val = _rows(run, 'rl_train'), _rows(run, 'rl_val')
    got = [json.loads(x['extra_info']['reward_spec']) for x in train]
    assert [g['schedule']['position'] for g in got] == [x['extra_info']['index'] for x in train] == list(range(len(train)))
    assert [g['alpha'] for g in got] == sorted(g['alpha'] for g in got) and got[0]['alpha'] == 0.5 and got[0]['schedule']['end'] == 1.0
    assert all(json.loads(x['extra_info']['reward_spec'])['schedule'] is None for x in val)
    card = json.loads((run / 'data_card.json').read_text())['rows']
    assert card['alpha_schedule']['verl'] == ['data.shuffle=False', 'trainer.total_epochs=1']

@pytest.mark.parametrize('bad', [{'alpha': 1.5}, {'alpha': -0.1}, {'gamma': -1}, {'alpah': 0.5}, {'paper': 'astra'}])
def test_bad_spec_values_fail_loudly(bad, smoke):
    from envsynth.data import rl_row
    from envsynth.envfactory.reward import EnvFactoryReward
    from envsynth.train.rl import RLError, parse_reward_spec
    with pytest.raises(ValidationError): EnvFactoryReward(**bad)
    with pytest.raises(RLError): parse_reward_spec({'paper': 'envfactory', **bad} if 'paper' not in bad else bad | {'alpha': 2})
    run_dir, _ = smoke
    row = _rows(run_dir, 'rl_train')[0]
    spec = json.loads(row['extra_info']['reward_spec']) | bad
    if 'paper' in bad: spec['alpha'] = 2
    row['extra_info']['reward_spec'] = json.dumps(spec)
    with pytest.raises(Exception, match='alpha|gamma|alpah|paper|Extra|extra'): _score(row, _solutions(run_dir)[0]['trajectory'])

def test_recipe_parameters_refuse_bad_reward_values():
    from envsynth.envfactory.recipe import read_params
    for bad in ({'alpha': 1.5}, {'alpha_end': 2}, {'gamma': -1}, {'val_fraction': 1}, {'rl_preset': 'nope'}, {'alpah': 0.5}):
        with pytest.raises(ValueError): read_params(SMOKE, **bad)

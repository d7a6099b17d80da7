"""`python -m envsynth.train.grpo`, the single-node GRPO trainer of nbs/train/05_rl_learns.ipynb, as `slurm/rl.sbatch`
runs it: `train` on a tiny random model (one GRPO step on the library environment's training tasks, about 20 s on
2 CPU cores), its errors on bad input, and `verl-command` (the preset's verl command line the GPU branch runs).

The task family of the experiment (`row_tasks` over the issue tracker's database) is checked here: every task replays
to its gold state, the held-out issues never appear in a training task, and the split is the same on every call.

The measured experiment (SFT against SFT + GRPO on held-out tasks, several seeds) is the notebook's `full` size, far
too long for a test; `test_notebook_test_size_runs_every_cell` runs all of the notebook's cells at the `test` size."""
import json, subprocess, sys
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]
PY = str(Path(sys.executable))


@pytest.fixture(scope='module')
def tiny_model(tmp_path_factory):
    from envsynth.data import sft_text
    from envsynth.train.curated_data import oracle_trajectories
    from envsynth.train.sft import build_tiny_qwen3_on
    texts = [sft_text(t).text for t in oracle_trajectories(['library'])]
    return build_tiny_qwen3_on(texts, tmp_path_factory.mktemp('tiny'), vocab_size=1024, hidden_size=32, layers=1, heads=2)


def _grpo(*args, timeout=300):
    return subprocess.run([PY, '-m', 'envsynth.train.grpo', *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_train_one_step_writes_model_and_history(tiny_model, tmp_path):
    r = _grpo('train', '--model', tiny_model, '--out', tmp_path / 'rl', '--envs', 'library', '--steps', '1', '--prompts-per-step', '1',
              '--group-size', '2', '--max-new-tokens', '8', '--max-turns', '1', '--max-rounds', '2')
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads((tmp_path / 'rl' / 'grpo_result.json').read_text())
    (step,) = result['history']
    assert step['rollouts'] in (2, 4) and step['rounds'] in (1, 2) and 0 <= step['reward'] <= 1 and 0 <= step['success'] <= 1
    assert (step['loss'] is None) == (not step['trained'])
    assert (tmp_path / 'rl' / 'final' / 'model.safetensors').exists() and result['final_dir'] == str(tmp_path / 'rl' / 'final')
    saved = json.loads((tmp_path / 'rl' / 'grpo_history.json').read_text())
    assert saved['settings']['group_size'] == 2 and saved['history'] == result['history']


def test_train_on_issue_moves(tiny_model, tmp_path):
    r = _grpo('train', '--model', tiny_model, '--out', tmp_path / 'rl', '--tasks', 'issue-moves', '--steps', '1',
              '--prompts-per-step', '1', '--group-size', '2', '--max-new-tokens', '8', '--max-turns', '1', '--max-rounds', '1')
    assert r.returncode == 0, r.stderr[-3000:]
    (step,) = json.loads((tmp_path / 'rl' / 'grpo_result.json').read_text())['history']
    assert step['rollouts'] == 2 and step['groups'] == 1 and step['informative_groups'] in (0, 1)


@pytest.mark.parametrize('args, message', [
    (['--envs', 'nowhere'], "no curated environment 'nowhere'"),
    (['--group-size', '1'], 'group of at least 2'),
    (['--heldout-per-env', '7'], 'too few'),
    (['--tasks', 'nope'], 'invalid choice'),
])
def test_train_rejects_bad_input(tiny_model, tmp_path, args, message):
    r = _grpo('train', '--model', tiny_model, '--out', tmp_path / 'rl', *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr[-2000:]
    assert not (tmp_path / 'rl' / 'final').exists()


@pytest.fixture(scope='module')
def issue_moves():
    from envsynth.train.grpo import ISSUE_MOVES, row_tasks
    return row_tasks('issue_tracker', ISSUE_MOVES)


def test_row_tasks_replay_to_their_gold_state(issue_moves):
    from envsynth.env_library import load_curated
    train, held = issue_moves
    env = load_curated('issue_tracker')
    with env.reset() as ep: seed_hash = ep.state_hash()
    for task in train[::10] + held[::5]:
        (call,) = task.gold_actions
        assert call.name == 'move_issue_status' and call.arguments['issue_key'] in task.instruction
        assert call.arguments['new_status'] in task.instruction and task.tools == ['move_issue_status']
        results, final = env.run_actions(task.gold_actions, task)
        assert all(r.ok for r in results) and final == task.gold_state_hash != seed_hash


def test_row_tasks_heldout_issues_are_disjoint_and_split_is_deterministic(issue_moves):
    from envsynth.train.grpo import ISSUE_MOVES, row_tasks
    train, held = issue_moves
    assert len(train) >= 60 and len(held) >= 20
    key = lambda t: t.gold_actions[0].arguments['issue_key']
    assert not {key(t) for t in train} & {key(t) for t in held}
    assert len({t.id for t in train + held}) == len(train) + len(held)
    again_train, again_held = row_tasks('issue_tracker', ISSUE_MOVES)
    assert [t.model_dump() for t in again_train] == [t.model_dump() for t in train]
    assert [t.model_dump() for t in again_held] == [t.model_dump() for t in held]
    other_train, other_held = row_tasks('issue_tracker', ISSUE_MOVES, heldout_fraction=0.5)
    assert len(other_held) > len(held) and {t.id for t in held} <= {t.id for t in other_held}


def test_row_tasks_rejects_bad_input():
    from envsynth.train.grpo import ISSUE_MOVES, RLError, RowSkill, row_tasks
    with pytest.raises(RLError, match='no curated environment'): row_tasks('nowhere', ISSUE_MOVES)
    with pytest.raises(RLError, match='heldout_fraction'): row_tasks('issue_tracker', ISSUE_MOVES, heldout_fraction=0)
    bad = RowSkill('x', 'tickets', 'move_issue_status', ('{issue_key}',), lambda k, r: {'issue_key': k})
    with pytest.raises(RLError, match="no table 'tickets'"): row_tasks('issue_tracker', [bad])


def test_verl_command_is_the_preset(tmp_path):
    r = _grpo('verl-command', '--preset', 'synthagent', '--job-dir', tmp_path / 'job', '--model', '/models/sft', '--train-files', '/d/train.parquet',
              '--val-files', '/d/val.parquet', '--n-gpus', '8', '--nnodes', '2')
    assert r.returncode == 0, r.stderr[-2000:]
    argv = r.stdout.splitlines()
    assert argv[:3] == ['python', '-m', 'verl.trainer.main_ppo']
    for want in ('algorithm.adv_estimator=grpo', 'actor_rollout_ref.rollout.name=vllm', 'actor_rollout_ref.rollout.n=16',
                 'actor_rollout_ref.model.path=/models/sft', 'trainer.resume_mode=auto', 'trainer.nnodes=2', 'trainer.n_gpus_per_node=8',
                 f'trainer.default_local_dir={tmp_path / "job" / "checkpoints"}'):
        assert want in argv, want
    assert (tmp_path / 'job' / 'agent_loops.yaml').exists() and (tmp_path / 'job' / 'envsynth_verl_entry.py').exists()
    bad = _grpo('verl-command', '--preset', 'nope', '--job-dir', tmp_path / 'job2', '--model', 'm', '--train-files', 't', '--val-files', 'v')
    assert bad.returncode == 2 and "no RL preset 'nope'" in bad.stderr


@pytest.mark.slow
def test_notebook_test_size_runs_every_cell(tmp_path):
    out = tmp_path / 'learns'; out.mkdir()
    res = subprocess.run([str(Path(sys.executable).parent / 'papermill'), 'nbs/train/05_rl_learns.ipynb', str(out / 'run.ipynb'),
                          '-p', 'size', 'test', '-p', 'out_dir', str(out), '--cwd', 'nbs/train', '-k', 'python3', '--no-progress-bar'],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    r = json.loads((out / 'results.json').read_text())
    assert set(r['sft']) == {'train', 'heldout'} and list(r['runs']) == ['0'] and len(r['runs']['0']['history']) == 1
    assert len(r['train_tasks']) == 6 and len(r['heldout_tasks']) == 3 and not set(r['train_tasks']) & set(r['heldout_tasks'])
    assert set(r['control']) == {'train', 'heldout'} and {'informative_groups', 'groups'} <= set(r['runs']['0']['history'][0])

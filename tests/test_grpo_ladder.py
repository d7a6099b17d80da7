"""nbs/train/06_grpo_ladder.ipynb (envsynth.train.grpo_ladder), the GRPO sanity ladder: its task family and reward, and
the whole experiment at its `test` size (start checkpoint, GRPO, the shuffled-reward control, the more-SFT control,
measured on training and held-out tasks). The measured `full` run is far too long for a test; its results are in
benchmarks/results/grpo_ladder_cpu.json and the notebook. About 60 s on 2 cores."""
import json
from envsynth.train.grpo_ladder import (LADDER_SIZES, choice_reward, choice_tasks, answer_text, grpo_choices,
                                        ladder_experiment, start_checkpoint)


def test_reward_is_the_right_tool_and_nothing_else():
    train, held = choice_tasks()
    assert len({t.tool for t in train}) == 4 and len(held) == 48
    t = train[0]
    good = answer_text(t)
    assert choice_reward(t, good) == 1.0
    assert choice_reward(t, good.replace(t.tool, 'get_currency' if t.tool != 'get_currency' else 'get_weather')) == 0.0
    assert choice_reward(t, good.replace('</tool_call>', '')) == 0.0           # unterminated: strict parse refuses
    assert choice_reward(t, good.replace(t.tool, 'get_time')) == 0.0           # unknown tool


def test_experiment_test_size_runs_every_piece(tmp_path):
    R = ladder_experiment(LADDER_SIZES['test'], tmp_path)
    assert json.loads((tmp_path / 'results.json').read_text())['start'] == R['start']
    run = R['runs'][0]
    assert set(run) == {'grpo', 'shuffled', 'sft'}
    for name in ('grpo', 'shuffled'):
        (h,) = run[name]['history']
        assert 0 <= h['success'] <= 1 and (h['loss'] is None) == (not h['trained'])
    for scores in (R['start'], run['sft'], run['grpo']):
        assert all(0 <= scores[s][m] <= 1 for s in ('train', 'heldout') for m in ('sampled', 'greedy'))


def test_shuffled_rewards_keep_the_true_success(tmp_path):
    """The control trains on permuted rewards but records what its rollouts really earned."""
    train, _ = choice_tasks()
    start = start_checkpoint(train, tmp_path, sft_steps=1, batch=2)
    _, _, a = grpo_choices(start, train, steps=1, prompts_per_step=2, group_size=2, max_rounds=1, seed=3)
    _, _, b = grpo_choices(start, train, steps=1, prompts_per_step=2, group_size=2, max_rounds=1, seed=3,
                           shuffle_rewards=True)
    assert a[0]['success'] == b[0]['success']                                  # same samples, same true reward

"""nbs/train/06_grpo_ladder.ipynb (envsynth.train.grpo_ladder), the GRPO sanity ladder: its task family and reward, and
the whole experiment at its `test` size (start checkpoint, GRPO, the shuffled-reward control, SFT on the start's own
samples, SFT on the oracle answers, measured on training and held-out tasks). The measured `full` run is too long for a test; its results are in
benchmarks/results/grpo_ladder_cpu.json and the notebook. The trainer's pieces (advantages, the loss mask, log-probs at
the sampling temperature), balanced prompts and the confusion matrix are checked on an untrained one-layer model.
About 40-55 s of CPU time; the wall time grows with the machine's load."""
import json
import pytest
from envsynth.train.grpo_ladder import (LADDER_SIZES, choice_reward, choice_tasks, answer_text, grpo_choices, prompt_text,
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


@pytest.fixture(scope='module')
def experiment(tmp_path_factory):
    "The whole experiment at its `test` size, once for the module: its folder and results."
    out = tmp_path_factory.mktemp('ladder')
    return out, ladder_experiment(LADDER_SIZES['test'], out)


def test_experiment_test_size_runs_every_piece(experiment):
    out, R = experiment
    assert json.loads((out / 'results.json').read_text())['start'] == R['start']
    run = R['runs'][0]
    assert set(run) == {'grpo', 'shuffled', 'own_sft', 'oracle_sft'}
    for name in ('grpo', 'shuffled', 'own_sft'):
        (h,) = run[name]['history']
        assert 0 <= h['success'] <= 1 and (h['loss'] is None) == (not h['trained'])
    for scores in (R['start'], run['oracle_sft'], run['own_sft'], run['grpo']):
        assert all(0 <= scores[s][m] <= 1 for s in ('train', 'heldout') for m in ('sampled', 'greedy'))
        assert all(abs(sum(row['choice']) - 1) < 1e-2 for row in scores['confusion'].values())


def test_shuffled_rewards_keep_the_true_success(experiment):
    """The control trains on permuted rewards but records what its rollouts really earned."""
    train, _ = choice_tasks()
    start = start_checkpoint(train, experiment[0] / 'start')                  # the experiment's: reused, not trained
    _, _, a = grpo_choices(start, train, steps=1, prompts_per_step=2, group_size=2, max_rounds=1, seed=3)
    _, _, b = grpo_choices(start, train, steps=1, prompts_per_step=2, group_size=2, max_rounds=1, seed=3,
                           shuffle_rewards=True)
    assert a[0]['success'] == b[0]['success']                                  # same samples, same true reward


def test_own_sample_sft_asks_grpos_prompts_and_never_sees_a_reward(experiment, monkeypatch):
    """The reward-free control draws the prompts GRPO draws (same seed) and trains the same whatever the reward."""
    import torch
    import envsynth.train.grpo_ladder as L
    train, _ = choice_tasks()
    start = start_checkpoint(train, experiment[0] / 'start')
    seen, real = [], L.sample_choices
    def spy(model, tokenizer, tasks, n, temperature):
        seen.append([t.id for t in tasks])
        return real(model, tokenizer, tasks, n, temperature)
    monkeypatch.setattr(L, 'sample_choices', spy)
    size = dict(steps=2, prompts_per_step=2, group_size=2, balanced=True, seed=3)
    L.grpo_choices(start, train, max_rounds=1, **size)
    asked, seen[:] = list(seen), []
    a, _, _ = L.own_sft_choices(start, train, **size)
    assert seen == [p for p in asked for _ in range(2)]                       # the start's samples, then the policy's
    monkeypatch.setattr(L, 'choice_reward', lambda task, text: 1.0)           # every answer rewarded
    b, _, h = L.own_sft_choices(start, train, **size)
    assert h[0]['start_success'] == 1.0 and all(r['trained'] for r in h)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))   # the update never saw it
    assert not all(torch.equal(x, y) for x, y in zip(a.parameters(), L.load_policy_model(start)[0].parameters()))


def test_advantages_are_zero_without_spread_and_centred_with_it():
    from envsynth.train.rl import grpo_advantages
    flat, spread = grpo_advantages([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    assert flat == [0.0, 0.0, 0.0]                                            # no spread, no signal
    assert spread[0] > 0 > spread[1] == spread[2] == spread[3] and abs(sum(spread)) < 1e-9


@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    "A random one-layer Qwen3 with a tokenizer of the family's texts (no training: seconds)."
    from envsynth.train.sft import build_tiny_qwen3_on
    from envsynth.train.grpo import load_policy_model
    train, _ = choice_tasks()
    d = build_tiny_qwen3_on([prompt_text(t) + answer_text(t) for t in train[:8]], tmp_path_factory.mktemp('tiny'),
                            vocab_size=300, hidden_size=16, layers=1, heads=2, seed=0)
    return (*load_policy_model(d), train)


def test_log_probs_are_those_of_the_sampling_distribution_at_its_temperature(tiny):
    """The ratio's log-probs must score what the sampler drew from: logits / temperature, as `generate` samples."""
    import torch
    from envsynth.train.grpo import Rollout, response_log_probs
    model, tok, train = tiny
    prompt = tok(prompt_text(train[0]))['input_ids']
    torch.manual_seed(0)
    g = model.generate(torch.tensor([prompt]), max_new_tokens=6, do_sample=True, temperature=0.5, top_k=0, top_p=1.0,
                       output_scores=True, return_dict_in_generate=True, pad_token_id=tok.pad_token_id)
    new = g.sequences[0, len(prompt):].tolist()
    sampled = torch.tensor([torch.log_softmax(s[0].float(), -1)[t].item() for s, t in zip(g.scores, new)])
    r = Rollout('t', prompt, new, [1] * len(new), 0.0, 0.0, None)
    with torch.no_grad():
        assert torch.allclose(response_log_probs(model, [r], temperature=0.5)[0], sampled, atol=1e-4)
        assert not torch.allclose(response_log_probs(model, [r])[0], sampled, atol=1e-2)


def test_the_loss_sees_only_the_masked_in_tokens(tiny):
    """A response with a masked-out tail trains exactly like the response without that tail."""
    import torch
    from envsynth.train.grpo import Rollout, policy_gradient_step
    model, tok, train = tiny
    prompt, answer = tok(prompt_text(train[0]))['input_ids'], tok(answer_text(train[0]))['input_ids']
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    def grads(rollouts, adv):
        policy_gradient_step(model, opt, rollouts, adv, temperature=0.7)
        return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]).clone()
    cut = len(answer) // 2
    full = Rollout('t', prompt, answer, [1] * cut + [0] * (len(answer) - cut), 1.0, 1.0, None)
    short = Rollout('t', prompt, answer[:cut], [1] * cut, 1.0, 1.0, None)
    assert torch.allclose(grads([full], [1.0]), grads([short], [1.0]), atol=1e-6)
    assert grads([full], [1.0]).abs().sum() > 0 and torch.allclose(grads([full], [-1.0]), -grads([full], [1.0]), atol=1e-6)


def test_balanced_rounds_ask_about_every_tool(tiny, monkeypatch):
    """With `balanced`, each round's 4 prompts are one per tool; without, a round may repeat a tool."""
    import envsynth.train.grpo_ladder as L
    model, tok, _ = tiny
    train, _ = choice_tasks()
    seen = []
    def fake_sample(model, tokenizer, tasks, n, temperature):
        seen.append([t.tool for t in tasks])
        return [L.Rollout(t.id, [1], [2], [1], 0.0, 0.0, None) for t in tasks for _ in range(n)]   # no spread
    monkeypatch.setattr(L, 'sample_choices', fake_sample)
    monkeypatch.setattr(L, 'load_policy_model', lambda d: (model, tok))
    _, _, h = grpo_choices('unused', train, steps=5, prompts_per_step=4, group_size=2, max_rounds=2, balanced=True)
    assert len(seen) == 10 and not any(r['trained'] for r in h)              # no spread: never an update
    assert all(sorted(tools) == sorted(L.CHOICE_TOOLS) for tools in seen)
    seen.clear()
    grpo_choices('unused', train, steps=5, prompts_per_step=4, group_size=2, max_rounds=2, seed=1)
    assert any(len(set(tools)) < 4 for tools in seen)                         # random draws repeat a tool


def test_tool_confusion_is_the_four_answers_probabilities(tiny):
    """Its oracle-text probability is the sum of the four oracle answers' probabilities, as the loss scores them."""
    import math, torch
    from envsynth.train.grpo import Rollout, response_log_probs
    from envsynth.train.grpo_ladder import CHOICE_TOOLS, ChoiceTask, tool_confusion
    model, tok, train = tiny
    t = train[0]
    c = tool_confusion(model, tok, [t])
    assert list(c) == [t.tool] and abs(sum(c[t.tool]['choice']) - 1) < 1e-2
    prompt = tok(prompt_text(t))['input_ids']
    with torch.no_grad():
        ps = [math.exp(response_log_probs(model, [Rollout('t', prompt, a, [1] * len(a), 0, 0, None)])[0].sum())
              for a in (tok(answer_text(ChoiceTask('', '', n)))['input_ids'] for n in CHOICE_TOOLS)]
    assert abs(c[t.tool]['oracle_text'] - sum(ps)) < 1e-3
    assert [round(p / sum(ps), 3) for p in ps] == c[t.tool]['choice']

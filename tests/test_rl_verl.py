"""The verl tier of envsynth.train.rl: needs verl 0.9.1, which lives in its own venv (it pins transformers<5.11).

`make test` runs them there through tests/test_rl_verl_tier.py (which builds the venv); by hand:
    tools/make_verl_venv.sh && .venv-verl/bin/python -m pytest tests/test_rl_verl.py
Under any interpreter without verl this module is skipped with that instruction.
"""
import asyncio, importlib.util, json
from pathlib import Path
import pytest
from _verl_loop import build_tiny_model, loop_on_row

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec('verl') is None,
                                 reason='verl is not importable here: tests/test_rl_verl_tier.py '
                                        'runs this module in .venv-verl (by hand: '
                                        '`tools/make_verl_venv.sh && .venv-verl/bin/python -m '
                                        'pytest tests/test_rl_verl.py`)')]

@pytest.fixture(scope='module')
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp('tiny'))

@pytest.mark.parametrize('preset', ['astra', 'synthagent', 'envfactory'])
def test_preset_composes_and_validates(preset, tmp_path):
    from envsynth.train.rl import RL_PRESETS, compose_verl_config, validate_verl_config, write_job_files
    files = write_job_files(tmp_path)
    cfg = compose_verl_config(preset, model='/models/qwen3', train_files='/d/train.parquet', val_files='/d/val.parquet', **files)
    assert validate_verl_config(cfg) == {'reference_model': False, 'critic': False}       # no KL anywhere: no reference model
    p, actor, rollout = RL_PRESETS[preset], cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    assert (rollout.n, cfg.data.train_batch_size, actor.ppo_mini_batch_size) == (p.group_size, p.train_batch_size, p.ppo_mini_batch_size)
    assert (actor.optim.lr, actor.clip_ratio_low, actor.clip_ratio_high) == (p.learning_rate, p.clip_ratio_low, p.clip_ratio_high)
    assert actor.loss_agg_mode == 'token-mean' and actor.use_kl_loss is False and cfg.algorithm.use_kl_in_reward is False
    assert actor.entropy_coeff == 0 and cfg.algorithm.adv_estimator == 'grpo'
    assert rollout.multi_turn.max_tool_response_length == p.max_tool_response_length > 256
    assert (rollout.multi_turn.max_assistant_turns, rollout.multi_turn.max_user_turns) == (p.max_assistant_turns, p.max_user_turns)
    assert (cfg.data.max_prompt_length, cfg.data.max_response_length) == (p.max_prompt_length, p.max_response_length)
    assert rollout.agent.default_agent_loop == p.agent_name
    assert cfg.reward.custom_reward_function.name == 'compute_score' and cfg.reward.custom_reward_function.path == files['entry_file']
    assert cfg.trainer.save_freq == p.save_freq and list(actor.checkpoint.save_contents) == list(p.save_contents)
    if p.adaptive_delta is not None:
        assert cfg.trainer.v1.sampler.custom_sampler.name == 'AdaptiveFillingReplayBuffer'
        assert cfg.trainer.v1.sampler.sampler_kwargs.delta == p.adaptive_delta
    if p.drop_excluded_groups:
        assert cfg.trainer.v1.sampler.custom_sampler.name == 'ExcludingReplayBuffer'
        assert cfg.trainer.v1.sampler.sampler_kwargs.train_batch_size == p.train_batch_size

def test_reward_function_and_sampler_load_by_path(tmp_path):
    "verl loads both from the entry file by name (as main_ppo and the V1 trainer do): the lazy attributes must resolve there."
    import warnings
    from verl.utils.import_utils import load_extern_type
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
    from envsynth.train.rl import write_job_files
    entry = write_job_files(tmp_path)['entry_file']
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', FutureWarning)
        assert asyncio.iscoroutinefunction(load_extern_type(entry, 'compute_score'))
        assert issubclass(load_extern_type(entry, 'AdaptiveFillingReplayBuffer'), ReplayBuffer)
        assert issubclass(load_extern_type(entry, 'ExcludingReplayBuffer'), ReplayBuffer)

def run_loop(tiny_model, tmp_path, recipe, data_source, texts, response_length=4096,
             row_change=None, env_root=None, sandbox=None, empty_think=False, reward=None):
    "Build the loop the way verl's AgentLoopWorker does (YAML registry + hydra.utils.instantiate) and run one row."
    from envsynth.data import rl_row
    from envsynth.env_library import load_curated
    from envsynth.rewards import GoldActionF1Reward, StateHashReward
    bank = load_curated('bank'); task = bank.tasks['bank-lost-card']
    reward = reward or (GoldActionF1Reward() if data_source == 'envsynth' else StateHashReward())
    row = rl_row(task, bank.tools, data_source=data_source, system_prompt='You are a bank agent.', agent_name=recipe,
                 reward=reward)
    if row_change: row = row_change(row)
    out, tok, server = loop_on_row(tiny_model, tmp_path, row, texts, response_length=response_length, env_root=env_root,
                                   sandbox=sandbox, empty_think=empty_think)
    return out, row, tok, server, task

def gold_texts(task):
    from envsynth.formats import render_assistant_turn
    from envsynth.schema import assistant
    return [render_assistant_turn(assistant(tool_calls=[a.to_tool_call(i)])) for i, a in enumerate(task.gold_actions)]

def test_agent_loop_masks_and_reward(tiny_model, tmp_path):
    "ASTRA's loop on a curated task: sampled tokens are mask 1, tool tokens mask 0, and the reward entry point scores the recorded episode."
    from envsynth.train.rl import EPISODE_KEY, compute_score
    from verl.experimental.agent_loop import AgentLoopOutput
    out, row, tok, server, task = run_loop(tiny_model, tmp_path, 'envsynth_astra', 'envsynth', texts := gold_texts(bank_task()) + ['Done: card blocked, new one ordered.'])
    assert isinstance(out, AgentLoopOutput) and len(server.calls) == len(texts)
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
    sampled = [t for t, m in zip(out.response_ids, out.response_mask) if m]
    assert tok.decode(sampled, skip_special_tokens=False) == '<|im_end|>'.join(texts) + '<|im_end|>'
    assert all(lp == -0.25 for lp, m in zip(out.response_logprobs, out.response_mask) if m)
    not_sampled = tok.decode([t for t, m in zip(out.response_ids, out.response_mask) if not m], skip_special_tokens=False)
    assert not_sampled.count('<tool_response>') == len(task.gold_actions) and 'block_card' not in not_sampled.split('<tool_response>')[0]
    assert out.prompt_ids == server.calls[0]
    extra = row['extra_info'] | out.extra_fields
    assert out.extra_fields['termination'] == 'no_tool_call'
    solution = tok.decode(out.response_ids, skip_special_tokens=True)
    from envsynth.rewards import StateHashReward
    for source, spec in (('envsynth', extra['reward_spec']), ('tau2', StateHashReward().to_json())):
        r = asyncio.run(compute_score(source, solution, row['reward_model']['ground_truth'], extra | {'reward_spec': spec}))
        assert r['score'] == pytest.approx(1.0), (source, r)
    assert json.loads(extra[EPISODE_KEY])['final_state_hash'] == task.gold_state_hash

def bank_task():
    from envsynth.env_library import load_curated
    return load_curated('bank').tasks['bank-lost-card']

def test_agent_loop_scripted_user_and_wrong_calls(tiny_model, tmp_path):
    "EnvFactory's loop: a wrong call is answered with an error (mask 0), the scripted user ends the episode, the reward is low."
    from envsynth.train.rl import compute_score
    wrong = '<tool_call>\n{"name": "block_card", "arguments": {"card_id": "K99999", "reason": "lost"}}\n</tool_call>'
    out, row, tok, server, task = run_loop(tiny_model, tmp_path, 'envsynth_envfactory', 'tau2', [wrong, 'I blocked it.'])
    assert sum(out.response_mask) < len(out.response_mask) and len(server.calls) == 2
    r = asyncio.run(compute_score('tau2', '', row['reward_model']['ground_truth'], row['extra_info'] | out.extra_fields))
    assert (r['r_state'], r['n_calls']) == (0.0, 1) and r['score'] == 0.0

def test_agent_loop_sends_the_remaining_budget_as_max_tokens(tiny_model, tmp_path):
    "Each generate call gets max_tokens = response_length - tokens used; at the budget, no call."
    texts = gold_texts(bank_task()) + ['Done: card blocked, new one ordered.']
    out, row, tok, server, task = run_loop(tiny_model, tmp_path, 'envsynth_astra', 'envsynth', texts)
    prompt = len(out.prompt_ids)
    used = [len(c) - prompt for c in server.calls]
    assert [p['max_tokens'] for p in server.params] == [4096 - u for u in used]
    assert all(p['temperature'] == 1.0 for p in server.params)
    out, row, tok, server, task = run_loop(tiny_model, tmp_path, 'envsynth_astra', 'envsynth', texts,
                                           response_length=48)
    assert server.params[0]['max_tokens'] == 48
    assert all(len(c) - prompt + p['max_tokens'] == 48 for c, p in zip(server.calls, server.params))
    assert len(server.calls) < len(texts) and len(out.response_ids) == 48
    assert out.extra_fields['termination'] == 'policy_error'

def test_agent_loop_in_qwen3_non_thinking_mode(tiny_model, tmp_path):
    "empty_think in the YAML entry: every generation prompt ends with the empty think block."
    from envsynth.formats import EMPTY_THINK, render_hermes
    from envsynth.train.rl import EPISODE_KEY
    from envsynth.schema import Trajectory
    texts = gold_texts(bank_task()) + ['Done.']
    out, row, tok, server, task = run_loop(tiny_model, tmp_path, 'envsynth_astra', 'envsynth', texts,
                                           empty_think=True)
    prompts = [tok.decode(c, skip_special_tokens=False) for c in server.calls]
    assert all(p.endswith('<|im_start|>assistant\n' + EMPTY_THINK) for p in prompts)
    episode = Trajectory.model_validate_json(out.extra_fields[EPISODE_KEY])
    full = tok.decode(out.prompt_ids + out.response_ids, skip_special_tokens=False)
    assert full + '\n' == render_hermes(episode.messages, episode.tools, empty_think=True)

def test_agent_loop_runs_a_row_in_its_environment_folder(tiny_model, tmp_path):
    "A row naming an environment folder (as ASTRA's rows do) runs in the sandbox under env_root."
    import shutil
    from envsynth.env_library import environments_dir
    from envsynth.sandbox import SandboxPool
    from envsynth.train.rl import ENV_FOLDER_KEY, compute_score
    run_dir = tmp_path / 'run'
    shutil.copytree(environments_dir() / 'bank', run_dir / '08_mix' / 'envs' / 'bank')
    folder = {ENV_FOLDER_KEY: '08_mix/envs/bank'}
    with_folder = lambda r: r | {'extra_info': r['extra_info'] | folder}
    texts = gold_texts(bank_task()) + ['Done.']
    with SandboxPool(size=1) as pool:
        out, row, tok, server, task = run_loop(tiny_model, tmp_path, 'envsynth_astra', 'envsynth',
                                               texts, row_change=with_folder, env_root=run_dir,
                                               sandbox=pool)
        assert pool.stats['requests'] > 0                      # the tools ran in the sandbox
    truth, extra = row['reward_model']['ground_truth'], row['extra_info'] | out.extra_fields
    r = asyncio.run(compute_score('envsynth', '', truth, extra))
    assert r['score'] == pytest.approx(1.0) and out.extra_fields['termination'] == 'no_tool_call'

def test_adaptive_replay_buffer_keeps_the_surplus(monkeypatch):
    "The sampler adapter on verl's sync ReplayBuffer, TransferQueue faked: std <= delta evicted, surplus carried to the next step."
    import torch
    import transfer_queue as tq
    import envsynth.train.rl as rl
    rewards = {'A': (1, 1), 'B': (0, 1), 'C': (0, 0.05), 'D': (1, 0), 'E': (0, 1)}
    refills = []
    buf = rl.AdaptiveFillingReplayBuffer(trainer_mode='sync', trainer_config={}, max_off_policy_threshold=None, max_off_policy_strategy='drop',
                                         sampler_kwargs={'train_batch_size': 2, 'delta': 0.1, 'buffer_size': 1}, refill_fn=refills.append, poll_interval=0)
    def add(uid, step):
        for s, _ in enumerate(rewards[uid]): buf.partitions['train'][f'{uid}_{s}_0'] = {'status': 'finished'}
        buf.finished_keys['train'].add(uid); buf.prompt_global_steps['train'][uid] = step
    for i, uid in enumerate('ABCDE'): add(uid, i)
    monkeypatch.setattr(buf, '_sync_metadata_from_transfer_queue', lambda: None)
    monkeypatch.setattr(tq, 'kv_batch_get', lambda keys, partition_id, select_fields: {'rm_scores': [torch.tensor([float(rewards[k.split('_')[0]][int(k.split('_')[1])])]) for k in keys]})
    monkeypatch.setattr(tq, 'kv_clear', lambda **kw: None)
    batch, _ = buf.sample(global_steps=1, partition_id='train', batch_size=2)
    assert sorted({k.split('_')[0] for k in batch.keys}) == ['B', 'D']
    assert buf.finished_keys['train'] - {'B', 'D'} == {'E'}           # A and C (std <= 0.1) evicted, E carried over
    rewards['F'] = (0.2, 0.9); add('F', 9)
    buf.finished_keys['train'] -= {'B', 'D'}
    for k in [k for k in buf.partitions['train'] if k[0] in 'BD']: del buf.partitions['train'][k]
    batch, _ = buf.sample(global_steps=2, partition_id='train', batch_size=2)
    assert sorted({k.split('_')[0] for k in batch.keys}) == ['E', 'F']
    assert buf.filler.stats['dropped_low_std'] == 2

def test_grpo_math_matches_verl():
    "The verl-free advantage and clipped token-mean loss equal verl's core_algos on random batches."
    import numpy as np
    import torch
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, compute_policy_loss_vanilla
    from verl.utils.config import omega_conf_to_dataclass
    from envsynth.train.rl import clipped_policy_loss, compose_verl_config, grpo_advantages
    g = torch.Generator().manual_seed(0)
    sizes = [4, 1, 3, 4]
    rewards = [torch.rand(n, generator=g).round(decimals=1).tolist() for n in sizes]
    rewards[3] = [1.0] * 4                                   # a uniform group: advantage 0
    flat, index = sum(rewards, []), np.array(sum([[i] * n for i, n in enumerate(sizes)], []))
    L = 5
    mask = (torch.rand(len(flat), L, generator=g) > 0.3).float(); mask[:, 0] = 1
    token_rewards = torch.zeros(len(flat), L); token_rewards[:, 0] = torch.tensor(flat)
    verl_adv, _ = compute_grpo_outcome_advantage(token_rewards, mask, index)
    ours = torch.tensor(sum(grpo_advantages(rewards), []), dtype=torch.float32)
    assert torch.allclose(verl_adv[:, 0], ours, atol=1e-5)
    actor = omega_conf_to_dataclass(compose_verl_config('synthagent', model='/m', agent_loop_config='a', entry_file='e').actor_rollout_ref.actor)
    old = torch.log(torch.rand(len(flat), L, generator=g) * 0.9 + 0.05)
    new = old + torch.randn(len(flat), L, generator=g) * 0.5
    verl_loss, _ = compute_policy_loss_vanilla(old, new, verl_adv, mask, 'token-mean', actor)
    our_loss = clipped_policy_loss(new, old, verl_adv, mask, actor.clip_ratio_low, actor.clip_ratio_high, actor.clip_ratio_c)
    assert torch.allclose(verl_loss, our_loss, atol=1e-6), (verl_loss, our_loss)

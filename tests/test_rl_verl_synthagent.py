"""SynthAgent's rows under verl 0.9.1 (its own venv, like tests/test_rl_verl.py): the envsynth agent loop runs a recipe
row in its task's mock world (seeded with the demonstrations' map, shared by the rollouts of one GRPO group), a reasoning
row with its code in the sandbox, and compute_score of the recorded episode is the recipe's reward function on it;
ExcludingReplayBuffer loads by path and leaves out the groups holding an excluded rollout.

    PYTHONPATH=lib .venv-verl/bin/python -m pytest -q tests/test_rl_verl_synthagent.py
"""
import asyncio, importlib.util, json, subprocess, sys
from pathlib import Path
import pytest
from _recipe_runs import recipe_smoke_run
from _verl_loop import FakeServerManager, build_tiny_model

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec('verl') is None,
                                 reason='verl is not importable here: tests/test_rl_verl_tier.py '
                                        'runs this module in .venv-verl (by hand: '
                                        '`tools/make_verl_venv.sh && .venv-verl/bin/python -m '
                                        'pytest tests/test_rl_verl_synthagent.py`)')]

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / 'papers_repro' / 'synthagent' / 'smoke.yaml'

@pytest.fixture(scope='module')
def smoke_run(tmp_path_factory):
    return recipe_smoke_run('envsynth.synthagent.recipe', SMOKE, tmp_path_factory.mktemp('sa') / 'run')

def rows_of(run: Path, split: str) -> list[dict]:
    import pyarrow.parquet as pq
    return pq.read_table(run / '08_export' / f'{split}.parquet').to_pylist()

def offline_client():
    from envsynth.llm import LLMClient
    from envsynth.synthagent.offline import offline_synthagent_teacher
    return LLMClient(offline_synthagent_teacher(), 'offline-teacher')

def call_text(name: str, arguments: dict) -> str:
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'

@pytest.fixture(scope='module')
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp('tiny'))

def run_loop(tiny_model, tmp_path, row, texts, uid, **loop_kwargs):
    """The loop built as `_verl_loop.loop_on_row` builds it, run on `row` as a rollout of the GRPO group `uid` (verl passes
    each rollout its non-tensor batch, `uid` included): (output, server)."""
    import hydra
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from envsynth.train.rl import compose_verl_config, write_agent_loop_config
    recipe = row['agent_name']
    cfg = compose_verl_config('synthagent', model=str(tiny_model), agent_loop_config='x', extra=['data.max_response_length=4096'])
    entry = next(e for e in OmegaConf.load(write_agent_loop_config(tmp_path / 'loops.yaml')) if e.name == recipe)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    server = FakeServerManager(tok, texts)
    async def main():
        loop = hydra.utils.instantiate(config=entry, trainer_config=DictConfigWrap(config=cfg), server_manager=server, tokenizer=tok,
                                       processor=None, hf_model_type='qwen3', dataset_cls=None, data_config=DictConfigWrap(cfg.data),
                                       tools=ToolListWrap([]), **loop_kwargs)
        return await loop.run({'temperature': 1.0}, raw_prompt=row['prompt'], extra_info=row['extra_info'],
                              reward_model=row['reward_model'], data_source=row['data_source'], agent_name=recipe, index=0, uid=uid)
    return asyncio.run(main()), server

def score(row, extra_fields, judge=None) -> dict:
    from envsynth.train.rl import compute_score, use_rubric_judge
    use_rubric_judge(judge)
    try: return asyncio.run(compute_score(row['data_source'], '', row['reward_model']['ground_truth'], row['extra_info'] | extra_fields))
    finally: use_rubric_judge(None)

def test_a_group_runs_in_the_seeded_world_and_is_scored_by_the_recipe_reward(smoke_run, tiny_model, tmp_path):
    from envsynth.pipeline import read_records
    from envsynth.rewards import RubricJudge
    from envsynth.schema import Task, ToolResult, Trajectory
    from envsynth.synthagent.recipe import read_params, reward_spec
    from envsynth.synthagent.reward import synthagent_reward
    from envsynth.synthagent.rl_world import world_key, world_store
    from envsynth.train.rl import EPISODE_KEY
    row = next(r for r in rows_of(smoke_run, 'train') if json.loads(r['extra_info']['env_json'])['mock_world']['seed'])
    env = json.loads(row['extra_info']['env_json'])
    seed = env['mock_world']['seed'][0]
    fresh = {**seed['arguments'], **{k: f'{v}-other' for k, v in seed['arguments'].items() if isinstance(v, str)}}
    texts = [call_text(seed['name'], seed['arguments']), call_text(seed['name'], fresh), 'All done. <answer>done</answer>']
    client = offline_client()
    clients = {'user_simulator': client, 'tool_emulator': client}
    runs = [run_loop(tiny_model, tmp_path, row, texts, uid, clients=clients) for uid in ('g1', 'g1', 'g2')]
    episodes = [Trajectory.model_validate_json(out.extra_fields[EPISODE_KEY]) for out, _ in runs]
    tool_answers = [[m.content for m in e.messages if m.role == 'tool'] for e in episodes]
    assert [e.info['termination'] for e in episodes] == ['answer'] * 3 and all(len(a) == 2 for a in tool_answers)
    assert episodes[0].messages[1].content == json.loads(json.dumps(row['prompt']))[-1]['content']   # I verbatim
    assert tool_answers[0][0] == ToolResult.model_validate(seed['result']).content()             # the seed's answer
    task_id = row['extra_info']['task_id']
    keys = [e.info['mock_world']['key'] for e in episodes]
    assert keys == [world_key(task_id, 'g1')] * 2 + [world_key(task_id, 'g2')]
    assert tool_answers[0] == tool_answers[1]                                    # the group shares the world ...
    kinds = [[c['kind'] for c in e.info['mock_world']['calls']] for e in episodes]
    assert kinds[0] == ['semantic', 'new']         # the seed's call is answered from the map M, the other one is new ...
    assert kinds[1] == ['exact', 'exact']          # ... and the group's second rollout reads both answers back
    assert kinds[2] == ['semantic', 'new']         # another group: its own copy of the seeded world
    stats = asyncio.run(world_store().stats(keys[0]))
    assert stats['map_size'] == len(env['mock_world']['seed']) + 1
    # compute_score of the recorded episode is the recipe's reward function on it (same spec, same judge, same task)
    p = read_params(SMOKE)
    tasks = {t['id']: Task.model_validate({k: v for k, v in t.items() if k != 'readings'}) for t in read_records(smoke_run / '05_rubrics')}
    for (out, _), episode in zip(runs, episodes):
        judge = RubricJudge(client, tag='synthagent.rubric_judge', temperature=p.judge_temperature)
        want = asyncio.run(synthagent_reward(reward_spec(p), tasks[task_id], episode, judge=judge))
        got = score(row, out.extra_fields, RubricJudge(client, tag='synthagent.rubric_judge'))
        assert got['paper'] == 'synthagent' and got['rubric_status'] == 'scored'
        assert got['score'] == want.score and all(got[k] == v for k, v in want.parts.items()), (got, want)

def test_a_reasoning_row_runs_its_code_in_the_sandbox_with_no_llm_role(smoke_run, tiny_model, tmp_path):
    from envsynth.sandbox import SandboxPool
    from envsynth.schema import Trajectory
    from envsynth.synthagent.reward import ReasoningAnswerReward, reasoning_answer_reward
    from envsynth.train.rl import EPISODE_KEY, row_task
    row = rows_of(smoke_run, 'reasoning')[0]
    answer = row_task(row).final_answer
    texts = [call_text('code_interpreter', {'code': 'print(6 * 7)'}), f'So the result is <answer>{answer}</answer>']
    with SandboxPool(size=1) as pool:
        (out, _), = [run_loop(tiny_model, tmp_path, row, texts, 'r1', clients={}, sandbox=pool)]
        assert pool.stats['requests'] > 0
    episode = Trajectory.model_validate_json(out.extra_fields[EPISODE_KEY])
    assert next(m.content for m in episode.messages if m.role == 'tool').strip() == '42'
    got = score(row, out.extra_fields)
    want = reasoning_answer_reward(ReasoningAnswerReward(), row_task(row), episode)
    assert (got['paper'], got['score'], got['answer_match']) == ('synthagent_reasoning', want.score, 1.0) and want.score == 1.0

def test_the_loop_refuses_to_start_without_endpoints(smoke_run, tiny_model, tmp_path, monkeypatch):
    "No clients injected and no endpoints in the settings: the loop stops when it is built, naming the roles."
    import os
    from envsynth.settings import get_settings
    from hydra.errors import InstantiationException              # hydra wraps the loop's WorldSpecError
    from envsynth.rewards import RubricJudge
    from envsynth.train.rl import use_rubric_judge
    for k in [k for k in os.environ if k.startswith('ENVSYNTH_LLM')]: monkeypatch.delenv(k)
    (tmp_path / 'none.ini').write_text('')
    monkeypatch.setenv('ENVSYNTH_SETTINGS', str(tmp_path / 'none.ini'))
    get_settings.cache_clear()
    try:
        row = rows_of(smoke_run, 'train')[0]
        with pytest.raises(InstantiationException, match='WorldSpecError.*role judge, user_simulator, tool_emulator'):
            run_loop(tiny_model, tmp_path, row, ['<answer>x</answer>'], 'g')
        use_rubric_judge(RubricJudge(offline_client()))                 # the trainer set the judge: it is not asked for
        with pytest.raises(InstantiationException, match='WorldSpecError.*role user_simulator, tool_emulator'):
            run_loop(tiny_model, tmp_path, row, ['<answer>x</answer>'], 'g')
    finally: get_settings.cache_clear(); use_rubric_judge(None)

def test_excluding_buffer_loads_by_path_and_composes(tmp_path):
    import warnings
    from verl.utils.import_utils import load_extern_type
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
    from envsynth.train.rl import RL_PRESETS, compose_verl_config, main_ppo_command, validate_verl_config, write_job_files
    files = write_job_files(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', FutureWarning)
        assert issubclass(load_extern_type(files['entry_file'], 'ExcludingReplayBuffer'), ReplayBuffer)
    cfg = compose_verl_config('synthagent', model='/m', train_files='/d/train.parquet', val_files='/d/heldout.parquet', **files)
    validate_verl_config(cfg)
    sampler = cfg.trainer.v1.sampler
    assert (sampler.custom_sampler.name, sampler.custom_sampler.path) == ('ExcludingReplayBuffer', files['entry_file'])
    assert sampler.sampler_kwargs.train_batch_size == RL_PRESETS['synthagent'].train_batch_size
    cmd = main_ppo_command('synthagent', tmp_path / 'job', model='/m', train_files='/d/t.parquet', val_files='/d/h.parquet')
    assert 'trainer.v1.sampler.custom_sampler.name=ExcludingReplayBuffer' in cmd
    assert f'+trainer.v1.sampler.sampler_kwargs.train_batch_size={RL_PRESETS["synthagent"].train_batch_size}' in cmd

def test_excluding_buffer_leaves_out_groups_with_an_excluded_rollout(monkeypatch):
    "verl's sync ReplayBuffer with TransferQueue faked: a group holding one excluded rollout is evicted and refilled."
    import transfer_queue as tq
    import envsynth.train.rl as rl
    parts = {'A': (0, 0), 'B': (0, 1), 'C': (0, None), 'D': (1, 1)}     # `excluded` of each rollout (None: not a SynthAgent row)
    refills = []
    buf = rl.ExcludingReplayBuffer(trainer_mode='sync', trainer_config={}, max_off_policy_threshold=None, max_off_policy_strategy='drop',
                                   sampler_kwargs={'train_batch_size': 2}, refill_fn=refills.append, poll_interval=0)
    for step, uid in enumerate('ABCD'):
        for s, _ in enumerate(parts[uid]): buf.partitions['train'][f'{uid}_{s}_0'] = {'status': 'finished'}
        buf.finished_keys['train'].add(uid); buf.prompt_global_steps['train'][uid] = step
    monkeypatch.setattr(buf, '_sync_metadata_from_transfer_queue', lambda: None)
    extra = lambda k: {'reward_extra_info': {'score': 0.0, 'excluded': parts[k.split('_')[0]][int(k.split('_')[1])]}}
    monkeypatch.setattr(tq, 'kv_batch_get', lambda keys, partition_id, select_fields: {'extra_fields': [extra(k) for k in keys]})
    monkeypatch.setattr(tq, 'kv_clear', lambda **kw: None)
    batch, metrics = buf.sample(global_steps=1, partition_id='train', batch_size=2)
    assert sorted({k.split('_')[0] for k in batch.keys}) == ['A', 'C']
    assert buf.excluded == 2 and not {'B', 'D'} & buf.finished_keys['train']
    assert metrics['_dapo_filtered_reward_counts'] == {0.0: 2}        # verl logs them by reward value: a float
    assert next(v for k, v in metrics.items() if k.endswith('filter_groups/evicted_samples')) == 2

"""SynthAgent's reward and world in RL are the recipe's: compute_score on an exported row gives what the recipe gave its
own judged trajectories; the spec's formula and unknown rule change it; a row's rollouts share the task's seeded world;
missing endpoints stop RL at start."""
import asyncio, json, subprocess, sys
from pathlib import Path
import pandas as pd
import pytest
from _recipe_runs import recipe_smoke_run
from envsynth.pipeline import read_records

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / 'papers_repro' / 'synthagent' / 'smoke.yaml'

@pytest.fixture(scope='module')
def smoke_run(tmp_path_factory):
    return recipe_smoke_run('envsynth.synthagent.recipe', SMOKE, tmp_path_factory.mktemp('sa') / 'run')

def _rows(run: Path) -> dict:
    rows = {}
    for split in ('train', 'heldout'):
        for row in pd.read_parquet(run / '08_export' / f'{split}.parquet').to_dict('records'):
            row = _plain(row); rows[row['extra_info']['task_id']] = row
    return rows

def _plain(x):
    "numpy arrays from parquet as plain lists."
    if hasattr(x, 'tolist'): x = x.tolist()
    if isinstance(x, dict): return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list): return [_plain(v) for v in x]
    return x

def _judge():
    from envsynth.llm import LLMClient
    from envsynth.rewards import RubricJudge
    from envsynth.synthagent.offline import offline_synthagent_teacher
    return RubricJudge(LLMClient(offline_synthagent_teacher(), 'offline-teacher'), tag='synthagent.rubric_judge')

def _score(row, traj_json, judge=None):
    from envsynth.train.rl import compute_score, use_rubric_judge
    use_rubric_judge(judge or _judge())
    try:
        extra = row['extra_info'] | {'envsynth_episode': traj_json}
        return asyncio.run(compute_score(row['data_source'], '', row['reward_model']['ground_truth'], extra))
    finally: use_rubric_judge(None)

def test_recipe_reward_is_compute_score_on_the_exported_row(smoke_run):
    rows, demos = _rows(smoke_run), {d['task_id']: d for d in read_records(smoke_run / '04_demos')}
    checked = 0
    for rec in read_records(smoke_run / '06_rewards'):
        row = rows[rec['task_id']]
        assert row['extra_info']['split'] == rec['split']
        for traj, judged in zip(demos[rec['task_id']]['demos'], rec['demos']):
            out = _score(row, json.dumps(traj))
            assert out['paper'] == 'synthagent' and out['rubric_status'] == judged['status']
            assert out['score'] == (judged['reward'] if judged['reward'] is not None else 0.0), (rec['task_id'], out, judged)
            checked += 1
    assert checked >= 8

def test_val_rows_are_the_heldout_tasks_and_carry_the_spec(smoke_run):
    from envsynth.data import row_reward_spec
    train = pd.read_parquet(smoke_run / '08_export' / 'train.parquet').to_dict('records')
    val = pd.read_parquet(smoke_run / '08_export' / 'heldout.parquet').to_dict('records')
    reasoning = pd.read_parquet(smoke_run / '08_export' / 'reasoning.parquet').to_dict('records')
    assert val and not {r['extra_info']['task_id'] for r in train} & {r['extra_info']['task_id'] for r in val}
    guard = {'cap': 0.5, 'forbidden_voids': True, 'per_extra_call': 0.05, 'per_failed_call': 0.05}
    for r in train + val: assert row_reward_spec(r) == {'paper': 'synthagent', 'formula': 'eq5', 'unknown_verdicts': 'exclude',
                                                        'later_gate': False, 'judge_temperature': 0.1, 'max_output_chars': 500,
                                                        'conduct': guard}
    for r in reasoning:
        assert row_reward_spec(r) == {'paper': 'synthagent_reasoning'} and 'code_interpreter' in json.loads(r['extra_info']['env_json'])
    seeds = [json.loads(r['extra_info']['env_json'])['mock_world']['seed'] for r in train + val]
    assert all(isinstance(s, list) for s in seeds) and any(seeds)

def _with_spec(row, **changes):
    spec = json.loads(row['extra_info']['reward_spec']) | changes
    return row | {'extra_info': row['extra_info'] | {'reward_spec': json.dumps(spec, sort_keys=True)}}

def test_formula_and_unknown_rule_change_compute_score(smoke_run):
    from envsynth.llm import LLMClient, OfflineTeacher
    from envsynth.rewards import RubricJudge
    rows, demos = _rows(smoke_run), {d['task_id']: d for d in read_records(smoke_run / '04_demos')}
    pairs = [(rows[t], json.dumps(tr)) for t in sorted(rows) for tr in demos[t]['demos']]
    eq5 = [_score(r, t)['score'] for r, t in pairs]
    official = [_score(_with_spec(r, formula='official'), t)['score'] for r, t in pairs]
    assert eq5 != official
    failing = RubricJudge(LLMClient(OfflineTeacher({}), 'offline-teacher'), tag='synthagent.rubric_judge')   # no responder: unknown
    row, traj = pairs[0]
    excluded = _score(row, traj, failing)
    zero = _score(_with_spec(row, unknown_verdicts='zero'), traj, failing)
    assert (excluded['score'], excluded['excluded'], excluded['rubric_status']) == (0.0, 1, 'unknown')
    assert (zero['score'], zero['excluded']) == (0.0, 0)

def test_a_group_shares_the_seeded_world(smoke_run):
    "Two rollouts of a row's group see the same answers to the same and to equivalent calls, and the seed's answers."
    from envsynth.llm import LLMClient
    from envsynth.rollout import OraclePolicy, run_episode
    from envsynth.schema import Action
    from envsynth.synthagent.offline import offline_synthagent_teacher
    from envsynth.synthagent.rl_world import WorldStore, synthagent_parts
    from envsynth.train.rl import row_task
    rows = _rows(smoke_run)
    row = next(r for r in rows.values() if json.loads(r['extra_info']['env_json'])['mock_world']['seed'])
    env, task = json.loads(row['extra_info']['env_json']), row_task(row)
    seed = env['mock_world']['seed'][0]
    tool = seed['name']
    client = LLMClient(offline_synthagent_teacher(), 'offline-teacher')
    clients = {'tool_emulator': client, 'user_simulator': client}
    store = WorldStore()
    calls = [Action(name=tool, arguments=seed['arguments']), Action(name=tool, arguments={**seed['arguments'], 'zz_new': 'B-7'})]
    async def rollout(group, order):
        ex, user = synthagent_parts(env, task, clients=clients, group=group, store=store)
        traj = await run_episode(OraclePolicy(order), ex, user, task=task, system_prompt='s')
        return traj, ex
    async def go():
        return await asyncio.gather(rollout('g1', calls), rollout('g1', calls[::-1]), rollout('g2', calls))
    (a, ea), (b, eb), (c, ec) = asyncio.run(go())
    answers = lambda t: sorted(m.content for m in t.messages if m.role == 'tool')
    assert a.messages[1].content == task.instruction            # the agent reads I as written
    assert answers(a) == answers(b) and ea.key == eb.key != ec.key
    seeded = next(m.content for m in a.messages if m.role == 'tool')
    from envsynth.schema import ToolResult
    assert seeded == ToolResult.model_validate(seed['result']).content()
    stats = asyncio.run(store.stats(ea.key))
    assert stats['map_size'] >= len(env['mock_world']['seed'])

def test_missing_endpoints_fail_at_start(tmp_path, monkeypatch):
    from envsynth.synthagent.rl_world import WorldSpecError, require_endpoints, SYNTHAGENT_RL_ROLES
    for k in [k for k in __import__('os').environ if k.startswith('ENVSYNTH_LLM')]: monkeypatch.delenv(k)
    (tmp_path / 'none.ini').write_text('')
    monkeypatch.setenv('ENVSYNTH_SETTINGS', str(tmp_path / 'none.ini'))
    from envsynth.settings import get_settings
    get_settings.cache_clear()
    try:
        with pytest.raises(WorldSpecError, match='judge, user_simulator, tool_emulator'): require_endpoints(SYNTHAGENT_RL_ROLES)
        monkeypatch.setenv('ENVSYNTH_LLM_ENDPOINT', 'http://127.0.0.1:9/v1'); get_settings.cache_clear()
        require_endpoints(SYNTHAGENT_RL_ROLES)
        monkeypatch.delenv('ENVSYNTH_LLM_ENDPOINT'); get_settings.cache_clear()
        from envsynth.synthagent.rl_world import WorldStore
        with pytest.raises(WorldSpecError, match='tool_emulator'): WorldStore()._default_client()
        from envsynth.train.rl import rubric_judge, use_rubric_judge
        use_rubric_judge(None)
        with pytest.raises(WorldSpecError, match='the SynthAgent reward needs an endpoint for role judge'): rubric_judge()
    finally: get_settings.cache_clear()

def test_reasoning_code_runs_in_the_sandbox():
    from envsynth.sandbox import SandboxPool
    from envsynth.schema import Tool, ToolCall
    from envsynth.synthagent.recipe import CODE_TOOL
    from envsynth.synthagent.rl_world import SandboxCodeExecutor
    with SandboxPool(size=1) as pool:
        ex = SandboxCodeExecutor(pool, [Tool.parse(CODE_TOOL)])
        ok = asyncio.run(ex.call(ToolCall.make('code_interpreter', {'code': 'print(6 * 7)'})))
        bad = asyncio.run(ex.call(ToolCall.make('code_interpreter', {'code': 'import os; os.system("ls")'})))
    assert ok.output == '42\n' and 'not allowed' in bad.output

def test_the_rl_hook_routes_synthagent_rows(smoke_run):
    "envsynth.train.rl runs a SynthAgent row in its group's world, a reasoning row with the sandboxed code interpreter."
    from envsynth.sandbox import SandboxPool
    from envsynth.synthagent.rl_world import SandboxCodeExecutor, VerbatimOpeningUser, WorldExecutor, world_key
    from envsynth.train.rl import PAPER_REWARDS, agent_recipe, episode_parts, loop_needs_clients
    from envsynth.synthagent.reward import REWARDS
    assert all(PAPER_REWARDS[k] == v for k, v in REWARDS.items())
    row = next(iter(_rows(smoke_run).values()))
    reasoning = _plain(pd.read_parquet(smoke_run / '08_export' / 'reasoning.parquet').to_dict('records')[0])
    client = _judge().client
    parts = episode_parts(row, row['agent_name'], clients={'tool_emulator': client, 'user_simulator': client},
                          group='g7', rollout='r1')
    assert isinstance(parts.executor, WorldExecutor) and isinstance(parts.user, VerbatimOpeningUser)
    assert parts.executor.key == world_key(row['extra_info']['task_id'], 'g7') and parts.limits.stop_on_answer
    recipe = agent_recipe('synthagent')
    assert loop_needs_clients(recipe, row) and not loop_needs_clients(recipe, reasoning)
    with SandboxPool(size=1) as pool:
        parts = episode_parts(reasoning, recipe, clients={}, sandbox=pool)
        assert isinstance(parts.executor, SandboxCodeExecutor) and parts.user is None

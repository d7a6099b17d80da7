"""envsynth.rollout's options for the ASTRA, SynthAgent and EnvFactory recipes, beyond the notebook's examples: the
task-scoped consistency map under real concurrency (models behind HTTP that answer slowly, so identical calls of
different episodes are in flight together), the per-episode query draw as the emulator model receives it, the
`<answer>` stop, and the guarantee that the defaults send exactly the requests they sent before the options existed."""
import asyncio, hashlib, json, random
from collections import Counter
import pytest
from envsynth.fake_server import FakeOpenAIServer, Reply, completion
from envsynth.llm import LLMClient, OfflineTeacher, OpenAIBackend
from envsynth.rollout import (ConsistencyMap, ConsistencyMaps, EmulatedExecutor, EmulatedOutput, EpisodeLimits, LLMUser,
                              OraclePolicy, PolicyTurn, ScriptedUser, USER_PROMPT, offline_teacher, run_episode, user_for_task)
from envsynth.schema import Action, Task, Tool, ToolCall, ToolResult, assistant, user

WEATHER = Tool.parse({'type': 'function', 'function': {'name': 'get_weather', 'description': 'Current weather in a city.',
                      'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}}, 'required': ['city']}}})
TASK = Task(instruction='Compare the weather in three cities.', user_context={'hidden_context': 'The cities are Oslo, Lima and Pune.'})
CITIES = ['Oslo', 'Lima', 'Pune']

def noisy_emulator_server(requests: list, delay: float = 0.05):
    "An emulator 'model' over HTTP that answers every request with a new random number, after `delay` seconds."
    def handler(body):
        requests.append(body)
        call = json.loads(body['messages'][-1]['content'])
        return Reply(completion({'content': json.dumps({'output': {'city': call['arguments']['city'], 'value': random.random()}})}), delay=delay)
    return FakeOpenAIServer(handler)

def group_rollout(base_url: str, worlds: ConsistencyMaps, n: int = 12) -> list:
    "`n` concurrent episodes of TASK, each calling get_weather for the three cities in its own order (plus a repeat)."
    async def main():
        client = LLMClient(OpenAIBackend(base_url), 'emulator', max_retries=0)
        async def one(i):
            order = CITIES[i % 3:] + CITIES[:i % 3]
            actions = [Action(name='get_weather', arguments={'city': c}) for c in order + order[:1]]
            ex = EmulatedExecutor(client, [WEATHER], seed=i, world=worlds.for_task(TASK.id))
            return await run_episode(OraclePolicy(actions), ex, task=TASK)
        try: return await asyncio.gather(*(one(i) for i in range(n)))
        finally: await client.aclose()
    return asyncio.run(main())

def answers_by_city(trajs) -> dict:
    out = {}
    for t in trajs:
        calls = {c.id: c.args['city'] for c in t.tool_calls()}
        for m in t.messages:
            if m.role == 'tool': out.setdefault(calls[m.tool_call_id], set()).add(m.content)
    return out

def test_task_scope_one_answer_per_call_for_the_whole_group_over_http():
    requests = []
    with noisy_emulator_server(requests) as srv:
        worlds = ConsistencyMaps('task')
        trajs = group_rollout(srv.base_url, worlds)
    assert len(requests) == 3                                           # one model request per distinct call
    assert {c: len(a) for c, a in answers_by_city(trajs).items()} == {c: 1 for c in CITIES}
    assert len(worlds.for_task(TASK.id)) == 3
    assert all(t.info['termination'] == 'no_tool_call' and len(t.info['world']) == 3 for t in trajs)
    repeats = [t.info['emulator'].get('consistent_repeats', 0) for t in trajs]
    assert sum(repeats) == 12 * 4 - 3                                   # every other call was answered from the map

def test_episode_scope_keeps_episodes_apart_over_http():
    requests = []
    with noisy_emulator_server(requests) as srv:
        trajs = group_rollout(srv.base_url, ConsistencyMaps('episode'))
    assert len(requests) == 12 * 3                                      # each episode asks for its own world
    assert all(len(a) == 12 for a in answers_by_city(trajs).values())
    for t in trajs:                                                     # still consistent within each episode
        assert all(len(a) == 1 for a in answers_by_city([t]).values())

def test_task_scope_history_shows_the_group_world_to_the_emulator():
    "Later requests of the group carry the entries other episodes recorded (SynthAgent puts the task's map in the prompt)."
    requests = []
    with noisy_emulator_server(requests, delay=0.0) as srv:
        worlds = ConsistencyMaps('task')
        async def main():
            client = LLMClient(OpenAIBackend(srv.base_url), 'emulator', max_retries=0)
            first = EmulatedExecutor(client, [WEATHER], seed=0, world=worlds.for_task(TASK.id))
            second = EmulatedExecutor(client, [WEATHER], seed=1, world=worlds.for_task(TASK.id))
            await first.call(ToolCall.make('get_weather', {'city': 'Oslo'}))
            await second.call(ToolCall.make('get_weather', {'city': 'Lima'}))
            await client.aclose()
            return first, second
        first, second = asyncio.run(main())
    assert '(none)' in requests[0]['messages'][0]['content']
    assert '"Oslo"' in requests[1]['messages'][0]['content']          # the second episode's emulator sees the first's call
    assert [w['call']['arguments']['city'] for w in second.info()['world']] == ['Lima']   # info: only this episode's calls

def test_a_failed_emulation_is_not_shared_and_a_waiting_episode_asks_again():
    attempts = Counter()
    def flaky(req):
        attempts['n'] += 1
        return 'not json' if attempts['n'] == 1 else EmulatedOutput(output={'ok': attempts['n']})
    async def main():
        client = LLMClient(OfflineTeacher({'tool_emulator': flaky}), 'offline', max_attempts=1)
        world = ConsistencyMap()
        exs = [EmulatedExecutor(client, [WEATHER], seed=i, world=world) for i in range(3)]
        results = await asyncio.gather(*(ex.call(ToolCall.make('get_weather', {'city': 'Oslo'})) for ex in exs))
        return results, world, exs
    results, world, exs = asyncio.run(main())
    assert [r.error.type if r.error else r.output for r in results] == ['internal_error', {'ok': 2}, {'ok': 2}]
    assert len(world) == 1 and attempts['n'] == 2
    assert [ex.stats.get('emulator_failures', 0) for ex in exs] == [1, 0, 0]

def test_consistency_map_many_keys_many_askers():
    "Random askers over 20 keys with random delays: each key made exactly once, every asker of a key sees one answer."
    made = Counter()
    async def main():
        world, rng = ConsistencyMap(), random.Random(0)
        async def ask(key, delay):
            async def make():
                made[key] += 1; await asyncio.sleep(delay)
                return ToolResult(call_id='', name='t', output=random.random()), True
            await asyncio.sleep(delay / 2)
            return key, (await world.get_or_create(key, make))[0].output
        got = await asyncio.gather(*(ask(f'k{rng.randrange(20)}', rng.random() / 100) for _ in range(400)))
        return world, got
    world, got = asyncio.run(main())
    seen = {}
    for key, value in got: seen.setdefault(key, set()).add(value)
    assert all(len(v) == 1 for v in seen.values()) and set(made.values()) == {1} and len(world) == len(seen)
    assert not world._locks and not world._askers

def test_consistency_scope_is_checked():
    with pytest.raises(ValueError, match=r"choose one of \['episode', 'task'\]"): ConsistencyMaps('run')
    with pytest.raises(ValueError, match='needs a task id'): ConsistencyMaps('task').for_task(None)
    assert ConsistencyMaps().for_task('t') is not ConsistencyMaps().for_task('t')
    worlds = ConsistencyMaps('task')
    assert worlds.for_task('a') is worlds.for_task('a') and worlds.for_task('a') is not worlds.for_task('b')

def test_query_visibility_as_the_emulator_model_sees_it_over_http():
    requests = []
    with noisy_emulator_server(requests, delay=0.0) as srv:
        async def main():
            client = LLMClient(OpenAIBackend(srv.base_url), 'emulator', max_retries=0)
            flags = []
            for seed in range(60):
                ex = EmulatedExecutor(client, [WEATHER], seed=seed, query=TASK.instruction, query_visibility=0.5)
                await ex.call(ToolCall.make('get_weather', {'city': 'Oslo'})); flags.append(ex.query_visible)
            await client.aclose()
            return flags
        flags = asyncio.run(main())
    seen = [TASK.instruction in r['messages'][0]['content'] for r in requests]
    assert seen == flags and 15 < sum(flags) < 45

def test_answer_stop_with_a_policy_over_http():
    def policy_handler(body):
        n = sum(m['role'] == 'assistant' for m in body['messages'])
        if n == 0: return completion({'content': None, 'tool_calls': [{'id': 'c0', 'type': 'function', 'function': {
            'name': 'get_weather', 'arguments': json.dumps({'city': 'Oslo'})}}]})
        if n == 1: return completion({'content': 'Let me think. <answer>It is'})          # unclosed: the user replies
        return completion({'content': 'Sorry, cut off. <answer>It is mild in Oslo.</answer>'})
    with FakeOpenAIServer(policy_handler) as srv:
        from envsynth.rollout import LLMPolicy
        async def main():
            client = LLMClient(OpenAIBackend(srv.base_url), 'policy', max_retries=0)
            ex = EmulatedExecutor(LLMClient(offline_teacher(), 'offline'), [WEATHER])
            try: return await run_episode(LLMPolicy(client), ex, ScriptedUser([TASK.instruction, 'Go on?', 'Hm?']), task=TASK,
                                          limits=EpisodeLimits(stop_on_answer=True))
            finally: await client.aclose()
        traj = asyncio.run(main())
    assert (traj.info['termination'], traj.info['answer']) == ('answer', 'It is mild in Oslo.')
    assert [m.role for m in traj.messages] == ['user', 'assistant', 'tool', 'assistant', 'user', 'assistant']

def test_user_variants_through_user_for_task():
    client = LLMClient(offline_teacher(), 'offline')
    assert user_for_task(TASK, 'synthagent', client).variant == 'synthagent'
    assert isinstance(user_for_task(Task(instruction='a', user_context={'user_queries': ['a', 'b']}), 'scripted'), ScriptedUser)
    with pytest.raises(ValueError, match=r"choose one of \['customer', 'synthagent', 'scripted'\]"): user_for_task(TASK, 'tau2')
    with pytest.raises(ValueError, match="lacks placeholder"): LLMUser(client, 'x', template='Only {private}')

def test_defaults_send_the_same_requests_as_before():
    "The default user and emulator prompts are the ones every cached AgentScaler request was made with: pinned here."
    sim = LLMUser(LLMClient(offline_teacher(), 'offline'), 'Block my card.', {'card_last4': '5634'})
    assert sim.prompt == USER_PROMPT.format(instruction='Block my card.', private='{"card_last4": "5634"}')
    ex = EmulatedExecutor(LLMClient(offline_teacher(), 'offline'), [WEATHER], context='ctx')
    prompt = ex._prompt(WEATHER, {'city': 'Oslo'})
    digest = hashlib.sha256(json.dumps([sim.prompt] + [m.model_dump(mode='json') for m in prompt], sort_keys=True).encode()).hexdigest()
    assert digest == PINNED_DEFAULT_PROMPTS_SHA256, digest
    assert 'query_visible' not in ex.info() and ex.query_visible is False

PINNED_DEFAULT_PROMPTS_SHA256 = '123146a68ad53da9d811cd7ed8f03a0d3afdb4622bec2427fca2ff1a23a6adeb'

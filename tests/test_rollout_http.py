"""envsynth.rollout with models behind real HTTP (FakeOpenAIServer on 127.0.0.1): an OpenAI-compatible policy and an
LLM user simulator drive an episode in a curated environment; a model that writes a malformed call, and one whose
server keeps failing, are handled without losing the conversation."""
import asyncio, json
from envsynth.env_library import load_curated
from envsynth.fake_server import FakeOpenAIServer, Reply, completion
from envsynth.llm import LLMClient, OpenAIBackend
from envsynth.rollout import EnvExecutor, LLMPolicy, LLMUser, ScriptedUser, run_episode
from envsynth.schema import check_trajectory

ENV = load_curated('bank')
TASK = ENV.tasks['bank-lost-card']

def policy_server_handler(body: dict):
    "A 'model' that replays the task's gold calls, with one malformed call first, then answers."
    assert {t['function']['name'] for t in body['tools']} == {t.name for t in ENV.tools}
    done = sum(len(m.get('tool_calls') or []) for m in body['messages'] if m['role'] == 'assistant')
    if done == 0:
        return completion({'content': None, 'tool_calls': [{'id': 'call_bad', 'type': 'function',
                                                            'function': {'name': 'block_card', 'arguments': '{"card_id": "K0'}}]})
    gold = TASK.gold_actions[done - 1:done]
    if not gold: return completion({'content': 'Your card is blocked and a replacement is on its way.'})
    a = gold[0]
    return completion({'content': None, 'tool_calls': [{'id': f'call_{done}', 'type': 'function',
                                                        'function': {'name': a.name, 'arguments': json.dumps(a.arguments)}}]})

def user_server_handler(body: dict):
    "A 'user model': opens with the instruction (found in its system prompt), then is satisfied."
    if body['messages'][-1]['role'] == 'user' and 'first message' in body['messages'][-1]['content']:
        return completion({'content': TASK.instruction})
    return completion({'content': 'Great, thanks! ###STOP###'})

def test_policy_and_user_over_http_reach_the_gold_state():
    with FakeOpenAIServer(policy_server_handler) as ps, FakeOpenAIServer(user_server_handler) as us:
        policy = LLMPolicy(LLMClient(OpenAIBackend(ps.base_url), 'policy-model', max_retries=0))
        user_sim = LLMUser(LLMClient(OpenAIBackend(us.base_url), 'user-model', max_retries=0), TASK.instruction, TASK.user_context)
        async def main():
            with ENV.reset(TASK) as ep: return await run_episode(policy, EnvExecutor(ep), user_sim, task=TASK, system_prompt=ENV.policy)
        traj = asyncio.run(main())
    assert traj.info['termination'] == 'user_stop'
    assert traj.messages[1].content == TASK.instruction
    assert traj.final_state_hash == TASK.gold_state_hash
    assert (traj.info['tool_calls'], traj.info['invalid_tool_calls']) == (len(TASK.gold_actions) + 1, 1)
    assert traj.messages[3].error is True and 'invalid_json' in traj.messages[3].content
    assert [p.split(':')[0] for p in traj.info['turns'][0]['problems']] == ['tool call 0 to block_card']   # reported by the client, and still executed
    assert sum(t.get('prompt_tokens', 0) for t in traj.info['turns']) == 10 * (len(TASK.gold_actions) + 2)
    assert check_trajectory(traj) == []

def test_a_failing_policy_server_ends_the_episode_and_keeps_the_conversation():
    calls = []
    def handler(body):
        calls.append(body)
        if len(calls) == 1: return completion({'content': None, 'tool_calls': [{'id': 'c1', 'type': 'function', 'function': {
            'name': 'search_customers', 'arguments': json.dumps({'query': 'emrys.lockwood1@post.example'})}}]})
        return Reply({'error': {'message': 'overloaded'}}, status=503)
    with FakeOpenAIServer(handler) as srv:
        policy = LLMPolicy(LLMClient(OpenAIBackend(srv.base_url), 'm', max_retries=2, backoff_s=0.01))
        async def main():
            with ENV.reset(TASK) as ep: return await run_episode(policy, EnvExecutor(ep), ScriptedUser([TASK.instruction]), task=TASK)
        traj = asyncio.run(main())
    assert traj.info['termination'] == 'policy_error' and 'TransportError' in traj.info['error']
    assert len(calls) == 4                     # the first turn, then 1 + 2 retries of the second
    assert [m.role for m in traj.messages] == ['user', 'assistant', 'tool'] and traj.messages[2].error is None
    assert check_trajectory(traj) == []

def test_synthagent_user_over_http_knows_only_the_instruction_and_the_hidden_context():
    "SynthAgent's user model gets its own prompt with the hidden context, never the agent's system prompt or tool traffic."
    from envsynth.rollout import EmulatedExecutor, EpisodeLimits, SYNTHAGENT_USER_PROMPT, offline_teacher, user_for_task
    from envsynth.schema import Task, Tool
    hidden = 'The trip is to Lima. I leave on Friday.'
    task = Task(instruction='Tell me the weather for my trip.', user_context={'hidden_context': hidden})
    weather = Tool.parse({'type': 'function', 'function': {'name': 'get_weather', 'description': 'Current weather.',
                          'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}}, 'required': ['city']}}})
    seen = []
    def user_handler(body):
        seen.append(body['messages'])
        if len(seen) == 1: return completion({'content': task.instruction})
        return completion({'content': 'It is Lima.'})
    def policy_handler(body):
        n = sum(m['role'] == 'assistant' for m in body['messages'])
        if n == 0: return completion({'content': 'Where are you going?'})
        if n == 1: return completion({'content': None, 'tool_calls': [{'id': 'c1', 'type': 'function', 'function': {
            'name': 'get_weather', 'arguments': json.dumps({'city': 'Lima'})}}]})
        return completion({'content': '<answer>Mild in Lima.</answer>'})
    with FakeOpenAIServer(policy_handler) as ps, FakeOpenAIServer(user_handler) as us:
        async def main():
            policy_client, user_client = LLMClient(OpenAIBackend(ps.base_url), 'p', max_retries=0), LLMClient(OpenAIBackend(us.base_url), 'u', max_retries=0)
            ex = EmulatedExecutor(LLMClient(offline_teacher(), 'offline'), [weather])
            try: return await run_episode(LLMPolicy(policy_client), ex, user_for_task(task, 'synthagent', user_client), task=task,
                                          system_prompt='AGENT SYSTEM PROMPT', limits=EpisodeLimits(stop_on_answer=True))
            finally: await policy_client.aclose(); await user_client.aclose()
        traj = asyncio.run(main())
    assert (traj.info['termination'], traj.info['answer']) == ('answer', 'Mild in Lima.')
    assert len(seen) == 2 and all(msgs[0] == {'role': 'system', 'content': SYNTHAGENT_USER_PROMPT.format(instruction=task.instruction, private=hidden)}
                                  for msgs in seen)
    everything_the_user_saw = json.dumps(seen)
    assert 'AGENT SYSTEM PROMPT' not in everything_the_user_saw and 'get_weather' not in everything_the_user_saw
    assert [m['role'] for m in seen[1]] == ['system', 'assistant', 'user']    # its opening, then the agent's question

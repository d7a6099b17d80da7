"""Tools with output schemas and tasks with each paper's supervision: byte compatibility and round trips.

Tools, tasks and RL rows without the optional fields must dump exactly as before the fields existed,
because ids are content hashes of the dumps and stored run outputs are compared byte for byte. The
literals below were recorded from the base format and are checked byte for byte. A task carrying every
field must survive a verl parquet file and be rebuilt, with the same id, from what a reward function
and an agent loop read.
"""
import json
import pytest
from pydantic import ValidationError
from envsynth.rewards import StateHashReward
from envsynth.data import REWARD_SUPERVISION, ROLLOUT_SUPERVISION, env_spec, ground_truth, rl_row, row_supervision, write_rl_parquet
from envsynth.rewards import Rubric, trace_reward
from envsynth.schema import (SUPERVISION_FIELDS, Action, MaskedArgument, RubricItem, SubQuestion, Task, Tool, ToolCall, ToolSchemaError,
                             Trajectory, assistant, tool_message, user, validate_output)

WEATHER = {'name': 'get_weather', 'description': 'Current weather in a city.', 'x-extra': 1,
           'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}}, 'required': ['city']}}
WEATHER_JSON = ('{"type":"function","function":{"name":"get_weather","description":"Current weather in a city.",'
                '"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"x-extra":1}}')

def flights_task(**supervision) -> Task:
    return Task(env_id='flights', instruction='Book flight AF12.', tools=['search_flights', 'book_flight'],
                initial_state={'flights': [{'id': 'AF12', 'to': 'Nice', 'price': 120.0}], 'bookings': []},
                gold_actions=[Action(name='search_flights', arguments={'city': 'Nice'}), Action(name='book_flight', arguments={'flight': 'AF12'})]
                if supervision else [Action(name='book_flight', arguments={'flight': 'AF12'})],
                gold_state_hash='9f2c41d07a3e5b18', user_context={'name': 'Ana'}, metadata={'domain': 'travel'}, **supervision)

SEARCH = Tool.parse({'name': 'search_flights', 'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}}}})
BOOK = Tool.parse({'name': 'book_flight', 'parameters': {'type': 'object', 'properties': {'flight': {'type': 'string'}}}})

BASE_TASK_JSON = ('{"id":"task_94cc8d5725bc","env_id":"flights","instruction":"Book flight AF12.","tools":["search_flights","book_flight"],'
                  '"initial_state":{"flights":[{"id":"AF12","to":"Nice","price":120.0}],"bookings":[]},'
                  '"gold_actions":[{"name":"book_flight","arguments":{"flight":"AF12"}}],"gold_state_hash":"9f2c41d07a3e5b18",'
                  '"user_context":{"name":"Ana"},"metadata":{"domain":"travel"}}')
BASE_ROW = {'data_source': 'envsynth', 'prompt': [{'role': 'system', 'content': 'S'}, {'role': 'user', 'content': 'Book flight AF12.'}],
            'ability': 'tool_use', 'reward_model': {'style': 'rule', 'ground_truth':
            '{"gold_actions":[{"arguments":{"flight":"AF12"},"name":"book_flight"}],"gold_state_hash":"9f2c41d07a3e5b18"}'},
            'extra_info': {'index': 3, 'split': 'train', 'task_id': 'task_94cc8d5725bc',
                           'reward_spec': StateHashReward().to_json(), 'env_json':
            '{"env_id":"flights","initial_state":{"bookings":[],"flights":[{"id":"AF12","price":120.0,"to":"Nice"}]},'
            '"task_id":"task_94cc8d5725bc","tools":[{"function":{"description":"","name":"search_flights","parameters":'
            '{"properties":{"city":{"type":"string"}},"type":"object"}},"type":"function"},{"function":{"description":"",'
            '"name":"book_flight","parameters":{"properties":{"flight":{"type":"string"}},"type":"object"}},"type":"function"}],'
            '"user_context":{"name":"Ana"}}', 'tool_selection': ['search_flights', 'book_flight'], 'need_tools_kwargs': True,
            'tools_kwargs': {'search_flights': {'create_kwargs': {'task_id': 'task_94cc8d5725bc'}},
                             'book_flight': {'create_kwargs': {'task_id': 'task_94cc8d5725bc'}}}}}

def full_task() -> Task:
    return flights_task(
        sub_questions=[SubQuestion(id='q1', question='Which flights go to Nice?', hop=1, answer='AF12'),
                       SubQuestion(id='q2', question='What does AF12 cost?', hop=1, parallel=True, answer='120 EUR'),
                       SubQuestion(id='q3', question='Book AF12.', hop=2, depends_on=['q1', 'q2'], answer='booked'),
                       SubQuestion(id='q4', question='Summarize the booking.', hop=3, depends_on=['q3'], needs_tool=False)],
        final_answer='AF12 is booked, 120 EUR.', hidden_context='Ana flies on 3 May «early»; budget 150 EUR.',
        rubric=[RubricItem(kind='subgoal', text='Book AF12'), RubricItem(kind='interaction', text='Ask for the travel date')],
        forbidden_behaviors=['Book a flight over budget'], forbidden_tools=['cancel_booking'],
        user_queries=['Book flight AF12.', 'Early, please.'],
        masked_arguments=[MaskedArgument(call_index=0, tool='search_flights', argument='city', value='Nice')])

# --- byte compatibility -------------------------------------------------------------------------------

def test_a_tool_without_output_schema_dumps_as_before():
    tool = Tool.parse(WEATHER)
    assert tool.model_dump_json() == WEATHER_JSON
    assert json.dumps(tool.model_dump(mode='json'), separators=(',', ':')) == WEATHER_JSON
    assert tool.to_openai() == tool.model_dump(mode='json') == json.loads(WEATHER_JSON)
    traj = Trajectory(task_id='task_401b27784cf1', tools=[tool], messages=[user('hi'), assistant('hello')])
    assert traj.id == 'traj_045f7b1c8069'

def test_a_task_without_supervision_dumps_and_hashes_as_before():
    task = flights_task()
    assert task.model_dump_json() == BASE_TASK_JSON and task.id == 'task_94cc8d5725bc'
    assert Task(instruction='Book the cheapest flight to Lyon.', env_id='travel',
                gold_actions=[Action(name='search_flights', arguments={'to': 'LYS'}), Action(name='book', arguments={'flight_id': 'F1'})]
                ).id == 'task_401b27784cf1'
    assert Task.model_validate_json(BASE_TASK_JSON) == task and all(getattr(task, k) is None for k in SUPERVISION_FIELDS)

def test_the_rl_row_of_a_task_without_supervision_is_unchanged():
    assert rl_row(flights_task(), [SEARCH, BOOK], index=3, system_prompt='S', reward=StateHashReward()) == BASE_ROW
    assert row_supervision(BASE_ROW) == {}

# --- output schemas --------------------------------------------------------------------------------------

def test_output_schema_from_mcp_alias_round_trips_and_validates_outputs():
    tool = Tool.parse({**WEATHER, 'outputSchema': {'type': 'object', 'properties': {'temp_c': {'type': 'number'}}, 'required': ['temp_c']}})
    assert tool.function.output_schema['required'] == ['temp_c']
    assert Tool.model_validate_json(tool.model_dump_json()) == tool
    assert '"output_schema"' in tool.model_dump_json() and 'output_schema' not in tool.to_openai()['function']
    assert validate_output(tool, {'temp_c': 18.5}) == []
    assert [str(e) for e in validate_output(tool, {'temp_c': 'warm'})] == ["temp_c: 'warm' is not of type 'number'"]
    assert env_spec(rl_row(Task(instruction='Weather?', final_answer='18 C'), [tool], reward=StateHashReward()))['tools'][0]['function']['output_schema'] == \
        tool.function.output_schema

@pytest.mark.parametrize('schema, message', [
    (['not', 'a', 'schema'], 'output_schema: Input should be a valid dictionary'),
    ({'type': 'strin'}, 'output_schema is not a valid JSON Schema at type'),
    ({'type': 'object', 'properties': {'a': {}}, 'required': ['b']}, "output_schema requires ['b']"),
])
def test_a_malformed_output_schema_names_the_tool(schema, message):
    with pytest.raises(ToolSchemaError) as e: Tool.parse({**WEATHER, 'outputSchema': schema})
    assert "tool 'get_weather'" in str(e.value) and message in str(e.value)

def test_the_two_spellings_of_the_output_schema_must_agree():
    same = {'type': 'string'}
    assert Tool.parse({**WEATHER, 'outputSchema': same, 'output_schema': same}).function.output_schema == same
    with pytest.raises(ToolSchemaError, match='both given and differ'):
        Tool.parse({**WEATHER, 'outputSchema': same, 'output_schema': {'type': 'integer'}})

# --- supervision -----------------------------------------------------------------------------------------

@pytest.mark.parametrize('field', SUPERVISION_FIELDS)
def test_each_supervision_field_round_trips_and_enters_the_id(field):
    full = full_task()
    one = flights_task(**{field: getattr(full, field)})
    back = Task.model_validate_json(one.model_dump_json())
    assert back == one and getattr(back, field) == getattr(full, field)
    assert one.id != flights_task().id and one.id == Task(**one.model_dump(exclude={'id'})).id

def error_of(**supervision) -> str:
    with pytest.raises(ValidationError) as e: flights_task(**supervision)
    return str(e.value)

@pytest.mark.parametrize('subs, message', [
    ([{'id': 'a', 'question': 'A?', 'hop': 1, 'depends_on': ['b']}, {'id': 'b', 'question': 'B?', 'hop': 2, 'depends_on': ['a']}],
     'dependency cycle a -> b -> a'),
    ([{'id': 'a', 'question': 'A?', 'hop': 1, 'depends_on': ['a']}], 'dependency cycle a -> a'),
    ([{'id': 'a', 'question': 'A?', 'hop': 2, 'depends_on': ['zz']}], "depends on unknown ids ['zz']"),
    ([{'id': 'a', 'question': 'A?', 'hop': 2}, {'id': 'b', 'question': 'B?', 'hop': 2, 'depends_on': ['a']}], 'must come at an earlier hop'),
    ([{'id': 'a', 'question': 'A?', 'hop': 1}, {'id': 'a', 'question': 'B?', 'hop': 1}], "duplicate ids ['a']"),
    ([{'id': 'a', 'question': ' ', 'hop': 1}], "sub-question 'a' is empty"),
])
def test_inconsistent_sub_questions_are_refused(subs, message):
    assert message in error_of(sub_questions=subs)

@pytest.mark.parametrize('masked, message', [
    ({'call_index': 2}, 'the task has only 2 gold actions'),
    ({'tool': 'book_flight'}, "names tool 'book_flight', but gold call 0 is 'search_flights'"),
    ({'argument': 'date'}, "its arguments are ['city']"),
    ({'value': 'Lyon'}, "value 'Lyon' is not the gold value 'Nice'"),
    ({'call_index': -1}, 'greater than or equal to 0'),
])
def test_inconsistent_masked_arguments_are_refused(masked, message):
    good = {'call_index': 0, 'tool': 'search_flights', 'argument': 'city', 'value': 'Nice'}
    assert message in error_of(masked_arguments=[{**good, **masked}])
    assert 'masked twice' in error_of(masked_arguments=[good, good])

@pytest.mark.parametrize('supervision, message', [
    ({'user_queries': ['Something else.']}, 'user_queries[0] must be the instruction'),
    ({'user_queries': []}, 'user_queries is an empty list'),
    ({'user_queries': ['Book flight AF12.', '']}, 'user_queries[1] is empty'),
    ({'rubric': [{'kind': 'interaction', 'text': 'Ask'}]}, 'needs at least one sub-goal'),
    ({'rubric': [{'kind': 'subgoal', 'text': ''}]}, 'subgoal rubric item is empty'),
    ({'forbidden_behaviors': ['']}, 'forbidden_behaviors[0] is empty'),
    ({'hidden_context': ''}, 'hidden_context is empty'),
])
def test_other_inconsistent_supervision_is_refused(supervision, message):
    assert message in error_of(**supervision)

def test_the_supervision_feeds_the_reward_functions():
    task = full_task()
    assert Rubric(**task.rubric_sections()) == Rubric(forbidden=['Book a flight over budget'], subgoals=['Book AF12'],
                                                      interactions=['Ask for the travel date'])
    calls = [ToolCall.make('search_flights', {'city': 'Nizza'}, index=0), ToolCall.make('book_flight', {'flight': 'AF12'})]
    traj = Trajectory(tools=[SEARCH, BOOK], messages=[user(task.instruction), assistant(tool_calls=calls[:1]), tool_message(calls[0], '[]'),
                                                      assistant(tool_calls=calls[1:]), tool_message(calls[1], 'ok'), assistant('Done.')])
    assert task.masked_argument_names() == [['city'], []]
    assert trace_reward(traj, task.gold_actions, task.masked_argument_names()) == 1.0
    assert trace_reward(traj, task.gold_actions) == 0.0          # the city is compared without the mask

# --- export ---------------------------------------------------------------------------------------------

def test_every_supervision_field_survives_parquet(tmp_path):
    import pyarrow.parquet as pq
    task, plain = full_task(), flights_task()
    rows = [rl_row(task, [SEARCH, BOOK], index=0, reward=StateHashReward()), rl_row(plain, [SEARCH, BOOK], index=1, reward=StateHashReward())]
    back = pq.read_table(write_rl_parquet(rows, tmp_path / 'train.parquet')).to_pylist()
    assert row_supervision(back[0]) == {k: getattr(task, k) for k in SUPERVISION_FIELDS}
    assert back[1]['reward_model'] == rows[1]['reward_model'] and back[1]['extra_info']['env_json'] == rows[1]['extra_info']['env_json']
    assert set(ground_truth(back[0])) - {'gold_actions', 'gold_state_hash'} == set(REWARD_SUPERVISION)
    assert set(env_spec(back[0])) & set(SUPERVISION_FIELDS) == set(ROLLOUT_SUPERVISION)
    assert [c for c in back[0]] == ['data_source', 'prompt', 'ability', 'reward_model', 'extra_info']
    env, gold = env_spec(back[0]), ground_truth(back[0])
    rebuilt = Task(env_id=env['env_id'], instruction=back[0]['prompt'][-1]['content'], tools=back[0]['extra_info']['tool_selection'],
                   initial_state=env['initial_state'], user_context=env['user_context'], gold_actions=gold['gold_actions'],
                   gold_state_hash=gold['gold_state_hash'], **row_supervision(back[0]))
    assert rebuilt.id == task.id and rebuilt == task.model_copy(update={'metadata': {}})

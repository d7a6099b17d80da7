"""Per-role LLM settings: `[llm.<role>]` sections falling back to `[llm]`, the `<role>_model` short form,
`ENVSYNTH_LLM_<ROLE>_<KEY>` variables, and `make_client(role)` against two real HTTP servers on 127.0.0.1."""
import asyncio, threading, time
import pytest
from envsynth.fake_server import FakeOpenAIServer
from envsynth.llm import OfflineTeacher, OpenAIBackend, make_client
from envsynth.schema import user
from envsynth.settings import (LLM_ROLES, LLMRoleSettings, LLMSettings, SECTIONS, Settings, SettingsError, env_var,
                               load_settings, section_keys)

SITE = """
[llm]
endpoint = http://shared:8000/v1
api_key_env = SHARED_KEY
model = big
max_concurrency = 16
timeout_s = 120
max_retries = 4
"""

def ini(tmp_path, text):
    p = tmp_path / 'settings.ini'; p.write_text(text); return p

def test_the_five_roles_each_have_a_section():
    assert LLM_ROLES == ('teacher', 'judge', 'user_simulator', 'tool_emulator', 'policy')
    assert all(f'llm.{r}' in SECTIONS and isinstance(getattr(LLMSettings(), r), LLMRoleSettings) for r in LLM_ROLES)

def test_the_repository_settings_file_documents_every_role_with_empty_values():
    from envsynth.settings import find_settings_file
    import configparser
    path = find_settings_file(environ={})
    cp = configparser.ConfigParser(interpolation=None); cp.read(path)
    for r in LLM_ROLES:
        assert dict(cp[f'llm.{r}']) == {k: '' for k in LLMRoleSettings.model_fields}, r
    s = load_settings(path, environ={})
    assert all(s.llm.role(r).offline and s.llm.role(r).model == 'offline-teacher' for r in LLM_ROLES)

@pytest.mark.parametrize('role', LLM_ROLES)
def test_a_role_with_an_empty_section_takes_every_value_from_llm(tmp_path, role):
    s = load_settings(ini(tmp_path, SITE + f'\n[llm.{role}]\nendpoint =\nmodel =\nmax_concurrency =\ntimeout_s =\n'), environ={})
    c = s.llm.role(role)
    assert (c.role, c.endpoint, c.api_key_env, c.model, c.max_concurrency, c.timeout_s, c.max_retries) == \
           (role, 'http://shared:8000/v1', 'SHARED_KEY', 'big', 16, 120.0, 4)
    assert not c.offline and s.llm.model_for(role) == 'big'

@pytest.mark.parametrize('role', LLM_ROLES)
def test_a_role_overrides_each_key_and_leaves_the_other_roles_alone(tmp_path, role):
    s = load_settings(ini(tmp_path, SITE + f"""
[llm.{role}]
endpoint = https://own.example/v1
api_key_env = OWN_KEY
model = small
max_concurrency = 3
timeout_s = 7.5
max_retries = 0
"""), environ={})
    c = s.llm.role(role)
    assert (c.endpoint, c.api_key_env, c.model, c.max_concurrency, c.timeout_s, c.max_retries) == \
           ('https://own.example/v1', 'OWN_KEY', 'small', 3, 7.5, 0)
    for other in set(LLM_ROLES) - {role}:
        assert s.llm.role(other).model == 'big' and s.llm.role(other).endpoint == 'http://shared:8000/v1'

@pytest.mark.parametrize('role', LLM_ROLES)
def test_a_role_without_an_endpoint_anywhere_is_offline_while_another_is_served(tmp_path, role):
    served = 'judge' if role != 'judge' else 'teacher'
    s = load_settings(ini(tmp_path, f'[llm.{served}]\nendpoint = http://gpu:8000/v1\n'), environ={})
    assert s.llm.role(role).offline and not s.llm.role(served).offline and s.llm.offline

@pytest.mark.parametrize('role', LLM_ROLES)
def test_the_short_form_sets_the_role_model(tmp_path, role):
    s = load_settings(ini(tmp_path, f'[llm]\nmodel = big\n{role}_model = tiny\n'), environ={})
    assert s.llm.role(role).model == 'tiny' and s.llm.model_for(role) == 'tiny'
    assert all(s.llm.role(r).model == 'big' for r in LLM_ROLES if r != role)

def test_an_empty_short_form_is_not_set_and_both_forms_at_once_are_an_error(tmp_path):
    s = load_settings(ini(tmp_path, '[llm]\njudge_model =\n[llm.judge]\nmodel = j\n'), environ={})
    assert s.llm.role('judge').model == 'j'
    with pytest.raises(SettingsError, match=r'\[llm\] judge_model and \[llm.judge\] model both set'):
        load_settings(ini(tmp_path, '[llm]\njudge_model = a\n[llm.judge]\nmodel = b\n'), environ={})

@pytest.mark.parametrize('role', LLM_ROLES)
def test_environment_variables_override_each_role_key(tmp_path, role):
    R = role.upper()
    assert env_var(f'llm.{role}', 'endpoint') == f'ENVSYNTH_LLM_{R}_ENDPOINT'
    env = {f'ENVSYNTH_LLM_{R}_ENDPOINT': 'http://env:9000/v1', f'ENVSYNTH_LLM_{R}_MODEL': 'env-model',
           f'ENVSYNTH_LLM_{R}_API_KEY_ENV': 'ENV_KEY', f'ENVSYNTH_LLM_{R}_MAX_CONCURRENCY': '2',
           f'ENVSYNTH_LLM_{R}_TIMEOUT_S': '9', f'ENVSYNTH_LLM_{R}_MAX_RETRIES': '1'}
    s = load_settings(ini(tmp_path, SITE + f'\n[llm.{role}]\nmodel = file-model\nmax_concurrency = 5\n'), environ=env)
    c = s.llm.role(role)
    assert (c.endpoint, c.model, c.api_key_env, c.max_concurrency, c.timeout_s, c.max_retries) == \
           ('http://env:9000/v1', 'env-model', 'ENV_KEY', 2, 9.0, 1)
    assert all(s.llm.role(r).model == 'big' for r in LLM_ROLES if r != role)

def test_an_environment_variable_wins_over_the_short_form_in_the_file(tmp_path):
    s = load_settings(ini(tmp_path, '[llm]\nuser_simulator_model = from-file\n'),
                      environ={'ENVSYNTH_LLM_USER_SIMULATOR_MODEL': 'from-env'})
    assert s.llm.role('user_simulator').model == 'from-env'

def test_an_empty_environment_variable_unsets_a_role_value(tmp_path):
    s = load_settings(ini(tmp_path, SITE + '\n[llm.judge]\nmax_concurrency = 2\nendpoint = http://j:1/v1\n'),
                      environ={'ENVSYNTH_LLM_JUDGE_MAX_CONCURRENCY': '', 'ENVSYNTH_LLM_JUDGE_ENDPOINT': ''})
    assert s.llm.role('judge').max_concurrency == 16 and s.llm.role('judge').endpoint == 'http://shared:8000/v1'

def test_the_llm_variables_still_set_the_defaults_of_every_role():
    s = load_settings(None, environ={'ENVSYNTH_LLM_ENDPOINT': 'http://node12:8000/v1', 'ENVSYNTH_LLM_MODEL': 'm'})
    assert all(s.llm.role(r).endpoint == 'http://node12:8000/v1' and s.llm.role(r).model == 'm' for r in LLM_ROLES)

@pytest.mark.parametrize('name', ['ENVSYNTH_LLM_JUDGE_ENDPIONT', 'ENVSYNTH_LLM_CRITIC_MODEL', 'ENVSYNTH_LLM_TEACHER',
                                  'ENVSYNTH_LLM_POLICY_TEACHER_MODEL'])
def test_an_environment_variable_that_names_no_setting_is_an_error(name):
    with pytest.raises(SettingsError, match=name):
        load_settings(None, environ={name: 'x'})

def test_env_var_names_only_real_settings():
    assert env_var('llm', 'max_retries') == 'ENVSYNTH_LLM_MAX_RETRIES'
    with pytest.raises(SettingsError, match=r'no setting \[llm.critic\] model'):
        env_var('llm.critic', 'model')
    assert 'judge' not in section_keys('llm') and 'judge_model' in section_keys('llm')

@pytest.mark.parametrize('text, match', [
    ('[llm.critic]\nmodel = x\n', r'unknown section \[llm.critic\]'),
    ('[llm.judge]\nendpiont = http://x/v1\n', r"unknown key 'endpiont' in \[llm.judge\]"),
    ('[llm]\njudge = x\n', r"unknown key 'judge' in \[llm\]"),
    ('[llm.judge]\nendpoint = node12:8000\n', r'\[llm.judge\] endpoint .*http\(s\) URL'),
    ('[llm.judge]\nendpoint = ftp://node12/v1\n', r'\[llm.judge\] endpoint .*http\(s\) URL'),
    ('[llm]\nendpoint = localhost\n', r'\[llm\] endpoint .*http\(s\) URL'),
    ('[llm.judge]\nmax_concurrency = 0\n', r'\[llm.judge\] max_concurrency .*greater than or equal to 1'),
    ('[llm]\nmax_concurrency = 0\n', r'\[llm\] max_concurrency .*greater than or equal to 1'),
    ('[llm.policy]\ntimeout_s = 0\n', r'\[llm.policy\] timeout_s .*greater than 0'),
    ('[llm.teacher]\nmax_retries = -1\n', r'\[llm.teacher\] max_retries'),
    ('[llm.teacher]\nmax_concurrency = lots\n', r'\[llm.teacher\] max_concurrency .*ENVSYNTH_LLM_TEACHER_MAX_CONCURRENCY'),
])
def test_bad_role_settings_are_clear_errors(tmp_path, text, match):
    with pytest.raises(SettingsError, match=match):
        load_settings(ini(tmp_path, text), environ={})

def test_a_bad_endpoint_from_the_environment_names_the_variable():
    with pytest.raises(SettingsError, match='ENVSYNTH_LLM_TOOL_EMULATOR_ENDPOINT'):
        load_settings(None, environ={'ENVSYNTH_LLM_TOOL_EMULATOR_ENDPOINT': 'gpu-node:8000'})

def test_an_unknown_role_is_an_error_listing_the_roles():
    with pytest.raises(ValueError, match='unknown LLM role .critic.; the roles are: teacher, judge, user_simulator, tool_emulator, policy'):
        Settings().llm.role('critic')
    with pytest.raises(ValueError, match='the roles are'):
        make_client('critic', settings=Settings(), cache=False)
    with pytest.raises(ValueError, match='the roles are'):
        Settings().llm.model_for('critic')

def echo_model(body): return {'content': f"{body['model']} answers"}

def test_judge_and_teacher_clients_reach_their_own_servers_with_their_own_models(tmp_path, monkeypatch):
    monkeypatch.setenv('TEACHER_KEY', 'sk-teacher'); monkeypatch.delenv('JUDGE_KEY', raising=False)
    with FakeOpenAIServer(echo_model) as teacher_srv, FakeOpenAIServer(echo_model) as judge_srv:
        s = load_settings(ini(tmp_path, f"""
[llm]
api_key_env = TEACHER_KEY
model = Qwen3-235B-A22B
[llm.judge]
endpoint = {judge_srv.base_url}
model = Qwen3-8B
api_key_env = JUDGE_KEY
"""), environ={'ENVSYNTH_LLM_TEACHER_ENDPOINT': teacher_srv.base_url})
        teacher, judge = make_client('teacher', settings=s, cache=False), make_client('judge', settings=s, cache=False)
        async def ask():
            return [(await c.chat([user('hello')])).content for c in (teacher, judge, teacher)]
        answers = asyncio.run(ask())
    assert answers == ['Qwen3-235B-A22B answers', 'Qwen3-8B answers', 'Qwen3-235B-A22B answers']
    assert [r['model'] for r in teacher_srv.requests] == ['Qwen3-235B-A22B'] * 2
    assert [r['model'] for r in judge_srv.requests] == ['Qwen3-8B']
    assert isinstance(teacher.backend, OpenAIBackend) and teacher.backend.api_key == 'sk-teacher'
    assert judge.backend.api_key == 'EMPTY'          # JUDGE_KEY is not set: vLLM accepts any key

def test_each_role_client_keeps_its_own_concurrency_timeout_and_retries(tmp_path):
    s = load_settings(ini(tmp_path, SITE + '\n[llm.judge]\nmax_concurrency = 2\ntimeout_s = 3\nmax_retries = 1\n'), environ={})
    judge, policy = make_client('judge', settings=s, cache=False), make_client('policy', settings=s, cache=False)
    assert (judge.max_concurrency, judge.timeout_s, judge.max_retries, judge.backend.timeout_s) == (2, 3.0, 1, 3.0)
    assert (policy.max_concurrency, policy.timeout_s, policy.max_retries) == (16, 120.0, 4)

class InFlight:
    "A handler that sleeps and records the most requests it saw at once."
    def __init__(self, delay): self.delay, self.now, self.peak, self.lock = delay, 0, 0, threading.Lock()
    def __call__(self, body):
        with self.lock: self.now += 1; self.peak = max(self.peak, self.now)
        time.sleep(self.delay)
        with self.lock: self.now -= 1
        return {'content': 'ok'}

def test_the_role_concurrency_bounds_requests_in_flight_at_its_server():
    handler = InFlight(0.05)
    with FakeOpenAIServer(handler) as srv:
        s = Settings(llm=LLMSettings(judge=LLMRoleSettings(endpoint=srv.base_url, max_concurrency=3)))
        judge = make_client('judge', settings=s, cache=False)
        async def main(): return await asyncio.gather(*(judge.chat([user(f'q{i}')]) for i in range(15)))
        assert len(asyncio.run(main())) == 15
    assert handler.peak == 3

def test_mixed_setup_teacher_served_and_judge_offline(tmp_path):
    with FakeOpenAIServer(echo_model) as srv:
        s = Settings(llm=LLMSettings(teacher=LLMRoleSettings(endpoint=srv.base_url, model='served')))
        offline = OfflineTeacher({'judge': lambda req: '{"score": 1}'})
        teacher = make_client('teacher', teacher=offline, settings=s, cache=False)
        judge = make_client('judge', teacher=offline, settings=s, cache=False)
        async def ask(): return (await teacher.chat([user('x')])).content, (await judge.chat([user('x')], tag='judge')).content
        assert asyncio.run(ask()) == ('served answers', '{"score": 1}')
    assert judge.backend is offline and isinstance(teacher.backend, OpenAIBackend) and len(srv.requests) == 1

def test_roles_share_one_cache_without_reading_each_others_answers(tmp_path):
    with FakeOpenAIServer(echo_model) as a, FakeOpenAIServer(echo_model) as b:
        s = Settings(llm=LLMSettings(teacher=LLMRoleSettings(endpoint=a.base_url, model='m'),
                                     judge=LLMRoleSettings(endpoint=b.base_url, model='m')))
        s.paths.cache_dir = tmp_path
        async def ask(role): return await make_client(role, settings=s).chat([user('same question')])
        first, other, again = asyncio.run(ask('teacher')), asyncio.run(ask('judge')), asyncio.run(ask('teacher'))
    assert not first.cached and not other.cached and again.cached
    assert len(a.requests) == 1 and len(b.requests) == 1 and (tmp_path / 'llm.sqlite').is_file()

def test_make_client_keeps_its_existing_signature(tmp_path):
    s = Settings(); s.paths.cache_dir = tmp_path
    c = make_client('teacher', None, s, True, False)
    assert c.model == 'offline-teacher' and isinstance(c.backend, OfflineTeacher) and c.cache is not None
    assert make_client(settings=s, cache=False).cache is None

"""`envsynth serve-policy` as a real process on 127.0.0.1: rollout policies (the `act` protocol) are served,
the openai SDK talks to them, bad requests get 400s, a failing policy gets a JSON 500 and the server goes on,
objects that are not policies are refused at start-up (exit 2), and every process is stopped by PID."""
import json, os, select, signal, socket, subprocess, sys, textwrap, time
from contextlib import contextmanager
from pathlib import Path
import openai
import pytest

ENVSYNTH = str(Path(sys.executable).parent / 'envsynth')

POLICIES = textwrap.dedent('''
    from envsynth.rollout import OraclePolicy, PolicyTurn
    from envsynth.schema import Action, assistant

    # an oracle for one task: book the flight, then say it is done
    oracle = OraclePolicy([Action(name='book_flight', arguments={'flight_id': 'AF7114', 'passenger': 'Ada'})], final='Done.')

    class Flaky:
        "Answers, except when asked to fail."
        async def act(self, messages, tools):
            if messages[-1].content == 'fail': raise RuntimeError('the model backend is down')
            return PolicyTurn(assistant(f'echo: {messages[-1].content}'), prompt_tokens=3, completion_tokens=2)

    class NeedsArguments:
        def __init__(self, checkpoint): self.checkpoint = checkpoint
        async def act(self, messages, tools): ...

    answer = 42
''')

TOOLS = [{'type': 'function', 'function': {'name': 'book_flight', 'parameters': {'type': 'object', 'properties': {
    'flight_id': {'type': 'string'}, 'passenger': {'type': 'string'}}}}}]

def _free_port():
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def _env(folder: Path) -> dict:
    return {**os.environ, 'PYTHONPATH': f"{folder}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

@pytest.fixture
def policies(tmp_path):
    (tmp_path / 'my_policies.py').write_text(POLICIES)
    return tmp_path

@contextmanager
def serving(spec: str, folder: Path, timeout_s: float = 90):
    "Start `envsynth serve-policy --policy spec`, yield its /v1 base URL once it listens, stop it by PID."
    port = _free_port()
    proc = subprocess.Popen([ENVSYNTH, 'serve-policy', '--policy', spec, '--port', str(port)], env=_env(folder),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)          # the line is printed once the server listens
        line = proc.stdout.readline() if ready else ''
        assert f'http://127.0.0.1:{port}/v1' in line, (line, proc.poll(), proc.stderr.read() if proc.poll() is not None else '')
        yield f'http://127.0.0.1:{port}/v1'
    finally:
        if proc.poll() is None: os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=20) == 0                                      # SIGTERM is a clean stop
        proc.stdout.close(); proc.stderr.close()

def _sdk(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key='none', max_retries=0, timeout=30)

def test_do_nothing_policy_class_is_served(policies):
    with serving('envsynth.rollout:DoNothingPolicy', policies) as url:
        r = _sdk(url).chat.completions.create(model='floor', messages=[{'role': 'user', 'content': 'Book AF7114 for Ada.'}], tools=TOOLS)
    assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason == 'stop' and r.model == 'floor'
    assert "can't help" in r.choices[0].message.content

def test_oracle_policy_object_answers_with_tool_calls(policies):
    with serving('my_policies:oracle', policies) as url:
        sdk = _sdk(url)
        first = sdk.chat.completions.create(model='oracle', messages=[{'role': 'user', 'content': 'Book AF7114 for Ada.'}], tools=TOOLS)
        call = first.choices[0].message.tool_calls[0]
        second = sdk.chat.completions.create(model='oracle', tools=TOOLS, messages=[
            {'role': 'user', 'content': 'Book AF7114 for Ada.'}, first.choices[0].message.model_dump(exclude_none=True),
            {'role': 'tool', 'tool_call_id': call.id, 'content': '{"status": "confirmed"}'}])
        models = [m.id for m in sdk.models.list().data]
    assert first.choices[0].finish_reason == 'tool_calls'
    assert (call.function.name, json.loads(call.function.arguments)) == ('book_flight', {'flight_id': 'AF7114', 'passenger': 'Ada'})
    assert second.choices[0].message.content == 'Done.' and second.choices[0].finish_reason == 'stop'
    assert models == ['envsynth-policy']

def test_bad_requests_get_400_and_a_failing_policy_a_json_500(policies):
    with serving('my_policies:Flaky', policies) as url:
        sdk = _sdk(url)
        for bad, expected in [(dict(messages=[{'role': 'robot', 'content': 'x'}]), 'role'),
                              (dict(messages=[{'role': 'user', 'content': 'x'}], tools=[{'type': 'function', 'function': {'name': 'f', 'parameters': {'type': 'array'}}}]), "type 'object'"),
                              (dict(messages=[{'role': 'tool', 'content': 'x'}]), 'tool_call_id')]:
            with pytest.raises(openai.BadRequestError, match=expected): sdk.chat.completions.create(model='m', **bad)
        with pytest.raises(openai.InternalServerError) as failed:
            sdk.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'fail'}])
        after = sdk.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'still there?'}])
    assert failed.value.status_code == 500 and failed.value.body['message'] == 'RuntimeError: the model backend is down'
    assert after.choices[0].message.content == 'echo: still there?' and after.usage.total_tokens == 5

@pytest.mark.parametrize('spec, said', [
    ('builtins:len', 'builtins:len is not a policy, and calling it with no arguments failed (TypeError'),
    ('my_policies:answer', 'my_policies:answer is not a policy; serve an object with `async act(messages, tools) -> PolicyTurn`'),
    ('my_policies:NeedsArguments', "missing 1 required positional argument: 'checkpoint'"),
    ('no_such_module:x', "cannot load 'no_such_module:x': ModuleNotFoundError"),
    ('my_policies', 'must look like module:attribute'),
])
def test_what_is_not_a_policy_is_refused_at_start_up(policies, spec, said):
    t0 = time.monotonic()
    res = subprocess.run([ENVSYNTH, 'serve-policy', '--policy', spec, '--port', str(_free_port())], env=_env(policies),
                         capture_output=True, text=True, timeout=90)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr.startswith('envsynth serve-policy: error: ') and said in res.stderr, res.stderr
    assert res.stdout == '' and time.monotonic() - t0 < 90                    # it never listened

def test_a_port_in_use_is_a_clear_error(policies):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0)); taken.listen(1)
        res = subprocess.run([ENVSYNTH, 'serve-policy', '--policy', 'envsynth.rollout:DoNothingPolicy', '--port', str(taken.getsockname()[1])],
                             capture_output=True, text=True, timeout=90)
    assert res.returncode == 2 and 'cannot listen on 127.0.0.1:' in res.stderr, res.stderr

def _raw(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    "Send raw bytes to 127.0.0.1:port and return all that comes back until the server closes or answers."
    with socket.create_connection(('127.0.0.1', port), timeout=timeout) as s:
        s.sendall(data)
        out = b''
        while b'\r\n\r\n' not in out or len(out) < out.find(b'\r\n\r\n') + 4 + int((out.split(b'Content-Length: ')[1:] or [b'0'])[0].split(b'\r\n')[0] or 0):
            chunk = s.recv(65536)
            if not chunk: break
            out += chunk
        return out

def _post(path: str, body: bytes, headers: str = '') -> bytes:
    return (f'POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{headers}Content-Length: {len(body)}\r\n\r\n').encode() + body

@pytest.mark.parametrize('server_kind', ['policy', 'fake'])
def test_servers_limit_what_they_read(server_kind):
    "A body over the cap is a 413, deeply nested JSON a 400 (not a dropped connection), a silent client is disconnected."
    from envsynth.fake_server import FakeOpenAIServer
    from envsynth.rollout import PolicyTurn
    from envsynth.schema import assistant
    from envsynth.serve import PolicyServer
    class Echo:
        async def act(self, messages, tools): return PolicyTurn(assistant('hi'))
    srv = PolicyServer(Echo(), max_body_bytes=4096, read_timeout_s=1.0) if server_kind == 'policy' else \
        FakeOpenAIServer(lambda body: {'content': 'hi'}, max_body_bytes=4096, read_timeout_s=1.0)
    with srv:
        port = srv.httpd.server_address[1]
        ok = _raw(port, _post('/v1/chat/completions', json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}]}).encode()))
        assert ok.startswith(b'HTTP/1.1 200'), ok[:300]
        big = _raw(port, _post('/v1/chat/completions', b'{"a": "' + b'x' * 10000 + b'"}'))
        assert big.startswith(b'HTTP/1.1 413'), big[:300]
        deep = b'[' * 3000 + b']' * 3000
        answer = _raw(port, _post('/v1/chat/completions', deep[:4000]))          # under the cap, nested far too deeply
        assert answer.startswith(b'HTTP/1.1 400'), answer[:300]
        t0 = time.monotonic()
        with socket.create_connection(('127.0.0.1', port), timeout=10) as s:   # promises 100 bytes, sends 2
            s.sendall(b'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{}')
            assert s.recv(65536) == b'' or True
        assert time.monotonic() - t0 < 8, 'the server waited for the silent client instead of disconnecting it'
        assert _raw(port, _post('/v1/chat/completions', json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}]}).encode())).startswith(b'HTTP/1.1 200')

def test_policy_server_api_key():
    from envsynth.rollout import PolicyTurn
    from envsynth.schema import assistant
    from envsynth.serve import PolicyError, PolicyServer
    class Echo:
        async def act(self, messages, tools): return PolicyTurn(assistant('hi'))
    with pytest.raises(PolicyError, match='API key'): PolicyServer(Echo(), host='0.0.0.0')
    with PolicyServer(Echo(), api_key='s3cret') as srv:
        ask = lambda key: openai.OpenAI(base_url=srv.base_url, api_key=key, max_retries=0).chat.completions.create(
            model='m', messages=[{'role': 'user', 'content': 'x'}])
        with pytest.raises(openai.AuthenticationError): ask('wrong')
        assert ask('s3cret').choices[0].message.content == 'hi'
    r = subprocess.run([ENVSYNTH, 'serve-policy', '--host', '0.0.0.0', '--policy', 'envsynth.rollout:OraclePolicy'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and 'API key' in r.stderr and 'Traceback' not in r.stderr, r.stderr[-2000:]

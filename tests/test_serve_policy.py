"""`envsynth serve-policy` as a real process on 127.0.0.1: an oracle-style policy module is served,
the openai SDK talks to it, bad input gets 400s, and the process is stopped by PID."""
import json, os, signal, socket, subprocess, sys, textwrap, time
from pathlib import Path
import openai
import pytest

POLICY = textwrap.dedent('''
    from envsynth.schema import ToolCall, assistant
    GOLD = {'Book AF7114 for Ada.': [('book_flight', {'flight_id': 'AF7114', 'passenger': 'Ada'})]}
    async def oracle(messages, tools, sampling):
        "Replays the gold calls of the task named by the first user message, then says done."
        if messages[-1].role == 'tool': return assistant('Done.')
        task = next(m.content for m in messages if m.role == 'user')
        return assistant(tool_calls=[ToolCall.make(n, a, index=i) for i, (n, a) in enumerate(GOLD.get(task, []))] or None,
                         content=None if task in GOLD else 'I cannot help with that.')
''')

def _free_port():
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

@pytest.fixture
def served(tmp_path):
    (tmp_path / 'my_policies.py').write_text(POLICY)
    port = _free_port()
    env = {**os.environ, 'PYTHONPATH': f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([str(Path(sys.executable).parent / 'envsynth'), 'serve-policy', '--policy', 'my_policies:oracle',
                             '--port', str(port)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()                      # printed once the server listens
        assert f'http://127.0.0.1:{port}/v1' in line, line
        yield f'http://127.0.0.1:{port}/v1'
    finally:
        os.kill(proc.pid, signal.SIGTERM); proc.wait(timeout=10)

def test_serve_policy_answers_with_tool_calls(served):
    sdk = openai.OpenAI(base_url=served, api_key='none', max_retries=0, timeout=30)
    tools = [{'type': 'function', 'function': {'name': 'book_flight', 'parameters': {'type': 'object', 'properties': {
        'flight_id': {'type': 'string'}, 'passenger': {'type': 'string'}}}}}]
    r = sdk.chat.completions.create(model='oracle', messages=[{'role': 'user', 'content': 'Book AF7114 for Ada.'}], tools=tools)
    call = r.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ('book_flight', {'flight_id': 'AF7114', 'passenger': 'Ada'})
    r2 = sdk.chat.completions.create(model='oracle', tools=tools, messages=[
        {'role': 'user', 'content': 'Book AF7114 for Ada.'}, r.choices[0].message.model_dump(exclude_none=True),
        {'role': 'tool', 'tool_call_id': call.id, 'content': '{"status": "confirmed"}'}])
    assert r2.choices[0].message.content == 'Done.' and r2.choices[0].finish_reason == 'stop'
    assert [m.id for m in sdk.models.list().data] == ['envsynth-policy']

def test_serve_policy_rejects_bad_requests_with_400(served):
    sdk = openai.OpenAI(base_url=served, api_key='none', max_retries=0, timeout=30)
    for bad, expected in [(dict(messages=[{'role': 'robot', 'content': 'x'}]), 'role'),
                          (dict(messages=[{'role': 'user', 'content': 'x'}], tools=[{'type': 'function', 'function': {'name': 'f', 'parameters': {'type': 'array'}}}]), "type 'object'"),
                          (dict(messages=[{'role': 'tool', 'content': 'x'}]), 'tool_call_id')]:
        with pytest.raises(openai.BadRequestError, match=expected): sdk.chat.completions.create(model='m', **bad)

def test_serve_policy_refuses_a_missing_policy(tmp_path):
    res = subprocess.run([str(Path(sys.executable).parent / 'envsynth'), 'serve-policy', '--policy', 'no_such_module:x', '--port', '0'],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and 'cannot load' in res.stderr

"""Slow tier: VLLMEngineBackend (vllm.LLM in-process, micro-batched) on the CPU build of vLLM, run in
`.venv-vllm/` with this repository's lib/ on the path, serving a tiny random Qwen3."""
import json, subprocess
import pytest
from _vllm import REPO, ensure_vllm_venv, vllm_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

SCRIPT = '''
import asyncio, json, sys
from pydantic import BaseModel
from envsynth.llm import LLMClient, StructuredOutputError
from envsynth.local_models import VLLMEngineBackend, build_tiny_qwen3
from envsynth.schema import Tool, user

backend = VLLMEngineBackend(build_tiny_qwen3(sys.argv[1]), enforce_eager=True, max_model_len=2048, dtype='bfloat16')
client = LLMClient(backend, 'tiny-qwen3', max_concurrency=64)
search = Tool.parse({'name': 'search', 'description': 'Search.', 'parameters': {'type': 'object', 'properties': {'query': {'type': 'string'}}}})

class Answer(BaseModel):
    answer: str

async def main():
    plain = await asyncio.gather(*(client.chat([user(f'question {i}')], max_tokens=16, temperature=0) for i in range(12)))
    tools = await asyncio.gather(*(client.chat([user(f'find {i}')], tools=[search], max_tokens=24, temperature=0) for i in range(4)))
    try:
        r = await client.chat([user('Answer in JSON.')], response_model=Answer, max_tokens=48, temperature=0)
        structured = 'valid' if isinstance(r.parsed, Answer) else 'wrong type'
    except StructuredOutputError as e: structured = 'failed closed'
    again = await LLMClient(backend, 'tiny-qwen3').chat([user('question 0')], max_tokens=16, temperature=0)
    print('RESULT ' + json.dumps({'plain': len(plain), 'tokens': [r.completion_tokens for r in plain], 'batches': backend.batches,
                                  'tool_results': len(tools), 'structured': structured, 'deterministic': again.message == plain[0].message}))
asyncio.run(main())
'''

def test_vllm_engine_backend_batches_concurrent_requests(tmp_path):
    python = ensure_vllm_venv()
    res = subprocess.run([str(python), '-c', SCRIPT, str(tmp_path / 'tiny-qwen3')], capture_output=True, text=True, timeout=900,
                         env=vllm_env({'PYTHONPATH': str(REPO / 'lib')}))
    assert res.returncode == 0, res.stderr[-4000:]
    out = json.loads(next(l for l in res.stdout.splitlines() if l.startswith('RESULT '))[7:])
    print('vLLM engine:', out)
    assert out['plain'] == 12 and all(0 < t <= 16 for t in out['tokens'])
    assert out['batches'][0] == 12 and len(out['batches']) < 12 + 4 + 1    # 12 concurrent requests -> one engine call
    assert out['tool_results'] == 4 and out['structured'] in ('valid', 'failed closed') and out['deterministic']

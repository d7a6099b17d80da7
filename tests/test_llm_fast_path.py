"""The cheap parts of envsynth.llm: the cache key (orjson bytes, the same key `content_hash` gives,
so caches on disk keep hitting), the in-memory layer of `ChatCache` (hits nobody can change,
threads, the ledger), and the sampling parameters that reach the server (`max_tokens` per call and
per client)."""
import asyncio, random
import pytest
from concurrent.futures import ThreadPoolExecutor
from envsynth.fake_server import FakeOpenAIServer
from envsynth.llm import (ChatCache, ChatRequest, Completion, Ledger, LLMClient, OfflineTeacher,
                          OpenAIBackend, make_client)
from envsynth.schema import Message, Tool, ToolCall, assistant, content_hash, user
from envsynth.settings import LLMRoleSettings, LLMSettings, Settings

WEATHER = Tool.parse({'name': 'get_weather', 'description': 'Weather.', 'parameters': {
    'type': 'object', 'required': ['city'],
    'properties': {'city': {'type': 'string'},
                   'days': {'type': 'integer', 'minimum': 1, 'maximum': 7.0}}}})
FLOATS = [0.0, -0.0, 1.0, 2.5, 1e-05, 5e-5, 1e-4, 0.1 + 0.2, 1e15, 1e16, 123456789012.5, 1 / 3,
          -7.25, 1e300, 3.0e-300, 0.7, 12.0]
INTS = [0, -1, 7, 2**53, 2**63 - 1, 2**64, -2**70, True, False, None]

def old_key(backend_id, req: ChatRequest) -> str:
    "The key as it was computed before orjson: `content_hash` of the request."
    return content_hash({'backend': backend_id, 'model': req.model,
                         'messages': [m.to_openai() for m in req.messages],
                         'tools': [t.to_openai() for t in req.tools or []],
                         'schema': req.response_schema, 'sampling': req.sampling}, 32)

def random_text(rng: random.Random) -> str:
    code_point = lambda: rng.choice([rng.randrange(0, 0x80), rng.randrange(0x80, 0xd800),
                                     rng.randrange(0xe000, 0x110000)])
    return ''.join(chr(code_point()) for _ in range(rng.randrange(6)))

def random_value(rng: random.Random, depth=0):
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0: return rng.choice(FLOATS)
    if kind == 1: return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-12, 12)
    if kind == 2: return rng.choice(INTS)
    if kind in (3, 4): return random_text(rng)
    if kind == 5: return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    key = lambda: random_text(rng) if rng.random() < .5 else f'k{rng.randrange(9)}'
    return {key(): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}

def test_request_key_is_the_content_hash_key():
    rng = random.Random(0)
    for i in range(3000):
        sampling = {'temperature': random_value(rng), f'x{i % 7}': random_value(rng)}
        schema = {'type': 'object', 'extra': random_value(rng)} if i % 3 else None
        messages = [user(str(random_value(rng))), assistant(str(random_value(rng)))]
        req = ChatRequest(model='m', messages=messages, tools=[WEATHER] if i % 2 else None,
                          response_schema=schema, sampling=sampling)
        assert req.key('b') == old_key('b', req), (sampling, schema)

def test_request_key_of_every_character():
    "orjson and json.dumps must escape every code point alike (control characters, U+2028, ...)."
    chars = [chr(c) for c in range(0x110000) if not 0xd800 <= c < 0xe000]
    for start in range(0, len(chars), 4096):
        text = ''.join(chars[start:start + 4096])
        req = ChatRequest(model='m', messages=[user(text)],
                          sampling={text[:40]: 1, text[-40:]: 0.5})
        assert req.key('b') == old_key('b', req), hex(ord(chars[start]))

def test_caches_written_before_still_hit(tmp_path):
    "An entry stored under the key the old code computed answers the same call now (replay mode)."
    path, call = tmp_path / 'llm.sqlite', ToolCall.make('get_weather', {'city': 'Paris'})
    messages = [user('héllo \u2028 "q" 1.50'), assistant(tool_calls=[call]),
                Message(role='tool', tool_call_id=call.id, content='sunny')]
    sampling = {'temperature': 0.7, 'top_p': 1.0, 'max_tokens': 256}
    req = ChatRequest(model='m', messages=messages, tools=[WEATHER], sampling=sampling)
    before = Completion(message=assistant('from before'))
    ChatCache(path).put(old_key(OfflineTeacher.id, req), before)
    client = LLMClient(OfflineTeacher(), 'm', cache=path, replay=True)
    r = asyncio.run(client.chat(messages, tools=[WEATHER], **sampling))
    assert r.cached and r.content == 'from before'
    assert client.ledger['default'].requests == 1 and client.ledger['default'].cache_hits == 1

def test_a_hit_cannot_be_changed_into_the_cache(tmp_path):
    answer = lambda req: [ToolCall.make('get_weather', {'city': 'Paris'})]
    client = LLMClient(OfflineTeacher({'default': answer}), 'm', cache=tmp_path / 'llm.sqlite')
    req = ChatRequest(model='m', messages=[user('weather?')], tools=[WEATHER])
    async def main():
        ask = lambda: client.chat([user('weather?')], tools=[WEATHER])
        results = [await ask() for _ in range(4)]        # the miss's result, then hits
        for r in results:                                # each is the caller's to change
            r.message.content = 'changed'
            r.message.tool_calls[0].function.arguments = '{"city": "Rome"}'
            r.message.tool_calls.append(r.message.tool_calls[0]); r.problems.append('changed')
        out, cached = await client.complete(req)
        assert cached
        out.message.tool_calls.clear(); out.problems.append('changed')
        client.cache.get(req.key(client.backend.id)).message.tool_calls[0].function.arguments = '{}'
        return await ask()
    again = asyncio.run(main())
    assert again.cached and again.content is None and again.problems == []
    assert [c.args for c in again.tool_calls] == [{'city': 'Paris'}]

def test_the_memory_is_bounded_and_optional(tmp_path):
    cache = ChatCache(tmp_path / 'c.sqlite', memory_items=3)
    for i in range(10): cache.put(f'k{i}', Completion(message=assistant(f'a{i}')))
    assert list(cache._memory) == ['k7', 'k8', 'k9']
    assert cache.get('k0').message.content == 'a0' and list(cache._memory) == ['k8', 'k9', 'k0']
    off = ChatCache(tmp_path / 'c.sqlite', memory_items=0)
    assert off.get('k5').message.content == 'a5' and not off._memory

def test_threads_share_one_cache(tmp_path):
    cache = ChatCache(tmp_path / 'c.sqlite', memory_items=50)
    def work(w):
        for i in range(200):
            cache.put(f'{w}-{i}', Completion(message=assistant(f'{w} {i}')))
            got = cache.get(f'{w}-{random.randrange(i + 1)}')
            assert got is not None and got.message.content.startswith(f'{w} ')
        return w
    with ThreadPoolExecutor(8) as pool: assert sorted(pool.map(work, range(8))) == list(range(8))
    assert len(cache) == 1600 and len(cache._memory) == 50

def test_hits_are_counted_as_before(tmp_path):
    journal = tmp_path / 'ledger.jsonl'
    client = LLMClient(OfflineTeacher({'t': lambda req: 'ok'}), 'm', cache=tmp_path / 'llm.sqlite',
                       ledger=Ledger(journal))
    async def main():
        for _ in range(3):
            for q in ('a', 'b'): await client.chat([user(q)], tag='t')
    asyncio.run(main())
    s = client.ledger['t']
    assert (s.requests, s.cache_hits, s.backend_calls) == (6, 4, 2)
    assert Ledger.read_journals([journal]).to_dict() == client.ledger.to_dict()

def test_max_tokens_and_other_sampling_reach_the_server():
    with FakeOpenAIServer(lambda body: {'content': 'ok'}) as srv:
        client = LLMClient(OpenAIBackend(srv.base_url), 'fake',
                           sampling={'max_tokens': 64, 'temperature': 0.0})
        async def main():
            await client.chat([user('a')])
            await client.chat([user('b')], max_tokens=7, top_k=20, extra_body={'min_p': 0.1})
            await client.aclose()
        asyncio.run(main())
        per_client, per_call = srv.requests
    assert per_client['max_tokens'] == 64 and per_client['temperature'] == 0.0
    assert per_call['max_tokens'] == 7 and per_call['temperature'] == 0.0
    assert per_call['top_k'] == 20 and per_call['min_p'] == 0.1 and 'extra_body' not in per_call

def test_a_roles_max_tokens_reaches_its_server():
    with FakeOpenAIServer(lambda body: {'content': 'ok'}) as srv:
        role = LLMRoleSettings(endpoint=srv.base_url, model='judge-model')
        s = Settings(llm=LLMSettings(judge=role))
        judge = make_client('judge', settings=s, cache=False, sampling={'max_tokens': 33})
        async def main():
            await judge.chat([user('score this')]); await judge.aclose()
        asyncio.run(main())
        (body,) = srv.requests
    assert body['model'] == 'judge-model' and body['max_tokens'] == 33

def test_request_key_refuses_non_finite_numbers_as_the_content_hash_key_does():
    "orjson writes NaN and infinities as null: the key must not confuse them with None."
    for bad in (float('nan'), float('inf'), -float('inf')):
        for sampling, schema in (({'temperature': bad}, None), ({}, {'type': 'number', 'maximum': bad})):
            req = ChatRequest(model='m', messages=[assistant(tool_calls=[ToolCall.make('f', {})])],
                              response_schema=schema, sampling=sampling)
            with pytest.raises(ValueError, match='non-finite'): old_key('b', req)
            with pytest.raises(ValueError, match='non-finite'): req.key('b')
    none = ChatRequest(model='m', messages=[user('hi')], sampling={'temperature': None})
    assert none.key('b') == old_key('b', none)

"""envsynth.llm against real HTTP (FakeOpenAIServer on 127.0.0.1) and real processes: the concurrency
bound, the cache shared by processes and surviving restarts, and failures that reach a pipeline stage."""
import asyncio, json, subprocess, sys, textwrap, threading, time
import pytest
from pydantic import BaseModel
from envsynth.fake_server import FakeOpenAIServer, Reply
from envsynth.llm import (ChatCache, LLMClient, OfflineTeacher, OpenAIBackend, StructuredOutputError, TransportError,
                          ChatRequest, Completion)
from envsynth.pipeline import arun_stage, read_entries
from envsynth.schema import Message, user

class InFlight:
    "A handler that sleeps and records the most requests it saw at once."
    def __init__(self, delay): self.delay, self.now, self.peak, self.lock = delay, 0, 0, threading.Lock()
    def __call__(self, body):
        with self.lock: self.now += 1; self.peak = max(self.peak, self.now)
        time.sleep(self.delay)
        with self.lock: self.now -= 1
        return {'content': 'ok'}

def test_requests_in_flight_never_exceed_max_concurrency():
    handler = InFlight(0.05)
    with FakeOpenAIServer(handler) as srv:
        client = LLMClient(OpenAIBackend(srv.base_url), 'fake', max_concurrency=5)
        async def main(): return await asyncio.gather(*(client.chat([user(f'q{i}')]) for i in range(40)))
        results = asyncio.run(main())
    assert len(results) == 40 and handler.peak == 5
    assert client.ledger['default'].backend_calls == 40

def test_timeouts_are_bounded_and_counted():
    with FakeOpenAIServer(lambda body: Reply({'content': 'late'}, delay=2.0)) as srv:
        client = LLMClient(OpenAIBackend(srv.base_url), 'fake', timeout_s=0.2, max_retries=1, backoff_s=0.01)
        t0 = time.monotonic()
        with pytest.raises(TransportError, match='timed out'):
            asyncio.run(client.chat([user('x')], tag='slow'))
        assert time.monotonic() - t0 < 1.5
        assert client.ledger['slow'].failures == {'transport': 1} and client.ledger['slow'].retries == 1

WRITER = textwrap.dedent('''
    import sys
    from envsynth.llm import ChatCache, Completion
    from envsynth.schema import Message
    cache, who = ChatCache(sys.argv[1]), sys.argv[2]
    for i in range(300):
        cache.put(f'{who}-{i}', Completion(message=Message(role='assistant', content=f'{who} {i}')))
        cache.put(f'shared-{i}', Completion(message=Message(role='assistant', content=f'shared {i}')))
''')

def test_cache_is_shared_safely_by_processes_and_survives_restarts(tmp_path):
    path = tmp_path / 'llm.sqlite'
    ChatCache(path)                                    # create the schema once
    procs = [subprocess.Popen([sys.executable, '-c', WRITER, str(path), w]) for w in ('a', 'b', 'c')]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    cache = ChatCache(path)
    assert len(cache) == 3 * 300 + 300
    assert cache.get('b-299').message.content == 'b 299' and cache.get('shared-7').message.content == 'shared 7'

def test_cached_answers_replay_after_a_restart(tmp_path):
    calls = []
    teacher = OfflineTeacher({'t': lambda req: calls.append(1) or f'answer to {req.messages[-1].content}'})
    first = LLMClient(teacher, 'offline', cache=tmp_path / 'c.sqlite')
    asyncio.run(first.chat([user('q')], tag='t', temperature=0.7, seed=3))
    again = LLMClient(OfflineTeacher(), 'offline', cache=tmp_path / 'c.sqlite', replay=True)   # new process state
    r = asyncio.run(again.chat([user('q')], tag='t', temperature=0.7, seed=3))
    assert r.cached and r.content == 'answer to q' and len(calls) == 1
    with pytest.raises(Exception, match='replay mode'):
        asyncio.run(again.chat([user('q')], tag='t', temperature=0.7, seed=4))       # the seed is part of the key

class Score(BaseModel):
    score: float

def test_a_judge_that_fails_closed_becomes_a_counted_failure_in_a_stage(tmp_path):
    "ASTRA's judge scores 1.0 when the judge fails; here the item fails, is counted, and is retried next run."
    def judge_reply(body):
        text = body['messages'][0]['content']
        return {'content': '{"score": 0.25}' if 'good' in text else 'The trajectory looks fine to me.'}
    with FakeOpenAIServer(judge_reply) as srv:
        client = LLMClient(OpenAIBackend(srv.base_url), 'fake', max_attempts=2)
        async def judge(rec):
            r = await client.chat([user(rec['trajectory'])], response_model=Score, tag='judge')
            return {'trajectory': rec['trajectory'], 'score': r.parsed.score}
        res = asyncio.run(arun_stage(judge, [{'trajectory': 'good one'}, {'trajectory': 'bad one'}], tmp_path / 'judged', progress=False))
    assert res.stats['kept'] == 1 and res.stats['failed'] == {'StructuredOutputError': 1}
    assert [e['status'] for e in read_entries(tmp_path / 'judged')] == ['kept', 'failed']
    assert client.ledger['judge'].failures == {'structured_output': 1}

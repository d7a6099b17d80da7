"""A `Feed` holds a bounded number of records however many the stage keeps: a record leaves it once every reader took
it, and the feeding stage waits while `limit` records are held (counted, not timed)."""
import asyncio
import pytest
from envsynth.pipeline import Feed, FeedError, arun_stage, read_entries, read_records

N = 1000


def test_a_feed_over_many_items_holds_at_most_its_limit(tmp_path):
    async def main():
        feed = Feed(limit=16)
        async def double(x): return [{'x': x, 'k': k} for k in range(2)]           # two records per item
        async def slow(rec):
            await asyncio.sleep(0); await asyncio.sleep(0); return {'y': rec['x']}  # the reader lags the writer
        await asyncio.gather(arun_stage(double, range(N), tmp_path / 'a', feed=feed, concurrency=32, progress=False),
                             arun_stage(slow, feed, tmp_path / 'b', name='b', concurrency=4, progress=False))
        return feed
    feed = asyncio.run(main())
    assert feed.count == 2 * N and feed.peak <= 16 + 2 * 32       # the limit plus one item per writer in flight
    assert len(feed.held) == 0 and len(read_records(tmp_path / 'b')) == 2 * N
    # the streamed stage equals the stage run on the finished records (same keys, indices and records)
    asyncio.run(arun_stage(lambda r: {'y': r['x']}, read_records(tmp_path / 'a'), tmp_path / 'c', name='b',
                           progress=False))
    assert read_entries(tmp_path / 'b') == read_entries(tmp_path / 'c')


def test_a_resumed_stage_feeds_its_reused_records_within_the_limit(tmp_path):
    async def double(x): return {'x': x}
    asyncio.run(arun_stage(double, range(N), tmp_path / 'a', progress=False))
    async def main():
        feed = Feed(limit=8)
        done = await asyncio.gather(arun_stage(double, range(N), tmp_path / 'a', feed=feed, progress=False),
                                    arun_stage(lambda r: {'y': r['x']}, feed, tmp_path / 'b', progress=False))
        return feed, done
    feed, (a, b) = asyncio.run(main())
    assert a.run['computed'] == 0 and b.run['computed'] == N and feed.count == N and feed.peak <= 8


def test_a_feed_without_reader_keeps_its_records_and_a_late_second_reader_is_refused(tmp_path):
    async def main():
        feed = Feed(limit=4)
        await arun_stage(lambda x: {'x': x}, range(50), tmp_path / 'a', feed=feed, progress=False)
        assert len(feed.held) == 50                 # nobody read yet: nothing dropped, and the stage was not held back
        first = aiter(feed); got = [await anext(first) for _ in range(3)]
        with pytest.raises(FeedError, match='second reader'): aiter(feed)
        rest = [r async for r in first]
        return got + rest, feed
    got, feed = asyncio.run(main())
    assert [r['x'] for r in got] == list(range(50)) and len(feed.held) == 0
    assert feed.by('x')[49] == {'x': 49}            # an index asked for later reads what was dropped from the folder

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
    # the streamed stage equals the stage run on the finished records with their owners (same keys, indices,
    # records and owners: what `RunFolder.inputs` reads)
    asyncio.run(arun_stage(lambda r: {'y': r['x']}, read_records(tmp_path / 'a', owners=True), tmp_path / 'c',
                           name='b', progress=False))
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


# ---- a chain of stages on shards: each shard runs the whole chain, fed stage to stage
from envsynth.pipeline import Drop, RunFolder, Step, shard_of  # noqa: E402

CHAIN = ('a', 'b', 'c')


def _chain(root, shard=None, stages=CHAIN, calls=None):
    """Three per-item stages (a: 2 records per item or a drop; b and c: one record, with duplicates: items of
    different owners can make the same record) run by `run_chain` on `shard`."""
    run = RunFolder(root, [Step(s, f'0{i}_{s}', per_item=True) for i, s in enumerate(CHAIN)], concurrency=8)
    def counted(stage, fn):
        async def f(rec):
            if calls is not None: calls[stage] = calls.get(stage, 0) + 1
            await asyncio.sleep(0); return fn(rec)
        return f
    fns = {'a': counted('a', lambda x: [{'x': x}, {'x': x + 1}] if x % 5 else Drop('five')),
           'b': counted('b', lambda r: {'y': r['x'] // 2}), 'c': counted('c', lambda r: {'z': r['y'] * 3})}
    steps = {'a': lambda: run.run_items('a', fns['a'], list(range(200)), shard=shard),
             'b': lambda: run.run_items('b', fns['b'], run.inputs('a'), shard=shard),
             'c': lambda: run.run_items('c', fns['c'], run.inputs('b'), shard=shard)}
    asyncio.run(run.run_chain(steps, stages, shard))
    return run


def _layout(run, n):
    "Each stage's keys per shard file of the `n`-shard layout."
    return {s: [sorted(e['key'] for e in read_entries_of(run.dir(s) / f'shard-{i:05d}-of-{n:05d}.jsonl'))
                for i in range(n)] for s in CHAIN}


def read_entries_of(path):
    import json
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_shards_running_the_whole_chain_then_a_finishing_run_equal_one_unsharded_run(tmp_path):
    clean = _chain(tmp_path / 'clean')
    want = {s: clean.entries(s) for s in CHAIN}
    assert {s: len(v) for s, v in want.items()} == {'a': 200, 'b': 200, 'c': 101}   # duplicates counted once
    sharded = tmp_path / 'sharded'
    for i in range(3): _chain(sharded, f'{i}/3')          # one job per shard: a, b and c fed one into the next
    run = RunFolder(sharded, clean.steps.values())
    assert run.finished(*CHAIN)                            # every shard of every stage: nothing waits for a stage
    untimed = lambda es: sorted((e['key'], e['status'], e.get('shard_by'), str(e.get('records'))) for e in es)
    # an item's shard is its first-stage ancestor's: shard i of b and c holds what shard i of a made
    for s in CHAIN:
        for e in run.entries(s): assert shard_of(e.get('shard_by', e['key']), 3) in range(3)
        for i in range(3):
            mine = read_entries_of(run.dir(s) / f'shard-{i:05d}-of-00003.jsonl')
            assert all(shard_of(e.get('shard_by', e['key']), 3) == i for e in mine)
    # duplicates made in two shards are computed twice, the rest once; the finishing run computes nothing
    calls = {}
    _chain(sharded, calls=calls)
    assert calls == {} and {s: run.entries(s) for s in CHAIN} == want
    assert [p.name for p in run.dir('c').glob('shard-*.jsonl')] == ['shard-00000-of-00001.jsonl']


def test_a_stage_run_alone_on_a_shard_takes_what_the_chained_shard_takes(tmp_path):
    """A record made by items of two shards (a duplicate) is computed by both chained shards; a stage run alone
    reads one owner for it (the folder's entry): it takes a part of what the chained shard takes, never another
    shard's item, so any mix of the two ways leaves no item out."""
    for i in range(2): _chain(tmp_path / 'chained', f'{i}/2')
    for s in CHAIN:                                        # the same layout, one stage at a time (inputs from disk)
        for i in range(2): _chain(tmp_path / 'staged', f'{i}/2', stages=(s,))
    chained, staged = (_layout(RunFolder(tmp_path / d, [Step(s, f'0{i}_{s}', per_item=True)
                                                        for i, s in enumerate(CHAIN)]), 2)
                       for d in ('chained', 'staged'))
    assert chained['a'] == staged['a']                     # the first stage: each item's own key
    for s in CHAIN:
        assert all(set(staged[s][i]) <= set(chained[s][i]) for i in range(2))
        assert set().union(*staged[s]) == set().union(*chained[s]) and all(len(k) > 10 for k in staged[s])
    assert sum(map(len, chained['c'])) > sum(map(len, staged['c']))    # the duplicates, computed twice


def test_a_stage_run_holds_neither_its_records_nor_its_inputs(tmp_path):
    """1,000 records of 40 KB (40 MB) through two fed stages, computed, then reused by a second run: Python's peak of
    allocated memory stays a few MB (the journals' records are read back from disk one at a time when needed)."""
    import tracemalloc
    n, size = 1000, 40_000
    async def make(i): return {'i': i, 'text': 'x' * size}
    async def both():
        feed = Feed(limit=16)
        return await asyncio.gather(
            arun_stage(make, range(n), tmp_path / 'a', feed=feed, concurrency=8, progress=False),
            arun_stage(lambda r: {'i': r['i'], 'n': len(r['text'])}, feed, tmp_path / 'b', progress=False))
    peaks = []
    for _ in range(2):                                   # computed, then every item reused
        tracemalloc.start()
        a, b = asyncio.run(both())
        peaks.append(tracemalloc.get_traced_memory()[1]); tracemalloc.stop()
    assert a.run == {**a.run, 'computed': 0, 'reused': n} and b.stats['kept'] == n
    assert max(peaks) < n * size / 8, [p / 1e6 for p in peaks]
    assert [r['n'] for r in read_records(tmp_path / 'b')] == [size] * n

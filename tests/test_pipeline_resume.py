"""Kill-and-resume: a stage run in a real subprocess is SIGKILLed at random moments, restarted until it
finishes, and must end with exactly the records of an uninterrupted run (no loss, no duplicates)."""
import json, random, subprocess, sys, textwrap, time
from pathlib import Path
import pytest
from envsynth.pipeline import read_entries, read_records, run_stage

N_ITEMS = 300

WORKER = textwrap.dedent('''
    import asyncio, sys, time
    from envsynth.pipeline import Drop, run_stage, arun_stage
    mode, out_dir, with_failures = sys.argv[1], sys.argv[2], sys.argv[3] == '1'

    def work(x, ctx):
        if x % 11 == 0: return Drop('multiple of eleven', str(x))
        if with_failures and x % 37 == 5: raise RuntimeError(f'item {x} always fails')
        return [{'x': x, 'copy': k, 'draw': ctx.rng.random()} for k in range(x % 3 + 1)]   # 1 to 3 records

    def slow_work(x, ctx):
        time.sleep(0.004); return work(x, ctx)

    async def async_work(x, ctx):
        await asyncio.sleep(0.02 * ((x * 7) % 5)); return work(x, ctx)

    inputs = [{'x': x} for x in range({n})]
    if mode == 'sync': run_stage(lambda r, ctx: slow_work(r['x'], ctx), inputs, out_dir, name='resume_test', progress=False)
    else: asyncio.run(arun_stage(lambda r, ctx: async_work(r['x'], ctx), inputs, out_dir, name='resume_test', concurrency=8, progress=False))
''').replace('{n}', str(N_ITEMS))

def _run(worker, mode, out, failures):
    return subprocess.Popen([sys.executable, str(worker), mode, str(out), '1' if failures else '0'])

def _lines(path: Path) -> int:
    return path.read_bytes().count(b'\n') if path.exists() else 0

def _run_with_kills(worker, mode, out, failures, seed, kills=6):
    """Start the stage and SIGKILL it once its journal has grown by a random number of lines (so every kill
    lands mid-run, however slow the machine is), `kills` times; then let one run complete."""
    rng, journal, mid_run_kills = random.Random(seed), out / 'shard-00000-of-00001.jsonl', 0
    for attempt in range(kills + 1):
        before = _lines(journal)
        target = before + rng.randint(1, N_ITEMS // (2 * kills)) if attempt < kills else None
        proc, deadline = _run(worker, mode, out, failures), time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if target is not None and _lines(journal) >= target:
                proc.kill(); break
            time.sleep(0.002)
        if proc.poll() is None and target is None: proc.kill()
        proc.wait()
        if target is not None and proc.returncode != 0:
            mid_run_kills += before < _lines(journal) < N_ITEMS
            continue
        assert proc.returncode == 0, f'worker failed with exit code {proc.returncode}'
        print(f'{mode}: {attempt} kills, {mid_run_kills} mid-run'); return mid_run_kills
    raise AssertionError('the stage never completed')

@pytest.mark.parametrize('mode,failures', [('sync', True), ('async', False)])
def test_resume_after_kill_gives_the_uninterrupted_records(tmp_path, mode, failures):
    worker = tmp_path / 'worker.py'; worker.write_text(WORKER)
    reference, resumed = tmp_path / 'reference', tmp_path / 'resumed'
    assert _run(worker, mode, reference, failures).wait(timeout=120) == 0
    mid_run_kills = _run_with_kills(worker, mode, resumed, failures, {'sync': 1, 'async': 2}[mode])
    assert mid_run_kills >= 3, f'only {mid_run_kills} kills landed mid-run: the test did not exercise resuming'

    ref_entries, got_entries = read_entries(reference), read_entries(resumed)
    assert [e['key'] for e in got_entries] == [e['key'] for e in ref_entries]          # no loss, no duplicates
    assert got_entries == ref_entries
    records = read_records(resumed)
    assert records == read_records(reference)
    assert len({(r['x'], r['copy']) for r in records}) == len(records)
    stats = json.loads((resumed / 'stats.json').read_text())
    assert stats == json.loads((reference / 'stats.json').read_text())
    assert stats['inputs'] == N_ITEMS and stats['dropped'] == {'multiple of eleven': 28}
    if not failures:   # a completed shard is rewritten in input order: byte-identical files
        name = 'shard-00000-of-00001.jsonl'
        assert (resumed / name).read_bytes() == (reference / name).read_bytes()
        assert stats['failed'] == {}
    else:
        assert stats['failed'] == {'RuntimeError': 7}

def test_a_torn_last_line_is_discarded_and_recomputed(tmp_path):
    def work(x, ctx): return {'x': x, 'draw': ctx.rng.random()}
    ref = run_stage(work, range(50), tmp_path / 'ref', progress=False)
    out = tmp_path / 'torn'
    run_stage(work, range(30), out, name='work', progress=False)
    journal = out / 'shard-00000-of-00001.jsonl'
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b''.join(lines[:-1]) + lines[-1][:17])          # the last write was cut mid-line
    res = run_stage(work, range(50), out, name='work', progress=False)
    assert res.run == {**res.run, 'computed': 21, 'reused': 29}
    assert read_records(out) == ref.records()
    assert journal.read_bytes() == (tmp_path / 'ref' / 'shard-00000-of-00001.jsonl').read_bytes()


def test_shards_finishing_at_once_leave_a_total_that_names_both(tmp_path, monkeypatch):
    """Shard 0 has counted its total (only its own stats file was there) when shard 1 finishes: shard 1
    must wait for shard 0's write, else shard 0's older total replaces shard 1's and the next stage sees an unfinished
    stage. The interleaving is forced: shard 0 pauses before writing until shard 1 is done or waits at the lock."""
    import threading
    from envsynth import pipeline
    from envsynth.pipeline import RunFolder, Step
    run = RunFolder(tmp_path, [Step('a', '01_a', per_item=True), Step('b', '02_b', per_item=True)])
    out, inputs = run.dir('a'), [{'x': x} for x in range(40)]
    first, shard1_waiting_or_done = threading.Event(), threading.Event()
    real_write, real_flock = pipeline.atomic_write, pipeline.fcntl.flock

    def paused_write(path, data):                     # shard 0, its total counted, before writing stats.json
        if threading.current_thread().name == 'shard0' and path.name == 'stats.json' and not first.is_set():
            first.set()
            assert shard1_waiting_or_done.wait(30), 'shard 1 neither finished nor waited at the lock'
        return real_write(path, data)

    def flock(f, op):
        if threading.current_thread().name == 'shard1' and getattr(f, 'name', '').endswith('.stats.lock'):
            shard1_waiting_or_done.set()
        return real_flock(f, op)

    monkeypatch.setattr(pipeline, 'atomic_write', paused_write)
    monkeypatch.setattr(pipeline.fcntl, 'flock', flock)
    shard = lambda i: run_stage(lambda r: {'y': r['x']}, inputs, out, name='a', shard=(i, 2), progress=False)

    def shard1():
        assert first.wait(30); shard(1); shard1_waiting_or_done.set()
    threads = [threading.Thread(target=shard, args=(0,), name='shard0'), threading.Thread(target=shard1, name='shard1')]
    for t in threads: t.start()
    for t in threads: t.join(60)
    assert json.loads((out / 'stats.json').read_text())['shards'] == ['00000-of-00002', '00001-of-00002']
    assert run.finished('a') and run.stats('a')['kept'] == 40


def test_a_total_that_misses_a_finished_shard_is_counted_again(tmp_path):
    "A stats.json written by an older version's race (one shard missing) does not hold the next stage back."
    from envsynth.pipeline import RunFolder, Step
    run = RunFolder(tmp_path, [Step('a', '01_a', per_item=True)])
    for i in (0, 1): run_stage(lambda r: {'y': r['x']}, [{'x': x} for x in range(20)], run.dir('a'), name='a',
                               shard=(i, 2), progress=False)
    stale = json.loads((run.dir('a') / 'stats.json').read_text())
    (run.dir('a') / 'stats.json').write_text(json.dumps({**stale, 'shards': ['00000-of-00002'], 'kept': 9}))
    assert run.finished('a') and run.stats('a')['shards'] == ['00000-of-00002', '00001-of-00002']
    assert run.stats('a')['kept'] == 20
    assert not RunFolder(tmp_path / 'none', [Step('a', '01_a', per_item=True)]).finished('a')

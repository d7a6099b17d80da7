"""SynthAgent's task synthesis as Slurm arrays and a finishing job (benchmarks/scale_chain.py at a small size).

On a real single-node Slurm (root only; Slurm installed by tests/test_slurm.py's helper when missing), against one
fake model server in its own process (200 personas, 50 ms per request, 32 at once; the recipe's processes reach it
through ENVSYNTH_LLM_* settings, as a cluster run does), two chains at once:

1. an array of 2 shards, each running `--stages tool_suites,tasks --shard i/2` (its tasks stage fed by its tool
   suites as they are kept), then the finishing job: its stage folders hold exactly what the plain unsharded command
   (`--stages tool_suites,tasks`, run here without Slurm against the same server) writes: every entry without
   timings, and the stats without the shard list;
2. the same chain with array task 1 failing (exit 3): the finishing job refuses with one line per stage folder
   naming the missing shard (exit 1), computing nothing; shard 0 finished both of its stages.
"""
import importlib.util, json, os, subprocess, sys, time
from pathlib import Path
import pytest

pytestmark = pytest.mark.timeout(300)
REPO = Path(__file__).resolve().parents[1]
ITEMS, SHARDS = 200, 2


def _bench():
    spec = importlib.util.spec_from_file_location('scale_chain', REPO / 'benchmarks' / 'scale_chain.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope='module')
def cluster():
    if os.geteuid() != 0: pytest.skip('a real Slurm needs root (munged as the munge user, fake GPUs made with mknod)')
    from test_slurm import _install_slurm
    _install_slurm()
    c = _bench().Cluster()
    try: yield c
    finally: c.stop()


def test_array_chain_equals_unsharded_and_the_finish_refuses_missing_shards(cluster, tmp_path):
    bench = _bench()
    params = bench.write_inputs(tmp_path / 'inputs', ITEMS, concurrency=32)
    server = bench.Server(latency=0.05, in_flight=32, folder=tmp_path)
    env = bench.client_env(server.url, 32)
    good, bad, plain = tmp_path / 'sharded', tmp_path / 'failed', tmp_path / 'plain'
    t0 = time.monotonic()
    try:
        ids = bench.submit_chain(cluster, good, params, SHARDS, env)
        bad_ids = bench.submit_chain(cluster, bad, params, SHARDS, env, fail_shard=1)
        r = subprocess.run(bench.recipe_command(plain, params, '--stages', 'tool_suites,tasks'),
                           env={**os.environ, **env}, capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, r.stderr[-3000:]
        states = cluster.wait([*ids.values(), *bad_ids.values()], timeout_s=240)
    finally: served = server.stop()
    wall = time.monotonic() - t0
    logs = {p.name: p.read_text() for d in (good, bad) for p in sorted((d / 'logs').glob('*.out'))}
    dump = '\n'.join(f'== {k}\n{v[-1500:]}' for k, v in logs.items())

    # 1. the array path completes and equals the unsharded run
    mine = {k: v for k, v in states.items() if k.split('_')[0] in ids.values()}
    assert set(mine.values()) == {'COMPLETED'} and len(mine) == SHARDS + 1, f'{states}\n{dump}'
    measured = sorted(p.stem for p in (good / 'measure').glob('*.json'))
    assert measured == ['finish', 'synth-0', 'synth-1'], measured
    sharded, unsharded = bench.stage_contents(good), bench.stage_contents(plain)
    assert sharded == unsharded
    suites, tasks = (unsharded[f]['stats'] for f in ('02_tool_suites', '03_tasks'))
    assert suites['inputs'] == ITEMS and suites['kept'] > ITEMS // 2 and tasks['inputs'] == suites['kept']
    assert tasks['kept'] > 0 and not suites['failed'] and not tasks['failed']
    for folder in ('02_tool_suites', '03_tasks'):          # the finishing job merged the shards' journals
        assert [p.name for p in (good / folder).glob('shard-*.jsonl')] == ['shard-00000-of-00001.jsonl']
    assert set(served['statuses']) == {'200'} and served['tags'].get('untagged') is None, served

    # 2. a failed shard: the finishing job refuses and computes nothing
    by_step = {step: {k: v for k, v in states.items() if k.split('_')[0] == job} for step, job in bad_ids.items()}
    assert by_step['synth'] == {f'{bad_ids["synth"]}_0': 'COMPLETED', f'{bad_ids["synth"]}_1': 'FAILED'}, states
    assert by_step['finish'] == {bad_ids['finish']: 'FAILED'}, f'{states}\n{dump}'
    finish_log = logs[f'scale-finish-{bad_ids["finish"]}.out']
    assert f'{bad / "02_tool_suites"}: shard(s) 1 of 2 have not finished' in finish_log, finish_log
    assert f'{bad / "03_tasks"}: shard(s) 1 of 2 have not finished' in finish_log, finish_log
    assert not (bad / 'measure' / 'finish.json').exists()
    for folder in ('02_tool_suites', '03_tasks'):          # shard 0 ran both stages; nothing else was written
        assert sorted(p.name for p in (bad / folder).glob('shard-*.jsonl')) == ['shard-00000-of-00002.jsonl']
    print(f'\nscale chain: {ITEMS} items, {SHARDS} shards, two chains and the unsharded run in {wall:.1f} s; '
          f'{served["requests"]} requests')

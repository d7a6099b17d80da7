"""The AgentScaler recipe end to end through its command line: two runs with many items in flight give the same
outputs, roles, and bad parameters are a clear error (kills, shards and resumes of every recipe: test_recipe_shards.py)."""
import json, os, subprocess, sys
from pathlib import Path
import pytest
from envsynth.pipeline import read_records
from _recipe_runs import finish, start, untimed

pytestmark = pytest.mark.timeout(900)
SETS = ['--set', 'max_domains=3', '--set', 'attempts=2', '--set', 'decontamination=false', '--set', 'concurrency=2']
ITEM_STAGES = ('03_materialize', '04_tasks', '05_interplay', '06_filter')

def _start(run_dir: Path, *extra) -> subprocess.Popen:
    return start([sys.executable, '-m', 'envsynth.agentscaler.recipe', '--run-dir', str(run_dir), *SETS, *extra])

def _outputs(run_dir: Path) -> dict:
    out = {stage: untimed(read_records(run_dir / stage)) for stage in ITEM_STAGES}
    out |= {f'{stage}/stats': json.loads((run_dir / stage / 'stats.json').read_text()) for stage in ITEM_STAGES}
    for root in ('envs', '07_sft'):
        for f in sorted((run_dir / root).rglob('*')):
            if f.is_file() and '__pycache__' not in f.parts and f.suffix in ('.json', '.jsonl', '.py'):
                out[str(f.relative_to(run_dir))] = f.read_bytes()
    card = json.loads((run_dir / 'data_card.json').read_text())
    out['card'] = {k: v for k, v in card.items() if k not in ('ledger', 'wall_s')}
    return out

def test_many_items_in_flight_give_the_same_outputs_twice(tmp_path):
    """16 items in flight on 2 sandbox workers (every domain materialized, walked and played at once): the sandbox
    checks never fail for want of room, so no tool is repaired or dropped on that account and two runs agree."""
    sets = ['--set', 'decontamination=false', '--set', 'concurrency=16', '--set', 'sandbox_workers=2']
    runs = [tmp_path / 'a', tmp_path / 'b']
    for d in runs: finish(start([sys.executable, '-m', 'envsynth.agentscaler.recipe', '--run-dir', str(d), *sets]))
    a, b = (_outputs(d) for d in runs)
    assert sorted(a) == sorted(b)
    for k in a: assert a[k] == b[k], f'{k} differs between two runs'
    problems = json.dumps(a['03_materialize'])
    assert 'could not restore' not in problems, problems[:2000]

def test_bad_parameters_are_a_clear_error(tmp_path):
    r = subprocess.run([sys.executable, '-m', 'envsynth.agentscaler.recipe', '--run-dir', str(tmp_path), '--set', 'attemps=2'],
                       capture_output=True, text=True)
    assert r.returncode == 2 and 'attemps' in r.stderr
    r = subprocess.run([sys.executable, '-m', 'envsynth.agentscaler.recipe', '--run-dir', str(tmp_path), '--shard', '0/2'],
                       capture_output=True, text=True)
    assert r.returncode == 2 and '--stages' in r.stderr
    r = subprocess.run([str(Path(sys.executable).parent / 'envsynth'), 'agentscaler', 'run', '--run-dir', str(tmp_path), '--stages', 'bogus'],
                       capture_output=True, text=True)
    assert r.returncode == 2 and 'bogus' in r.stderr

def test_a_role_left_offline_beside_one_with_an_endpoint_is_refused(tmp_path):
    """The teacher has an endpoint, the simulated user none: the run stops at its start with one line (exit 2) and writes
    no stage; with `allow_offline_roles=true` the same run starts (and fails later: nothing listens at the endpoint)."""
    env = {**os.environ, 'ENVSYNTH_LLM_TEACHER_ENDPOINT': 'http://127.0.0.1:9/v1', 'ENVSYNTH_LLM_TEACHER_MAX_RETRIES': '0'}
    cmd = [sys.executable, '-m', 'envsynth.agentscaler.recipe', '--run-dir', str(tmp_path / 'run'), *SETS]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr[-2000:]
    assert 'user_simulator has no endpoint' in r.stderr and 'allow_offline_roles' in r.stderr
    assert not any((tmp_path / 'run' / f).exists() for f in ('params.json', '01_pool', '02_domains', *ITEM_STAGES))
    r = subprocess.run([*cmd, '--set', 'allow_offline_roles=true'], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and 'no endpoint' not in r.stderr, r.stderr[-2000:]
    assert (tmp_path / 'run' / 'params.json').exists() and (tmp_path / 'run' / '01_pool').is_dir()

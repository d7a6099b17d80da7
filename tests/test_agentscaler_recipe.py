"""The AgentScaler recipe end to end through its command line: a run killed mid-stage (twice) and resumed finishes
with exactly the outputs of an uninterrupted run, and bad parameters are a clear error."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest
from envsynth.pipeline import read_records

pytestmark = pytest.mark.timeout(900)
SETS = ['--set', 'max_domains=3', '--set', 'attempts=2', '--set', 'decontamination=false', '--set', 'concurrency=2']
ITEM_STAGES = ('03_materialize', '04_tasks', '05_interplay', '06_filter')

def _start(run_dir: Path, *extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-m', 'envsynth.agentscaler.recipe', '--run-dir', str(run_dir), *SETS, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

def _finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return out

def _journal_lines(run_dir: Path, stage: str) -> int:
    return sum(len(p.read_text().splitlines()) for p in (run_dir / stage).glob('shard-*.jsonl'))

def _kill_during(run_dir: Path, stage: str) -> bool:
    "Start a run and SIGKILL its process group once `stage` has journaled an item; True if it was killed mid-stage."
    proc = _start(run_dir)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if _journal_lines(run_dir, stage) >= 1:
            mid = not (run_dir / stage / 'stats.json').exists()
            os.killpg(proc.pid, signal.SIGKILL); proc.wait()
            return mid
        time.sleep(0.01)
    pytest.fail(f'the run ended (rc={proc.poll()}) before {stage} journaled anything: {proc.stderr.read()[-2000:] if proc.stderr else ""}')

def _untimed(x):
    "`x` without wall-clock measurements (latencies differ between any two runs; everything else must not)."
    if isinstance(x, dict): return {k: _untimed(v) for k, v in x.items() if not k.endswith(('latency_s', 'wall_s'))}
    if isinstance(x, list): return [_untimed(v) for v in x]
    return x

def _outputs(run_dir: Path) -> dict:
    out = {stage: _untimed(read_records(run_dir / stage)) for stage in ITEM_STAGES}
    out |= {f'{stage}/stats': json.loads((run_dir / stage / 'stats.json').read_text()) for stage in ITEM_STAGES}
    for root in ('envs', '07_sft'):
        for f in sorted((run_dir / root).rglob('*')):
            if f.is_file() and '__pycache__' not in f.parts and f.suffix in ('.json', '.jsonl', '.py'):
                out[str(f.relative_to(run_dir))] = f.read_bytes()
    card = json.loads((run_dir / 'data_card.json').read_text())
    out['card'] = {k: v for k, v in card.items() if k not in ('ledger', 'wall_s')}
    return out

def test_killed_and_resumed_run_matches_an_uninterrupted_run(tmp_path):
    whole = tmp_path / 'whole'
    summary = json.loads(_finish(_start(whole)).strip().splitlines()[-1])
    assert summary['oracle']['tasks'] > 0 and summary['oracle']['passed'] == summary['oracle']['tasks']
    assert summary['kept_trajectories'] > 0

    cut = tmp_path / 'cut'
    killed_in_materialize = _kill_during(cut, '03_materialize')
    killed_in_interplay = _kill_during(cut, '05_interplay')
    assert killed_in_interplay, 'the interplay stage finished before the kill: the test did not cut it mid-stage'
    _finish(_start(cut))
    a, b = _outputs(whole), _outputs(cut)
    assert sorted(a) == sorted(b)
    for k in a: assert a[k] == b[k], f'{k} differs after kill and resume (killed mid-materialize: {killed_in_materialize})'
    # the killed processes' spending is on the card: their ledger journals survive the kills
    whole_ledger, cut_ledger = (json.loads((d / 'data_card.json').read_text())['ledger']['total'] for d in (whole, cut))
    assert whole_ledger['backend_calls'] > 0 and whole_ledger['prompt_tokens'] > 0
    for k in ('requests', 'backend_calls', 'prompt_tokens', 'completion_tokens'):
        assert cut_ledger[k] >= 0.9 * whole_ledger[k], (k, cut_ledger, whole_ledger)

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

"""The EnvFactory recipe end to end through its command line: a run killed mid-stage and resumed finishes with exactly
the outputs of an uninterrupted run, bad parameters are a clear error, and a model that fails every request is counted,
never reported as success."""
import json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest
from envsynth.pipeline import read_records

pytestmark = pytest.mark.timeout(900)
SMOKE = str(Path(__file__).resolve().parents[1] / 'papers_repro' / 'envfactory' / 'smoke.yaml')
ITEM_STAGES = ('02_build', '04_queries', '05_solutions')

def _start(run_dir: Path, *extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-m', 'envsynth.envfactory.recipe', '--run-dir', str(run_dir), '--params', SMOKE, *extra],
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
    pytest.fail(f'the run ended (rc={proc.poll()}) before {stage} journaled anything')

def _untimed(x):
    "`x` without wall-clock measurements (latencies differ between any two runs; everything else must not)."
    if isinstance(x, dict): return {k: _untimed(v) for k, v in x.items() if not k.endswith(('latency_s', 'wall_s'))}
    if isinstance(x, list): return [_untimed(v) for v in x]
    return x

def _outputs(run_dir: Path) -> dict:
    out = {stage: _untimed(read_records(run_dir / stage)) for stage in ITEM_STAGES}
    out |= {f'{stage}/stats': json.loads((run_dir / stage / 'stats.json').read_text()) for stage in ITEM_STAGES}
    for root in ('envs', '01_propose', '03_graph'):
        for f in sorted((run_dir / root).rglob('*')):
            if f.is_file() and '__pycache__' not in f.parts and f.suffix in ('.json', '.jsonl', '.py'):
                out[str(f.relative_to(run_dir))] = f.read_bytes()
    out['sft'] = [_untimed(json.loads(l)) for l in (run_dir / '06_data' / 'sft_trajectories.jsonl').read_text().splitlines()]
    card = json.loads((run_dir / 'data_card.json').read_text())
    out['card'] = {k: v for k, v in card.items() if k not in ('ledger', 'wall_s')}
    return out

def test_killed_and_resumed_run_matches_an_uninterrupted_run(tmp_path):
    whole = tmp_path / 'whole'
    summary = json.loads(_finish(_start(whole)).strip().splitlines()[-1])
    assert summary['reward_check']['ok'] and summary['reward_check']['oracle_min'] == 1.0
    assert summary['kept']['build'] >= 2 and summary['rows']['rl_rows'] > 0
    cut = tmp_path / 'cut'
    assert _kill_during(cut, '04_queries')
    _finish(_start(cut))
    assert _outputs(cut) == _outputs(whole)

def test_bad_parameters_are_a_clear_error(tmp_path):
    for bad in (['--set', 'n_envs=0'], ['--set', 'operators=["shout"]'], ['--set', 'no_such_knob=1'], ['--stages', 'nope']):
        proc = _start(tmp_path / 'bad', *bad)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, (bad, err[-2000:])
        assert len(err.strip().splitlines()) == 1 and 'error' in err, err

def test_a_model_that_always_fails_is_counted_not_passed(tmp_path):
    import asyncio
    from envsynth.llm import LLMClient, OfflineTeacher
    from envsynth.envfactory.envgen import TAGS
    from envsynth.envfactory.recipe import read_params, run_envfactory
    teacher = OfflineTeacher({tag: (lambda req: 'I cannot help with that.') for tag in TAGS.values()})   # every answer is unusable
    out = asyncio.run(run_envfactory(read_params(SMOKE, n_envs=2), tmp_path / 'r', LLMClient(teacher, 'broken')))
    assert out['reward_check']['ok'] is False and out['reward_check']['tasks'] == 0, out['reward_check']   # no success claimed
    assert out['rows'] == {'sft_trajectories': 0, 'rl_rows': 0} and out['stages']['build']['kept'] == 0
    stats = json.loads((tmp_path / 'r' / '01_propose' / 'stats.json').read_text())
    assert stats['kept'] == 0 and stats['dropped'] == {'proposal_failed': 4}

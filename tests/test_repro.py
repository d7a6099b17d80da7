"""`envsynth repro`: one paper end to end through the CLI at smoke scale (SynthAgent: the fastest recipe, about 1-3 minutes
on 2 cores), its report beside the paper's numbers, resume, bad arguments, and the stages as a chain on a real Slurm."""
import json, subprocess, sys
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]
ENVSYNTH = [sys.executable, '-m', 'envsynth.cli']


def _cli(*args, timeout=600):
    return subprocess.run([*ENVSYNTH, 'repro', *args], capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.fixture(scope='module')
def smoke_run(tmp_path_factory):
    run = tmp_path_factory.mktemp('repro') / 'synthagent'
    r = _cli('synthagent', '--scale', 'smoke', '--run-dir', str(run))
    assert r.returncode == 0, r.stderr[-3000:]
    return run, json.loads(r.stdout.strip().splitlines()[-1])


def test_smoke_repro_writes_a_report_beside_the_papers_numbers(smoke_run):
    run, out = smoke_run
    assert set(out['stages']) == {'synth', 'sft', 'rl', 'eval', 'report'}
    rep = json.loads((run / 'report.json').read_text())
    assert rep['paper'] == 'SynthAgent' and 'teacher' in rep['offline_teacher_roles']
    sft = rep['stages']['sft']['splits'][0]
    assert sft['steps'] > 0 and sft['rows']['kept'] > 0
    assert rep['stages']['rl']['status'].startswith('dry run')
    assert rep['stages']['rl']['model'].endswith('tiny_model')     # rl.yaml from_sft: false: the smoke base, not the paper's hub model
    assert (run / '03_rl' / 'job' / 'command.sh').read_text().count('verl.trainer.main_ppo') == 1
    models = {r['model'] for r in rep['ours']}
    assert {'oracle', 'do-nothing', 'sft-smoke'} <= models
    oracle = {r['metric']: r['value'] for r in rep['ours'] if r['model'] == 'oracle'}
    assert oracle['reward'] == 1.0
    assert any(e['table'] == 'Table 3' for e in rep['paper_numbers'])
    md = (run / 'report.md').read_text()
    assert 'Offline teacher' in md and '### Table 3' in md and 'Not reproducible here' in md and '**math (Table 4)**' in md
    assert '| Table 5 | W/O information gap |' in md and '`papers_repro/synthagent/ablations/no_information_gap.yaml`' in md


def test_a_finished_run_resumes_without_recomputing(smoke_run):
    run, _ = smoke_run
    before = (run / '02_sft' / 'done.json').read_text()
    r = _cli('synthagent', '--scale', 'smoke', '--run-dir', str(run), '--stages', 'sft,report', timeout=120)
    assert r.returncode == 0, r.stderr
    assert (run / '02_sft' / 'done.json').read_text() == before


@pytest.mark.parametrize('args, message', [
    (['nope', '--scale', 'smoke'], 'unknown paper'),
    (['astra', '--scale', 'huge'], 'unknown scale'),
    (['astra', '--scale', 'smoke', '--stages', 'synth,train'], 'unknown stage train'),
    (['astra'], 'the following arguments are required: --scale'),
    (['astra', '--scale', 'smoke', '--wait'], '--wait only goes with --slurm'),
])
def test_bad_arguments_are_one_line_errors(args, message):
    r = _cli(*args, timeout=60)
    assert r.returncode == 2 and message in r.stderr and r.stderr.count('\n') == 1, r.stderr


def test_a_run_folder_of_another_paper_is_refused(smoke_run):
    run, _ = smoke_run
    r = _cli('astra', '--scale', 'smoke', '--run-dir', str(run), '--stages', 'report', timeout=60)
    assert r.returncode == 1 and 'holds a synthagent smoke reproduction' in r.stderr, r.stderr


@pytest.mark.slow
def test_slurm_chain_runs_the_stages(slurm, tmp_path):
    """The CPU stand-in of the chain on the test Slurm (tests/test_slurm.py's cluster): the synthesis as arrays of 2 shards
    per per-item stage plus the finishing run (exact: its records are the unsharded recipe's), then SFT and the report."""
    from envsynth.repro import submit_repro
    from envsynth.settings import get_settings
    get_settings.cache_clear()
    out = submit_repro('synthagent', 'smoke', tmp_path / 'run', 'synth,sft,report', wait=True, timeout_s=900)
    logs = '\n'.join(p.read_text()[-1500:] for p in sorted((tmp_path / 'run' / 'logs').glob('*.out')))
    assert list(out['jobs']) == [*(f'synth_{s}' for s in ('tool_suites', 'tasks', 'demos', 'rubrics', 'rewards', 'reasoning')),
                                 'synth', 'sft', 'report']          # an array of 2 shards per per-item stage, then the finish
    assert all(s == 'COMPLETED' for s in out['states'].values()), f"{out['states']}\n{logs}"
    assert (tmp_path / 'run' / 'report.md').exists()
    assert len(list((tmp_path / 'run' / 'logs').glob('envsynth-synth_tasks-*_*.out'))) == 2        # both array tasks ran


from test_slurm import slurm  # noqa: E402,F401  the single-node Slurm fixture (skips, saying why, without root or apt-get)

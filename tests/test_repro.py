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


def test_the_smoke_chain_is_the_paper_plan_job_for_job():
    """The seam: `--scale smoke --slurm` submits the jobs `--scale paper --slurm --dry-run` plans, with the same names and
    dependencies, for every paper."""
    from envsynth.repro import PAPERS, slurm_jobs
    graph = lambda paper, scale: [(j.step, j.after) for j in slurm_jobs(paper, scale, '/tmp/r')]
    for paper in PAPERS: assert graph(paper, 'smoke') == graph(paper, 'paper'), paper


@pytest.mark.slow
@pytest.mark.timeout(1200)          # about 3 minutes on a quiet machine; its jobs share 2 cores here
def test_the_smoke_chain_runs_every_job_on_slurm(slurm, tmp_path):
    """`envsynth repro envfactory --scale smoke --slurm` on the test Slurm (tests/test_slurm.py's cluster): every job of the
    paper plan as a CPU stand-in, each checked on its output. The synthesis arrays (2 shards per per-item stage) and the
    finishing run give the unsharded run's folder (run here at the same time); SFT trains the base the submission built;
    RL is one step of the single-node GRPO trainer from the SFT model; each of base, SFT and RL is served by its own job
    (`envsynth serve-policy` loading that checkpoint), evaluated on held-out curated tasks through the served endpoint,
    then released; the report lists the three models' numbers."""
    from envsynth.repro import slurm_jobs, submit_repro, trained_models
    from envsynth.settings import get_settings
    from test_recipe_shards import RECIPES, folder_differences
    get_settings.cache_clear()
    run, clean = tmp_path / 'run', tmp_path / 'clean'
    unsharded = subprocess.Popen([*ENVSYNTH, 'repro', 'envfactory', '--scale', 'smoke', '--stages', 'synth', '--run-dir',
                                  str(clean)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    out = submit_repro('envfactory', 'smoke', run, wait=True, timeout_s=900)
    _, err = unsharded.communicate(timeout=600)
    assert unsharded.returncode == 0, err[-3000:]
    logs = {p.name: p.read_text() for p in sorted((run / 'logs').glob('*.out'))}
    assert all(s == 'COMPLETED' for s in out['states'].values()), \
        f"{out['states']}\n" + '\n'.join(f'== {k}\n{v[-1500:]}' for k, v in logs.items())
    assert list(out['jobs']) == [j.step for j in slurm_jobs('envfactory', 'paper', run)]
    for stage in ('build', 'queries', 'solutions'):                            # both array tasks of every array ran
        assert len([k for k in logs if k.startswith(f'envsynth-synth_{stage}-')]) == 2, sorted(logs)
    diffs = folder_differences(RECIPES['envfactory'], clean / '01_synth', run / '01_synth', 'Slurm chain')
    assert [d for d in diffs if not d.startswith('done.json at .sft_data')] == []   # paths name each run's own folder
    done = lambda root: json.loads((root / '01_synth' / 'done.json').read_text())['sft_data']
    assert [Path(f).relative_to(run) for f in done(run)] == [Path(f).relative_to(clean) for f in done(clean)]

    models = trained_models('envfactory', run, 'smoke')
    assert list(models) == ['base', 'sft', 'rl']
    sft = json.loads((run / '02_sft' / 'done.json').read_text())
    assert sft['model'] == models['sft'] and sft['splits'][0]['steps'] > 0 and sft['splits'][0]['rows']['kept'] > 0
    grpo = json.loads((run / '03_rl' / 'train' / 'grpo_result.json').read_text())
    assert len(grpo['history']) == 1 and (run / '03_rl' / 'train' / 'final' / 'config.json').exists()
    assert {j.step: j for j in slurm_jobs('envfactory', 'smoke', run)}['rl'].env['RL_MODEL'] == models['sft']
    report = (run / 'report.md').read_text()
    for label, path in models.items():
        state, done = run / 'serve' / f'envfactory-{label}', json.loads((run / '04_eval' / label / 'done.json').read_text())
        assert done['served_path'] == path and done['model'] == f'envfactory-{label}'       # the checkpoint trained
        assert (state / 'stop_server').exists() and not (state / 'vllm_address').exists()  # released
        rows = [json.loads(l) for l in (run / '04_eval' / label / 'rows.jsonl').read_text().splitlines()]
        assert rows and {r['model'] for r in rows} == {f'envfactory-{label}'} and all(r['n'] > 0 for r in rows)
        assert f'| envfactory-{label} |' in report
    assert "## The paper's numbers beside ours" in report and '### Table' in report
    print(f"\nslurm chain of {len(out['jobs'])} jobs: {', '.join(out['jobs'])}")


@pytest.mark.slow
def test_a_failed_job_cancels_what_needs_it_and_nothing_waits(slurm, tmp_path):
    """The smoke chain's training and evaluation with neither synthesis data nor a base model: sft fails, so Slurm
    cancels rl and the SFT and RL servers and evaluations (`afterok`); serve_base finds no model, exits and writes
    `vllm_failed`, so eval_base fails at once instead of waiting for an address; the release jobs (`afterany`) still
    run. A minute or two: only the failing jobs start."""
    from envsynth.repro import slurm_jobs
    from envsynth.settings import get_settings
    from envsynth.slurm import submit_chain, wait_chain
    get_settings.cache_clear()
    run = tmp_path / 'run'
    (run / 'logs').mkdir(parents=True)
    ids = submit_chain(slurm_jobs('envfactory', 'smoke', run, 'sft,rl,eval'))
    states = wait_chain(ids, timeout_s=600, poll_s=1)
    logs = '\n'.join(p.read_text()[-1500:] for p in sorted((run / 'logs').glob('*.out')))
    assert states == {'preflight': 'COMPLETED', 'sft': 'FAILED', 'rl': 'CANCELLED',
                      'serve_base': 'FAILED', 'eval_base': 'FAILED', 'release_base': 'COMPLETED',
                      'serve_sft': 'CANCELLED', 'eval_sft': 'CANCELLED', 'release_sft': 'COMPLETED',
                      'serve_rl': 'CANCELLED', 'eval_rl': 'CANCELLED', 'release_rl': 'COMPLETED'}, f'{states}\n{logs}'
    assert (run / 'serve' / 'envfactory-base' / 'vllm_failed').exists()
    assert 'the server of envfactory-base failed' in (run / 'logs' / f"envsynth-eval_base-{ids['eval_base']}.out").read_text()
    assert not (run / '02_sft' / 'done.json').exists() and not (run / '03_rl' / 'train').exists()


from test_slurm import slurm  # noqa: E402,F401  the single-node Slurm fixture (skips, saying why, without root or apt-get)

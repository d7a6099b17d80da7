"""`envsynth repro --scale paper`: the Slurm plan of each paper (dry run, no sbatch), its jobs and resources, `--params` and
`--set` reaching every job, and the preflight refusing each missing piece with one line, before any work or submission."""
import json, os, time
from pathlib import Path
import pytest
from envsynth import repro
from envsynth.fake_server import FakeOpenAIServer
from envsynth.repro import (PreflightError, job_resources, main, paper_chain, preflight, slurm_jobs, submit_repro,
                            use_served_roles)
from envsynth.settings import LLMRoleSettings, LLMSettings, Settings, SlurmSettings, get_settings

GLM = LLMRoleSettings(model='zai-org/GLM-4.6-FP8')
SITE = Settings(llm=LLMSettings(teacher=GLM, judge=GLM, tool_emulator=GLM), slurm=SlurmSettings(cpu_partition='cpu'))


@pytest.mark.parametrize('paper', ['astra', 'synthagent', 'envfactory', 'agentscaler'])
def test_dry_run_prints_the_whole_plan_without_sbatch(paper, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))                 # no sbatch: nothing may be submitted
    run = tmp_path / 'run'
    assert main([paper, '--scale', 'paper', '--slurm', '--dry-run', '--run-dir', str(run)]) == 0
    out = capsys.readouterr().out
    for part in ('## Who answers each LLM role', '## Inputs', '## Models trained and evaluated', '## Preflight here',
                 '## Jobs (GPUs are per node)', '## Commands', '## Submission script', '| preflight |', '| report |'):
        assert part in out, part
    assert 'MISSING: no endpoint and no model' in out          # this checkout names no endpoint: the plan says so
    assert not run.exists()                                    # a dry run writes nothing


@pytest.mark.parametrize('paper, gpu_jobs, evals', [
    ('astra', {'sft', 'rl', 'serve_base', 'serve_sft', 'serve_rl'}, {'base', 'sft', 'rl'}),
    ('synthagent', {'rl', 'serve_base', 'serve_rl'}, {'base', 'rl'}),                # no SFT in the paper: no SFT job
    ('envfactory', {'sft', 'rl', 'serve_base', 'serve_sft', 'serve_rl'}, {'base', 'sft', 'rl'}),
    ('agentscaler', {'sft', 'serve_base', 'serve_sft'}, {'base', 'sft'}),             # no RL in the paper: no RL job
])
def test_only_serving_and_training_jobs_hold_gpus(paper, gpu_jobs, evals):
    jobs = paper_chain(paper, '/tmp/run', settings=SITE)
    res = {j.step: job_resources(j) for j in jobs}
    role_servers = {s for s in res if s.startswith('serve_') and s.removeprefix('serve_') not in ('base', 'sft', 'rl')}
    assert {s for s, r in res.items() if r['gpus'] != '0'} == gpu_jobs | role_servers
    assert all(r['partition'] == 'cpu' for s, r in res.items() if r['gpus'] == '0')
    assert {s.removeprefix('eval_') for s in res if s.startswith('eval_')} == evals
    steps = [j.step for j in jobs]
    for j in jobs:                                             # every dependency names an earlier job
        assert all(steps.index(dep) < steps.index(j.step) for _, dep in j.after), j.step
    arrays = [s for s, r in res.items() if r['array']]
    assert arrays and all(res[s]['array'] == '0-7' for s in arrays)
    assert all('--shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT"' in j.wrap for j in jobs if j.step in arrays)


def test_rl_job_takes_the_nodes_and_gpus_of_rl_yaml(monkeypatch):
    real = repro.read_yaml
    monkeypatch.setattr(repro, 'read_yaml', lambda p: {**real(p), 'nnodes': 4, 'n_gpus': 4} if Path(p).name == 'rl.yaml' else real(p))
    rl = next(j for j in paper_chain('envfactory', '/tmp/run', settings=SITE) if j.step == 'rl')
    assert (job_resources(rl)['nodes'], job_resources(rl)['gpus']) == ('4', '4') and rl.script == 'slurm/rl.sbatch'
    assert rl.env['RL_MODEL'].endswith('02_sft/model/final') and rl.env['RL_PRESET'] == 'envfactory'


def test_roles_naming_one_model_share_one_server():
    jobs = paper_chain('astra', '/tmp/run', settings=SITE)
    serve = [j for j in jobs if j.step.startswith('serve_') and j.env.get('SERVE_MODEL') == 'zai-org/GLM-4.6-FP8']
    assert len(serve) == 1 and serve[0].env['SERVE_NAME'] == 'zai-org/GLM-4.6-FP8' and 'SERVE_DP' not in serve[0].env
    release = next(j for j in jobs if j.step == 'release_roles')
    assert {d for _, d in release.after} >= {'synth', 'rl_data', 'preflight'}
    assert dict(next(j for j in jobs if j.step == 'preflight').after) == {'after': serve[0].step}


def test_params_and_set_reach_every_job(tmp_path):
    params = tmp_path / 'mine.yaml'
    params.write_text((Path(repro.papers_repro_dir()) / 'agentscaler' / 'paper.yaml').read_text())
    sets = {'corpus_files': ['/data/tools.jsonl'], 'max_len': 6}
    for scale in ('paper', 'smoke'):
        jobs = [j for j in slurm_jobs('agentscaler', scale, tmp_path / 'run', params=params, overrides=sets, settings=SITE) if j.wrap
                and 'envsynth.repro' in j.wrap]
        assert jobs and all(f'--params {params}' in j.wrap and "--set 'corpus_files=[\"/data/tools.jsonl\"]'" in j.wrap
                            and '--set max_len=6' in j.wrap for j in jobs), scale


def test_bad_set_or_params_is_a_one_line_error(capsys, tmp_path):
    assert main(['agentscaler', '--scale', 'paper', '--slurm', '--dry-run', '--set', 'no_such_field=1']) == 2
    assert main(['agentscaler', '--scale', 'paper', '--params', str(tmp_path / 'none.yaml')]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and 'no_such_field' in err[0] and 'no such file' in err[1]


def _lines(problems, start):
    return [p for p in problems if p.startswith(start)]


def test_preflight_refuses_offline_roles_and_bad_endpoints():
    with FakeOpenAIServer(lambda body: {}) as srv:               # serves the model 'fake'
        s = Settings(llm=LLMSettings(teacher=LLMRoleSettings(endpoint=srv.base_url, model='fake'),
                                     user_simulator=LLMRoleSettings(endpoint=srv.base_url, model='other')))
        got = preflight('agentscaler', 'paper', 'synth', overrides={'teacher_model': None}, settings=s)
    assert not _lines(got, 'role teacher')                       # answers with its model: nothing to say
    bad = _lines(got, 'role user_simulator (synth stage): endpoint')
    assert bad and "serves ['fake'], not 'other'" in bad[0]
    down = Settings(llm=LLMSettings(teacher=LLMRoleSettings(endpoint='http://127.0.0.1:9/v1', model='m')))
    assert 'does not answer GET /models' in _lines(preflight('envfactory', 'paper', 'synth', settings=down), 'role teacher')[0]
    off = preflight('agentscaler', 'paper', 'synth', settings=Settings())
    assert 'would be answered by the offline teacher' in _lines(off, 'role teacher')[0]
    assert not _lines(preflight('envfactory', 'paper', 'synth', served=['teacher'], settings=SITE.model_copy(
        update={'llm': LLMSettings(teacher=GLM)})), 'role teacher')   # a model alone: the chain serves it


def test_preflight_refuses_inputs_venvs_and_mcp_servers(monkeypatch, tmp_path):
    s = Settings()
    assert _lines(preflight('agentscaler', 'paper', 'synth', settings=s), 'input corpus_files: data/agentscaler/tools.jsonl does not exist')
    missing = preflight('agentscaler', 'paper', 'synth', overrides={'corpus_files': [str(tmp_path / 'x.jsonl')]}, settings=s)
    assert _lines(missing, 'input corpus_files') and 'does not exist' in _lines(missing, 'input corpus_files')[0]
    sample = str(repro.papers_repro_dir() / 'astra' / 'mcp_servers_sample.jsonl')
    astra = preflight('astra', 'paper', 'synth', overrides={'mcp_servers_bin': str(tmp_path), 'mcp_servers_files': [sample]},
                      settings=s)
    assert 'bundled for smoke runs' in _lines(astra, 'input mcp_servers_files')[0]
    assert _lines(astra, 'real MCP servers time, git, sqlite, calculator are not installed')
    monkeypatch.setattr(repro, 'verl_python', lambda: None)
    assert _lines(preflight('envfactory', 'paper', 'rl', settings=s), 'venv .venv-verl is missing')
    import envsynth.eval.harness as harness
    monkeypatch.setattr(harness, 'harness_ready', lambda name, root=None: False)
    ev = preflight('envfactory', 'paper', 'eval', settings=s)
    assert _lines(ev, 'venv .venv-bfcl') and _lines(ev, 'venv .venv-tau2') and _lines(ev, 'tau2 needs a user simulator')
    assert all('\n' not in p for p in ev + astra + missing)
    assert preflight('agentscaler', 'smoke', settings=s) == []      # smoke runs offline by design


def test_preflight_command_and_paper_run_refuse_before_any_work(capsys, tmp_path):
    get_settings.cache_clear()
    expected = preflight('agentscaler', 'paper', 'synth', check_endpoints=False)
    assert main(['agentscaler', '--scale', 'paper', '--preflight', '--stages', 'synth']) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == len(expected) > 0 and all(l.startswith('envsynth repro: missing: ') for l in err)
    run = tmp_path / 'run'
    assert main(['astra', '--scale', 'paper', '--run-dir', str(run), '--stages', 'synth']) == 1
    assert 'offline teacher' in capsys.readouterr().err and not run.exists()      # nothing ran, nothing written
    with pytest.raises(PreflightError):
        submit_repro('agentscaler', 'paper', tmp_path / 'chain', 'synth')
    assert not (tmp_path / 'chain' / 'chain.json').exists()


def test_jobs_find_the_servers_the_chain_started(tmp_path, monkeypatch):
    for role in ('TEACHER', 'JUDGE'):
        for k in ('ENDPOINT', 'MODEL'): monkeypatch.delenv(f'ENVSYNTH_LLM_{role}_{k}', raising=False)
    (tmp_path / 'serve' / 'glm').mkdir(parents=True)
    (tmp_path / 'serve' / 'roles.json').write_text(json.dumps({r: {'server': 'glm', 'model': 'G'} for r in ('teacher', 'judge')}))
    (tmp_path / 'serve' / 'glm' / 'vllm_address').write_text('http://node7:20001/v1\n')
    try:
        assert use_served_roles(tmp_path, wait_s=1) == {'teacher': 'http://node7:20001/v1', 'judge': 'http://node7:20001/v1'}
        role = get_settings().llm.role('judge')
        assert (role.endpoint, role.model) == ('http://node7:20001/v1', 'G')
        (tmp_path / 'serve' / 'glm' / 'vllm_address').unlink()
        (tmp_path / 'serve' / 'glm' / 'vllm_failed').write_text('vllm server exited before answering')
        with pytest.raises(RuntimeError, match='the server of glm failed: vllm server exited'):
            use_served_roles(tmp_path, wait_s=1, poll_s=0.1)
        (tmp_path / 'serve' / 'glm' / 'vllm_failed').unlink(); (tmp_path / 'serve' / 'glm' / 'stop_server').touch()
        with pytest.raises(RuntimeError, match='already released'):       # never a wait on a server that is gone
            use_served_roles(tmp_path, wait_s=60, poll_s=0.1)
        t0 = time.monotonic()                                             # stages that call no role do not wait
        assert repro.reproduce('agentscaler', 'paper', 'report', tmp_path)['report']
        assert time.monotonic() - t0 < 60
    finally:
        for role in ('TEACHER', 'JUDGE'):
            for k in ('ENDPOINT', 'MODEL'): os.environ.pop(f'ENVSYNTH_LLM_{role}_{k}', None)
        get_settings.cache_clear()


def test_agentscaler_teacher_model_parameter_is_what_the_chain_serves():
    jobs = paper_chain('agentscaler', '/tmp/run', 'synth', settings=Settings())
    serve = [j for j in jobs if j.step.startswith('serve_')]
    assert [j.env['SERVE_MODEL'] for j in serve] == ['Qwen/Qwen3-235B-A22B-Thinking-2507']
    other = Settings(llm=LLMSettings(teacher=LLMRoleSettings(model='Qwen/Qwen3-8B')))
    got = preflight('agentscaler', 'paper', 'synth', check_endpoints=False, settings=other)
    assert _lines(got, "role teacher: the parameters ask for teacher_model 'Qwen/Qwen3-235B-A22B-Thinking-2507'")


def test_evaluation_reads_the_address_of_the_served_checkpoint(tmp_path):
    state = tmp_path / 'serve' / 'astra-sft'
    state.mkdir(parents=True)
    (state / 'vllm_address').write_text('http://gpu3:20417/v1\n'); (state / 'vllm_model').write_text('astra-sft\n')
    url, model, key_env, out = repro.eval_target(repro.repro_run_folder(tmp_path), 'astra', 'sft')
    assert (url, model, key_env, out) == ('http://gpu3:20417/v1', 'astra-sft', None, tmp_path / '04_eval' / 'sft')


def test_rl_job_reads_a_scheduled_alpha_in_order(capsys, tmp_path, monkeypatch):
    """`--set alpha_end=...` (EnvFactory's α schedule) writes the RL rows in training order: the plan's rl job passes verl
    the overrides that read them unshuffled, as one epoch; a fixed α passes none."""
    monkeypatch.setenv('PATH', str(tmp_path))
    def rl_line(*args):
        assert main(['envfactory', '--scale', 'paper', '--slurm', '--dry-run', '--run-dir', str(tmp_path / 'run'), *args]) == 0
        return next(l for l in capsys.readouterr().out.splitlines() if 'slurm/rl.sbatch' in l and 'RL_PRESET=' in l)
    assert 'RL_ARGS' not in rl_line()
    assert "RL_ARGS='data.shuffle=False trainer.total_epochs=1'" in rl_line('--set', 'alpha_end=0.9')
    params = tmp_path / 'scheduled.yaml'
    params.write_text((Path(repro.papers_repro_dir()) / 'envfactory' / 'paper.yaml').read_text() + '\nalpha_end: 0.2\n')
    assert "RL_ARGS='data.shuffle=False trainer.total_epochs=1'" in rl_line('--params', str(params))

"""ASTRA's trajectory pipeline (§2.1) end to end through its command line: the smoke run's tools (kills, shards and
resumes of every recipe: test_recipe_shards.py); roles; bad parameters are a clear error; a model that fails every request
is counted and never reported as success."""
import json, os, subprocess, sys
from pathlib import Path
import pytest
from _recipe_runs import finish, start

pytestmark = pytest.mark.timeout(900)
REPO = Path(__file__).resolve().parents[1]
SMOKE = ['--params', str(REPO / 'papers_repro/astra/smoke.yaml'), '--set', 'concurrency=2']

def _finish(proc) -> dict:
    "The run's summary: the JSON object its last stdout line prints."
    return json.loads(finish(proc, 600).strip().splitlines()[-1])

def _start(run_dir: Path, *extra, env=None) -> subprocess.Popen:
    return start([sys.executable, '-m', 'envsynth.astra.recipe', '--run-dir', str(run_dir), *SMOKE, *extra], env)

def test_a_clean_run_calls_real_and_emulated_tools(tmp_path):
    "The smoke run keeps SFT rows and its trajectories call emulated tools and, when installed, the real MCP servers (kills, shards and resumes: test_recipe_shards.py)."
    whole = tmp_path / 'whole'
    summary = _finish(_start(whole))
    assert summary['status'] == 'ok' and summary['sft_rows'] > 0
    card = json.loads((whole / 'data_card.json').read_text())
    routes = card['distributions']['tool_calls_by_route']
    assert routes.get('emulated', 0) > 0
    if (REPO / '.venv-mcp-servers' / 'bin' / 'mcp-server-sqlite').exists(): assert routes.get('mcp', 0) > 0
    else: assert any(k.startswith('not_installed') for k in card['distributions']['emulation_reasons'])
    assert card['ledger']['total']['backend_calls'] > 0 and (whole / 'ledger.json').exists()


def test_a_role_without_an_endpoint_beside_one_with_an_endpoint_stops_the_run(tmp_path):
    "A judge left on the offline teacher while the teacher has a server is refused at start (exit 2, one line, no stage run);"
    " `allow_offline_roles=true` lets the mix through (the unreachable teacher then fails the run: exit 1)."
    env = os.environ | {'ENVSYNTH_LLM_TEACHER_ENDPOINT': 'http://127.0.0.1:9/v1', 'ENVSYNTH_LLM_MAX_RETRIES': '0', 'ENVSYNTH_LLM_TIMEOUT_S': '5'}
    proc = _start(tmp_path / 'mixed', env=env)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1, err[-2000:]
    assert 'judge, tool_emulator' in err and 'allow_offline_roles' in err and not (tmp_path / 'mixed' / '01_tool_docs').exists()
    proc = _start(tmp_path / 'mixed', '--set', 'allow_offline_roles=true', '--set', 'clarity_check=false', env=env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and 'allow_offline_roles' not in err, err[-2000:]
    assert (tmp_path / 'mixed' / '01_tool_docs').exists()
    proc = _start(tmp_path / 'paper', '--params', str(REPO / 'papers_repro/astra/paper.yaml'))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and 'allow_offline_roles: false' in err, err[-2000:]

def test_bad_parameters_are_a_clear_error(tmp_path):
    for bad, word in ((['--set', 'n_vote=2'], 'n_vote'), (['--set', 'deployed_servers=["fetch"]'], 'fetch'),
                      (['--set', 'theta_tn=9'], 'theta_tn'), (['--stages', 'bogus'], 'bogus'), (['--shard', '0/2'], '--stages')):
        r = subprocess.run([sys.executable, '-m', 'envsynth.astra.recipe', '--run-dir', str(tmp_path), *bad], capture_output=True, text=True)
        assert r.returncode == 2 and word in r.stderr and len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)
    r = subprocess.run([str(Path(sys.executable).parent / 'envsynth'), 'astra', 'run', '--run-dir', str(tmp_path), '--set', 'failure_rate=2'],
                       capture_output=True, text=True)
    assert r.returncode == 2 and 'failure_rate' in r.stderr

def test_a_model_that_fails_every_request_is_a_failed_run(tmp_path):
    "No answer from the model is a failure (retried on resume), never a drop: the run exits 1 with one line and saves nothing for the step."
    env = os.environ | {'ENVSYNTH_LLM_ENDPOINT': 'http://127.0.0.1:9/v1', 'ENVSYNTH_LLM_MAX_RETRIES': '0', 'ENVSYNTH_LLM_TIMEOUT_S': '5'}
    proc = _start(tmp_path / 'dead', env=env)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith('envsynth astra run: error:') and 'TransportError' in last and 'tool_docs' in last, err[-2000:]
    assert not out.strip() and not (tmp_path / 'dead' / 'data_card.json').exists()
    assert not (tmp_path / 'dead' / '01_tool_docs' / 'tool_docs.jsonl').exists()     # nothing cached from a failed computation

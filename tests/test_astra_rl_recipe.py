"""ASTRA's environment pipeline (§2.2, §3.2.2) end to end through its command line: the smoke run's checks (kills, shards and
resumes of every recipe: test_recipe_shards.py); bad parameters are a clear error; a model that fails every
request is counted and never reported as success."""
import json, os, subprocess, sys
from pathlib import Path
import pytest
from _recipe_runs import finish, start

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[1]
SMOKE = ['--params', str(REPO / 'papers_repro/astra/rl_smoke.yaml'), '--set', 'concurrency=2']

def _finish(proc) -> dict:
    "The run's summary: the JSON object its last stdout line prints."
    return json.loads(finish(proc, 500).strip().splitlines()[-1])

def _start(run_dir: Path, *extra, env=None) -> subprocess.Popen:
    return start([sys.executable, '-m', 'envsynth.astra.rl_recipe', '--run-dir', str(run_dir), *SMOKE, *extra], env)

def test_a_clean_run_scores_the_oracle_1_and_meets_hostile_code(tmp_path):
    "The smoke run's checks (kills, shards and resumes: test_recipe_shards.py)."
    whole = tmp_path / 'whole'
    summary = _finish(_start(whole))
    assert summary['status'] == 'ok' and summary['rl_rows'] >= 3
    card = json.loads((whole / 'data_card.json').read_text())
    checks = card['distributions']['checks']
    assert checks['oracle']['reward'] == 1.0 and checks['do_nothing']['reward'] == 0.0 and checks['spammer']['precision'] < 0.6
    assert all(card['distributions']['distractors_per_band'].get(b) for b in ('high', 'medium', 'low'))
    assert card['distributions']['synthesis_failures'].get('sandbox_violation', 0) >= 1

def test_bad_parameters_are_a_clear_error(tmp_path):
    for bad, word in ((['--set', 'k_per_bands=2'], 'k_per_bands'), (['--set', 'distractor_mode="all"'], 'distractor_mode'),
                      (['--set', 'qs_percentile=90'], 'exactly one'), (['--set', 'min_hops=9'], 'min_hops'),
                      (['--set', 'knowledge=["/nonexistent/docs"]'], '/nonexistent/docs'), (['--stages', 'bogus'], 'bogus')):
        r = subprocess.run([sys.executable, '-m', 'envsynth.astra.rl_recipe', '--run-dir', str(tmp_path / 'bad'), *bad], capture_output=True, text=True)
        assert r.returncode == 2 and word in r.stderr and len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)
    r = subprocess.run([str(Path(sys.executable).parent / 'envsynth'), 'astra', 'rl', '--run-dir', str(tmp_path / 'bad'), '--set', 'reward="mean"'],
                       capture_output=True, text=True)
    assert r.returncode == 2 and 'reward' in r.stderr

def test_a_model_that_fails_every_request_is_counted_not_passed(tmp_path):
    "A model that answers, but never with valid output: every request is a counted drop and the run says there is no data."
    from envsynth.fake_server import FakeOpenAIServer, completion
    with FakeOpenAIServer(lambda body: completion({'content': 'I cannot help with that.'})) as server:
        env = os.environ | {'ENVSYNTH_LLM_ENDPOINT': server.base_url, 'ENVSYNTH_LLM_MAX_RETRIES': '0', 'ENVSYNTH_LLM_TIMEOUT_S': '5'}
        out, err = _start(tmp_path / 'junk', env=env).communicate(timeout=600)
    last = err.strip().splitlines()[-1]
    assert 'no_rl_data' in last and 'NoDataError' in last and not out.strip(), err[-2000:]     # a run with no data never exits 0
    card = json.loads((tmp_path / 'junk' / 'data_card.json').read_text())
    assert card['status'] == 'no_rl_data' and card['stages']['rl_data']['kept'] == 0
    dropped = card['stages']['qa']['dropped']
    assert card['stages']['qa']['kept'] == 0 and dropped.get('unconditional_failed', 0) > 0 and dropped.get('conditional_failed', 0) > 0
    assert not (tmp_path / 'junk' / '09_rl_data' / 'train.parquet').exists()

def test_a_model_that_never_answers_fails_the_run(tmp_path):
    "No answer at all (a dead endpoint): the items are failed (to be retried), the command exits 1 in one line, no card."
    env = os.environ | {'ENVSYNTH_LLM_ENDPOINT': 'http://127.0.0.1:9/v1', 'ENVSYNTH_LLM_MAX_RETRIES': '0', 'ENVSYNTH_LLM_TIMEOUT_S': '5'}
    r = subprocess.run([sys.executable, '-m', 'envsynth.astra.rl_recipe', '--run-dir', str(tmp_path / 'dead'), *SMOKE], capture_output=True, text=True, env=env)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1 and "step 'qa'" in last and 'TransportError' in last
    stats = json.loads((tmp_path / 'dead' / '01_qa' / 'stats.json').read_text())
    assert stats['kept'] == 0 and sum(stats['failed'].values()) == stats['inputs'] > 0
    assert not (tmp_path / 'dead' / 'data_card.json').exists()

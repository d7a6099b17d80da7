"""BFCL v4 multi-turn through the official bfcl-eval harness (its own venv, created on first use: ~1-2 min).
The gold oracle must score 100 % and a policy that never calls a tool 0 %, on 3 ids per category;
the all-800-ids gold run (~1.5-3 min) is the slow tier: it runs in `make test` unless ENVSYNTH_FULL_BFCL=0."""
import json, os, time
from pathlib import Path
import pytest
from envsynth.eval.harness import HarnessError, ensure_harness, require_harness
from envsynth.eval.bfcl import BFCLOracle, bfcl_data_dir, main, run_bfcl
from envsynth.eval.results import check_rows
from envsynth.fake_server import FakeOpenAIServer

pytestmark = pytest.mark.timeout(1200)

@pytest.fixture(scope='module')
def bfcl_venv():
    t0 = time.monotonic(); venv = ensure_harness('bfcl')
    print(f'bfcl harness venv ready in {time.monotonic() - t0:.0f} s')
    return venv

def _accuracies(rows):
    return {r['category']: r['value'] for r in rows if r['metric'] == 'accuracy'}

@pytest.mark.parametrize('mode, expected', [('gold', 1.0), ('empty', 0.0)])
def test_oracle_and_empty_on_three_ids_per_category(bfcl_venv, tmp_path, mode, expected):
    oracle = BFCLOracle(bfcl_data_dir(), mode)
    with FakeOpenAIServer(oracle) as srv:
        rows = run_bfcl(f'bfcl-oracle-{mode}', srv.base_url, tmp_path, limit=3, on_category=oracle.use)
    check_rows(rows)      # the shared tidy-table format of envsynth.eval.results
    acc = _accuracies(rows)
    assert set(acc) == {'multi_turn_base', 'multi_turn_miss_func', 'multi_turn_miss_param', 'multi_turn_long_context', 'multi_turn_overall'}
    assert all(v == expected for v in acc.values()), acc
    assert all(r['n'] == 3 for r in rows if r['metric'] == 'accuracy' and r['category'] != 'multi_turn_overall')
    if mode == 'empty':   # every failure is the official "no call in a turn that needs one" class
        errs = {r['category']: (r['metric'], r['value']) for r in rows if r['metric'].startswith('error:')}
        assert all(v == ('error:multi_turn:empty_turn_model_response', 3) for v in errs.values()) and len(errs) == 4
    table = json.loads((tmp_path / 'bfcl_scores.json').read_text())
    assert table == json.loads(json.dumps(rows)) and (tmp_path / 'bfcl_scores.csv').exists()
    assert all(r['harness_version'] == 'bfcl-eval==2026.3.23' and r['data_revision'].startswith('BFCL_v4@') for r in rows)
    assert (tmp_path / 'result').is_dir() and (tmp_path / 'score').is_dir()      # BFCL_PROJECT_ROOT is the run dir
    assert not (bfcl_venv / 'lib' / 'python3.11' / 'site-packages' / 'result' / f'bfcl-oracle-{mode}-FC').exists()

def test_cli_with_ids_and_errors(bfcl_venv, tmp_path):
    rows = main(['--oracle', 'gold', '--ids', 'multi_turn_miss_func_0,multi_turn_long_context_5', '--run-dir', str(tmp_path)])
    # two of the four categories: no multi_turn_overall (a subset's mean is not BFCL's overall)
    assert _accuracies(rows) == {'multi_turn_miss_func': 1.0, 'multi_turn_long_context': 1.0}
    with pytest.raises(SystemExit, match='unreachable'):
        main(['--base-url', 'http://127.0.0.1:9/v1', '--limit', '1', '--run-dir', str(tmp_path / 'x')])
    with pytest.raises(SystemExit, match='API key variable ENVSYNTH_TEST_UNSET_KEY is not set'):
        main(['--base-url', 'http://127.0.0.1:9/v1', '--api-key-env', 'ENVSYNTH_TEST_UNSET_KEY', '--run-dir', str(tmp_path / 'k')])
    with pytest.raises(SystemExit, match='unknown BFCL multi-turn category'):
        main(['--oracle', 'gold', '--categories', 'memory', '--run-dir', str(tmp_path / 'y')])
    with pytest.raises(SystemExit, match='not an id'):
        main(['--oracle', 'gold', '--ids', 'multi_turn_base_999', '--run-dir', str(tmp_path / 'z')])

def test_missing_venv_names_the_make_target(tmp_path):
    with pytest.raises(HarnessError, match='make eval-venvs'):
        require_harness('bfcl', root=tmp_path)

@pytest.mark.slow
@pytest.mark.skipif(os.environ.get('ENVSYNTH_FULL_BFCL') == '0', reason='ENVSYNTH_FULL_BFCL=0: the all-800-ids run (~1.5-3 min) is switched off')
def test_gold_oracle_on_all_800_ids(bfcl_venv, tmp_path):
    oracle = BFCLOracle(bfcl_data_dir(), 'gold')
    with FakeOpenAIServer(oracle) as srv:
        rows = run_bfcl('bfcl-oracle-gold', srv.base_url, tmp_path, num_threads=4, on_category=oracle.use)
    acc = _accuracies(rows)
    assert acc == {c: 1.0 for c in acc} and len(acc) == 5
    assert all(r['n'] == 200 for r in rows if r['metric'] == 'accuracy' and r['category'] != 'multi_turn_overall')

def test_console_script_exits_zero_after_a_successful_run(bfcl_venv, tmp_path):
    "`envsynth eval bfcl` as a user runs it: exit status 0 and the tidy table in the run dir (main itself returns the rows)."
    import subprocess, sys
    from pathlib import Path
    res = subprocess.run([str(Path(sys.executable).parent / 'envsynth'), 'eval', 'bfcl', '--oracle', 'gold', '--ids', 'multi_turn_base_0',
                          '--run-dir', str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert (tmp_path / 'bfcl_scores.csv').exists()
    bad = subprocess.run([str(Path(sys.executable).parent / 'envsynth'), 'eval', 'bfcl', '--run-dir', str(tmp_path / 'x')],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and 'exactly one of --base-url and --oracle' in bad.stderr

def test_an_endpoint_that_fails_every_request_is_a_failed_run(bfcl_venv, tmp_path, capsys):
    "Inference errors are loud: counted in the printed table, and the command fails (it used to print accuracy 0.0000 and exit 0)."
    from envsynth.fake_server import Reply
    with FakeOpenAIServer(lambda body: Reply({'error': {'message': 'the model server is down'}}, status=500)) as srv:
        with pytest.raises(SystemExit, match='inference errors'):
            main(['--base-url', srv.base_url, '--model', 'down', '--ids', 'multi_turn_base_0', '--run-dir', str(tmp_path)])
    printed = capsys.readouterr().out
    assert 'multi_turn_base' in printed and 'inference errors 1' in printed, printed

def test_top_p_and_top_k_reach_every_request(bfcl_venv, tmp_path):
    "The papers' protocols fix top_p / top_k (AgentScaler: 0.95 / 20): bfcl's own handler would send temperature only."
    oracle = BFCLOracle(bfcl_data_dir(), 'gold')
    with FakeOpenAIServer(oracle) as srv:
        rows = run_bfcl('bfcl-oracle-gold', srv.base_url, tmp_path, 'base', limit=1, on_category=oracle.use,
                        temperature=0.6, top_p=0.95, top_k=20)
        bodies = list(srv.requests)
    assert _accuracies(rows)['multi_turn_base'] == 1.0 and bodies
    assert all((b['temperature'], b['top_p'], b['top_k']) == (0.6, 0.95, 20) for b in bodies), bodies[0]
    run = json.loads((tmp_path / 'bfcl_run.json').read_text())
    assert (run['top_p'], run['top_k']) == (0.95, 20)
    with pytest.raises(SystemExit, match='top_k must be'):
        main(['--oracle', 'gold', '--limit', '1', '--categories', 'base', '--top-k', '0', '--run-dir', str(tmp_path / 'bad')])

"""Evaluation defects of the paper-scale path, each fixed and checked: `make eval-venvs` (the harness CLI with no names),
BFCL per-category numbers beside the paper's (`multi_turn_base` is the tables' `base`), no `overall` from a subset,
API keys passed by variable name (never `EMPTY` for a hosted user simulator, never a key on a command line), the tau2
user simulator taken from settings.ini when eval.yaml names none, and base / SFT / RL all evaluated."""
import json
from pathlib import Path
import pytest
from envsynth.eval import harness
from envsynth.eval.bfcl import CATEGORIES, PREFIX, model_dir_name, score_rows
from envsynth.repro import comparison_lines, eval_commands, eval_problems, eval_user, our_value, paper_numbers
from envsynth.settings import LLMRoleSettings, LLMSettings, Settings


def test_eval_venvs_builds_both_harnesses_without_names(monkeypatch, capsys):
    built = []
    monkeypatch.setattr(harness, 'ensure_harness', lambda name, *a, **k: built.append(name))
    monkeypatch.setattr(harness, 'harness_version', lambda name, *a, **k: f'{name}==x')
    harness.main([])                                          # what `make eval-venvs` runs
    assert built == ['bfcl', 'tau2']
    harness.main(['tau2'])
    assert built[-1] == 'tau2'
    with pytest.raises(SystemExit):
        harness.main(['nope'])
    assert 'invalid choice' in capsys.readouterr().err


def _score_files(root: Path, model: str, cats) -> Path:
    for c in cats:
        p = root / model_dir_name(model) / 'multi_turn' / f'{PREFIX}_multi_turn_{c}_score.json'
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({'accuracy': 0.5, 'correct_count': 1, 'total_count': 2}) + '\n')
    return root


def test_bfcl_rows_sit_beside_the_papers_categories_and_overall_is_never_a_subset(tmp_path):
    two = score_rows(_score_files(tmp_path / 'a', 'm', ['base', 'miss_func']), 'm', ['multi_turn_base', 'multi_turn_miss_func'], 'v', {})
    assert {r['category'] for r in two if r['metric'] == 'accuracy'} == {'multi_turn_base', 'multi_turn_miss_func'}
    four = score_rows(_score_files(tmp_path / 'b', 'm', CATEGORIES), 'm', [f'multi_turn_{c}' for c in CATEGORIES], 'v', {})
    assert any(r['category'] == 'multi_turn_overall' for r in four)
    astra = [e for e in paper_numbers('astra') if e['benchmark'] == 'bfcl' and e['metric'] == 'accuracy']
    cell = next(e for e in astra if e['category'] == 'base')
    assert our_value(two, 'm', cell) == 0.5                     # multi_turn_base is the table's base
    overall = next(e for e in astra if e['category'] == 'multi_turn_overall')
    assert our_value(two, 'm', overall) is None and our_value(four, 'm', overall) == 0.5
    md = '\n'.join(comparison_lines(two, [cell, overall]))
    assert '| **ours: m** | 50.00 |  |' in md


def test_keys_travel_as_variable_names(monkeypatch):
    cfg = {'bfcl': {'temperature': 0.6}, 'tau2': {'domains': ['retail'], 'user_model': 'gpt-5.1',
                                                  'user_base_url': 'https://api.example/v1', 'user_api_key_env': 'HOSTED_KEY'}}
    user = eval_user(cfg['tau2'], Settings())
    cmds = eval_commands(cfg, Path('/tmp/e'), 'http://h:1/v1', 'astra-sft', user, None)
    tau2 = cmds['tau2']
    assert tau2[tau2.index('--user-base-url') + 1] == 'https://api.example/v1'
    assert tau2[tau2.index('--user-api-key-env') + 1] == 'HOSTED_KEY' and '--user-api-key' not in tau2
    monkeypatch.setenv('HOSTED_KEY', 'sk-secret')
    assert harness.api_key_from_env('HOSTED_KEY') == 'sk-secret' and 'sk-secret' not in ' '.join(tau2)
    monkeypatch.delenv('HOSTED_KEY')
    from envsynth.eval.tau2 import main as tau2_main
    with pytest.raises(SystemExit, match='the API key variable HOSTED_KEY is not set'):
        tau2_main(['--base-url', 'http://127.0.0.1:9/v1', '--run-dir', '/tmp/never', '--user-api-key-env', 'HOSTED_KEY'])


def test_tau2_user_comes_from_settings_when_eval_yaml_names_none():
    site = Settings(llm=LLMSettings(user_simulator=LLMRoleSettings(endpoint='http://u:1/v1', model='Qwen3-235B',
                                                                   api_key_env='U_KEY')))
    user = eval_user({'user_model': None}, site)
    assert (user.model, user.endpoint, user.api_key_env) == ('Qwen3-235B', 'http://u:1/v1', 'U_KEY')
    tau2 = eval_commands({'tau2': {'domains': ['retail']}}, Path('/tmp/e'), 'http://h:1/v1', 'policy', user)['tau2']
    assert tau2[tau2.index('--user-model') + 1] == 'Qwen3-235B'            # not the policy playing its own user
    assert eval_user({'user_model': None}, Settings()) is None
    assert any(p.startswith('tau2 needs a user simulator') for p in eval_problems('envfactory', False, Settings()))

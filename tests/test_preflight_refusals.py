"""The preflight refusals tests/test_repro_chain.py does not reach: bad parameters, an empty input, ASTRA's RL-environment
inputs, and a tau2 user simulator whose endpoint does not answer. Each is one line (fast: nothing runs, no server)."""
import pytest
import envsynth.eval.harness as harness
import envsynth.repro as repro
from envsynth.repro import preflight
from envsynth.settings import LLMRoleSettings, LLMSettings, Settings


def _one_line_each(problems):
    assert problems and all('\n' not in p for p in problems), problems
    return problems


def test_bad_parameters_are_one_line():
    got = _one_line_each(preflight('envfactory', 'paper', 'synth', overrides={'nope': 1}, settings=Settings()))
    assert got == ['parameters of envfactory: bad parameters: nope: Extra inputs are not permitted']


def test_an_empty_input_is_refused():
    got = _one_line_each(preflight('agentscaler', 'paper', 'synth', overrides={'corpus_files': []}, settings=Settings(),
                                   check_endpoints=False))
    assert [p for p in got if p.startswith('input corpus_files is empty: give the paper\'s data')]


def test_astra_rl_environment_inputs_are_checked(monkeypatch):
    monkeypatch.setattr(repro, 'verl_python', lambda: '/bin/true')
    got = _one_line_each(preflight('astra', 'paper', 'rl', settings=Settings(), check_endpoints=False))
    assert [p for p in got if p.startswith('input knowledge:') and 'does not exist' in p]
    assert [p for p in got if p.startswith('input questions_file:') and 'does not exist' in p]
    assert not [p for p in got if '.venv-verl' in p]


def test_a_tau2_user_simulator_that_does_not_answer_is_refused(monkeypatch):
    monkeypatch.setattr(harness, 'harness_ready', lambda name, root=None: True)
    s = Settings(llm=LLMSettings(user_simulator=LLMRoleSettings(endpoint='http://127.0.0.1:9/v1', model='u')))
    got = _one_line_each(preflight('envfactory', 'paper', 'eval', settings=s))
    assert len(got) == 1 and got[0].startswith('role user_simulator (tau2 user simulator): endpoint http://127.0.0.1:9/v1 '
                                               'does not answer GET /models')

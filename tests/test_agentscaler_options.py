"""The AgentScaler recipe's paper options at the recipe level: the parameter files hold the paper's choices, the
teacher role names its model, the stage-1 rewrite changes descriptions only, and a small run with every paper option
on finishes with gold tasks that the oracle passes and a stage-2 split chosen for the target benchmark."""
import asyncio, json
from pathlib import Path
import pytest
from envsynth.agentscaler.recipe import (RECIPE, AgentScalerParams, AgentScalerRun, read_params, run_agentscaler, stage_pool,
                                         teacher_models)
from envsynth.pipeline import read_records
from envsynth.recipe_frame import recipe_clients
from envsynth.settings import get_settings

REPRO = Path(__file__).resolve().parents[1] / 'papers_repro' / 'agentscaler'

def test_paper_yaml_holds_the_papers_choices():
    p = read_params(REPRO / 'paper.yaml')
    assert (p.rewrite_descriptions, p.edge_top_k, p.initial_states, p.walk_stop) == (True, None, 'generated', 'dead_end')
    assert (p.exact_match_filter, p.stage2_target, p.max_length) == ('read_only', 'tau2:retail,airline,telecom', 32768)
    assert p.teacher_model == 'Qwen/Qwen3-235B-A22B-Thinking-2507' and p.allow_offline_roles is False
    smoke = read_params(REPRO / 'smoke.yaml')
    assert smoke.allow_offline_roles is None
    assert (smoke.edge_top_k, smoke.walk_stop, smoke.initial_states, smoke.stage2_target) == (8, 'target_length', 'perturbed', 'largest')
    with pytest.raises(ValueError, match='walk_stop'): AgentScalerParams(walk_stop='forever')
    with pytest.raises(ValueError, match='exact_match_filter'): AgentScalerParams(exact_match_filter='writes')

@pytest.fixture
def teacher_settings(monkeypatch):
    "Settings with a teacher endpoint on a closed local port (no request is made), restored afterwards."
    def use(**env):
        for k, v in env.items(): monkeypatch.setenv(k, v)
        get_settings.cache_clear()
    yield use
    monkeypatch.undo(); get_settings.cache_clear()

def test_the_teacher_role_asks_for_the_papers_model(tmp_path, teacher_settings):
    "The frame builds the teacher's client asking for `teacher_model`; settings naming another model stop the run before it writes."
    p = AgentScalerParams(teacher_model='Qwen/Qwen3-235B-A22B-Thinking-2507')
    teacher_settings(ENVSYNTH_LLM_TEACHER_ENDPOINT='http://127.0.0.1:9/v1', ENVSYNTH_LLM_USER_SIMULATOR_ENDPOINT='http://127.0.0.1:9/v1')
    clients = recipe_clients(RECIPE, RECIPE.run_folder(tmp_path / 'a'), models=teacher_models(p))
    assert clients['teacher'].model == 'Qwen/Qwen3-235B-A22B-Thinking-2507' and clients['user_simulator'] is not clients['teacher']
    for c in clients.values(): asyncio.run(c.aclose())
    assert teacher_models(AgentScalerParams()) is None
    teacher_settings(ENVSYNTH_LLM_TEACHER_MODEL='some-other-model')
    with pytest.raises(ValueError, match='set one of them'): teacher_models(p)
    with pytest.raises(ValueError, match='set one of them'): asyncio.run(run_agentscaler(p, tmp_path / 'b'))
    assert not (tmp_path / 'b').exists()

def _stage_run(p: AgentScalerParams, run_dir: Path) -> AgentScalerRun:
    "A run of the recipe's stages with the frame's clients (offline here), without `open_run`."
    run = RECIPE.run_folder(run_dir)
    return AgentScalerRun(RECIPE, p, run, recipe_clients(RECIPE, run), [], None)

def test_stage_one_rewrites_descriptions_into_specs(tmp_path):
    p = AgentScalerParams(rewrite_descriptions=True)
    plain = asyncio.run(stage_pool(_stage_run(AgentScalerParams(), tmp_path / 'plain')))
    pool = asyncio.run(stage_pool(_stage_run(p, tmp_path)))
    assert [t.key for t in pool] == [t.key for t in plain]
    assert [t.tool.function.parameters for t in pool] == [t.tool.function.parameters for t in plain]
    for old, new in zip(plain, pool):
        assert new.tool.function.description.startswith(old.tool.function.description.strip()) and 'Output:' in new.tool.function.description
    assert json.loads((tmp_path / '01_pool' / 'rewrites.json').read_text()) == {'rewritten': len(pool)}

@pytest.mark.timeout(900)
def test_a_run_with_the_papers_options(tmp_path):
    p = AgentScalerParams(rewrite_descriptions=True, edge_top_k=None, initial_states='generated', walk_stop='dead_end',
                          exact_match_filter='all', stage2_target='tau2:retail,airline', max_domains=3, n_states=2,
                          walks_per_state=2, decontamination=False, concurrency=2)
    card = asyncio.run(run_agentscaler(p, tmp_path / 'run'))
    assert card['oracle']['tasks'] > 0 and card['oracle']['passed'] == card['oracle']['tasks']
    tasks = read_records(tmp_path / 'run' / '04_tasks')
    generated = [t for t in tasks if t['metadata']['state_index'] > 0]      # a state the teacher wrote: every table replaced
    assert generated and all(t['initial_state'] and all(rows for rows in t['initial_state'].values()) for t in generated)
    choice = card['sft']['stage2_choice']
    assert choice['rule'] == 'tau2:retail,airline' and [m['target'] for m in choice['matches']] == ['tau2:retail', 'tau2:airline']
    assert card['sft']['vertical_domains'] == choice['vertical'] and card['sft']['general_domains']
    assert card['filter']['funnel']['kept'] > 0
    assert card['repairs']['repaired'] > 0        # the stand-in's cut-off first drafts go through the repair loop
    assert all(not b['dropped_tools'] for b in read_records(tmp_path / 'run' / '03_materialize'))

def test_paper_scale_without_a_tool_corpus_stops_with_one_line(tmp_path, monkeypatch, capsys):
    "paper.yaml reads the user's corpus (data/agentscaler/tools.jsonl): missing, or no source of tools at all, is one line, exit 2."
    from envsynth.agentscaler.recipe import main
    monkeypatch.chdir(tmp_path)
    args = ['--params', str(REPRO / 'paper.yaml'), '--set', 'allow_offline_roles=true']
    for extra, word in (([], 'corpus_files: no file data/agentscaler/tools.jsonl'), (['--set', 'corpus_files=[]'], 'the API pool would be empty')):
        rc = main(['--run-dir', str(tmp_path / f'r{len(extra)}'), *args, *extra])
        err = capsys.readouterr().err
        assert rc == 2 and len(err.strip().splitlines()) == 1 and word in err, err[-1500:]
    assert read_params(REPRO / 'paper.yaml').corpus_files == ['data/agentscaler/tools.jsonl']

"""The verl tier for EnvFactory: verl's agent loop runs a row the recipe exported, in the row's own environment folder
(the generated tools in the sandbox, as the recipe ran them), and compute_score of the recorded episode equals the
recipe's reward function on the same episode. Needs verl 0.9.1 (.venv-verl); skipped elsewhere."""
import asyncio, importlib.util, json, subprocess, sys
from pathlib import Path
import pytest
from _verl_loop import loop_on_row

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.skipif(importlib.util.find_spec('verl') is None,
                                 reason='verl is not importable here: run in .venv-verl (by hand: `tools/make_verl_venv.sh && '
                                        '.venv-verl/bin/python -m pytest tests/test_rl_verl_envfactory.py`)')]
SMOKE = Path(__file__).resolve().parents[1] / 'papers_repro' / 'envfactory' / 'smoke.yaml'

@pytest.fixture(scope='module')
def smoke_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp('envfactory') / 'run'
    r = subprocess.run([sys.executable, '-m', 'envsynth.envfactory.recipe', '--run-dir', str(run), '--params', str(SMOKE)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return run

@pytest.fixture(scope='module')
def tiny_model(tmp_path_factory, smoke_run):
    from envsynth.formats import render_hermes
    from envsynth.schema import Trajectory
    from envsynth.train.sft import build_tiny_qwen3_on
    trajs = [Trajectory.model_validate_json(l) for l in (smoke_run / '06_data' / 'sft_trajectories.jsonl').read_text().splitlines()]
    return build_tiny_qwen3_on([render_hermes(t.messages, t.tools) for t in trajs], tmp_path_factory.mktemp('tiny'), vocab_size=600, layers=1)

def run_row(tiny_model, tmp_path, row, texts, env_root, sandbox):
    "The row through the loop the way verl's AgentLoopWorker builds it (YAML registry + hydra.utils.instantiate)."
    out, tok, server = loop_on_row(tiny_model, tmp_path, row, texts, env_root=env_root, sandbox=sandbox, preset='envfactory',
                                   then='Done.')
    return out

def gold_texts(task):
    from envsynth.formats import render_assistant_turn
    from envsynth.schema import assistant
    return [render_assistant_turn(assistant(tool_calls=[a.to_tool_call(i)])) for i, a in enumerate(task.gold_actions)]

@pytest.mark.parametrize('agent', ['gold', 'silent'])
def test_agent_loop_on_a_recipe_row_scores_as_the_recipe(agent, smoke_run, tiny_model, tmp_path):
    import pyarrow.parquet as pq
    from envsynth.data import row_reward_spec
    from envsynth.envfactory.reward import EnvFactoryReward, envfactory_reward_of
    from envsynth.sandbox import SandboxPool
    from envsynth.schema import Trajectory
    from envsynth.train.rl import EPISODE_KEY, compute_score, row_task
    row = pq.read_table(smoke_run / '06_data' / 'rl_train.parquet').to_pylist()[0]
    assert row['agent_name'] == 'envsynth_envfactory' and row['extra_info']['env_folder'].startswith('envs/')
    task = row_task(row)
    texts = (gold_texts(task) if agent == 'gold' else []) + ['Done.']
    with SandboxPool(size=1) as pool:
        out = run_row(tiny_model, tmp_path, row, texts, smoke_run, pool)
        assert pool.stats['requests'] > 0 or agent == 'silent'       # the generated tools ran in the sandbox
    extra = row['extra_info'] | out.extra_fields
    got = asyncio.run(compute_score(row['data_source'], '', row['reward_model']['ground_truth'], extra))
    episode = Trajectory.model_validate_json(out.extra_fields[EPISODE_KEY])
    mine = envfactory_reward_of(EnvFactoryReward.model_validate(row_reward_spec(row)), task, episode)
    assert got['score'] == mine.score and all(got[k] == v for k, v in mine.parts.items())
    assert got['score'] == (1.0 if agent == 'gold' else 0.0), got

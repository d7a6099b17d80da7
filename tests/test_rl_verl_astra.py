"""The verl tier on ASTRA's own RL rows: the envsynth agent loop runs a row of the ASTRA RL recipe in
its environment folder (generated tools in the sandbox), and verl's reward entry point gives the
recipe's reward function's value on the recorded episode. Runs in .venv-verl (see
tests/test_rl_verl_tier.py)."""
import asyncio, importlib.util
from pathlib import Path
import pytest
from _verl_loop import build_tiny_model, loop_on_row

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.skipif(importlib.util.find_spec('verl') is None,
                                 reason='verl is not importable here: tests/test_rl_verl_tier.py runs this module in .venv-verl')]
REPO = Path(__file__).resolve().parents[1]

@pytest.fixture(scope='module')
def astra_rows(tmp_path_factory):
    import pyarrow.parquet as pq
    from envsynth.astra.rl_recipe import read_params, run_astra_rl
    run_dir = tmp_path_factory.mktemp('astra-rl')
    card = asyncio.run(run_astra_rl(read_params(REPO / 'papers_repro/astra/rl_smoke.yaml'), run_dir))
    assert card['status'] == 'ok', card['status']
    return run_dir, pq.read_table(run_dir / '09_rl_data' / 'train.parquet').to_pylist()

@pytest.fixture(scope='module')
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp('tiny'))

def test_agent_loop_on_an_astra_recipe_row(astra_rows, tiny_model, tmp_path):
    from envsynth.astra.f1_reward import astra_f1
    from envsynth.formats import render_assistant_turn
    from envsynth.sandbox import SandboxPool
    from envsynth.schema import Trajectory, assistant
    from envsynth.train.rl import EPISODE_KEY, compute_score, parse_reward_spec, row_task
    run_dir, rows = astra_rows
    row = rows[0]
    task = row_task(row)
    calls = [render_assistant_turn(assistant(tool_calls=[a.to_tool_call(i)])) for i, a in enumerate(task.gold_actions)]
    spare = calls[-1:]                                      # one call too many: precision below 1
    texts = calls + spare + [f'<answer>{task.final_answer}</answer>']
    with SandboxPool(size=1) as pool:
        out, tok, server = loop_on_row(tiny_model, tmp_path, row, texts, env_root=run_dir, sandbox=pool)
        assert pool.stats['requests'] > 0                   # the generated tools ran in the sandbox
    episode = Trajectory.model_validate_json(out.extra_fields[EPISODE_KEY])
    assert episode.info['tool_errors'] == 0 and len(list(episode.tool_calls())) == len(calls) + 1
    truth, extra = row['reward_model']['ground_truth'], row['extra_info'] | out.extra_fields
    got = asyncio.run(compute_score(row['data_source'], '', truth, extra))
    want = astra_f1(parse_reward_spec(row['extra_info']['reward_spec']), task, episode)
    assert got['score'] == want.score < 1.0 and got['recall'] == 1.0
    assert {k: got[k] for k in want.parts} == want.parts

"""RL rows that name an ASTRA environment folder (`extra_info.env_folder`) run against that
environment, its generated tools in the sandbox, and `compute_score` scores the episodes. Rows that
point out of the run (`..`, an absolute path elsewhere, a symbolic link) are refused, and a hostile
`tools.py` inside the run only ever runs in the sandbox."""
import asyncio, shutil, sys
from pathlib import Path
import pytest
from envsynth.rollout import DoNothingPolicy, OraclePolicy
from envsynth.train.rl import (ENV_FOLDER_KEY, EPISODE_KEY, RLError, agent_recipe, compute_score,
                               episode_parts, loop_needs_clients, row_task, run_row_episode)

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[1]

@pytest.fixture(scope='module')
def astra_run(tmp_path_factory):
    "An ASTRA RL smoke run (offline models, sandboxed synthesis): its folder and its RL rows."
    import pyarrow.parquet as pq
    from envsynth.astra.rl_recipe import read_params
    from envsynth.astra.rl_recipe import run_astra_rl
    run_dir = tmp_path_factory.mktemp('astra-rl')
    smoke = str(REPO / 'papers_repro/astra/rl_smoke.yaml')
    card = asyncio.run(run_astra_rl(read_params(smoke, concurrency=2), run_dir))
    assert card['status'] == 'ok', card['status']
    rows = pq.read_table(run_dir / '09_rl_data' / 'train.parquet').to_pylist()
    assert len(rows) >= 3 and all(r['extra_info'].get(ENV_FOLDER_KEY) for r in rows)
    return run_dir, rows

@pytest.fixture(scope='module')
def sandbox():
    from envsynth.sandbox import SandboxPool
    with SandboxPool(size=2) as pool: yield pool

def forged(row: dict, folder) -> dict:
    return row | {'extra_info': row['extra_info'] | {ENV_FOLDER_KEY: str(folder)}}

def parts_of(row: dict, **kwargs):
    return episode_parts(row, row['agent_name'], **kwargs)

async def score(row: dict, episode) -> dict:
    "The reward entry point on `episode`, as verl calls it once the agent loop stored the episode."
    extra = row['extra_info'] | {EPISODE_KEY: episode.model_dump_json()}
    truth = row['reward_model']['ground_truth']
    return await compute_score(row['data_source'], '(decoded response)', truth, extra)

def episode(row: dict, policy, run_dir: Path, sandbox):
    return asyncio.run(run_row_episode(row, policy, row['agent_name'], env_root=run_dir,
                                       sandbox=sandbox))

def test_rows_run_in_their_environment_and_score(astra_run, sandbox):
    "Every row: the oracle's episode in the row's sandboxed environment scores 1.0, no call 0.0."
    run_dir, rows = astra_run
    assert not loop_needs_clients(agent_recipe(rows[0]['agent_name']), rows[0])   # no emulator
    for row in rows:
        task = row_task(row)
        oracle = episode(row, OraclePolicy(task), run_dir, sandbox)
        assert oracle.info['tool_errors'] == 0
        assert oracle.final_state_hash == task.gold_state_hash
        assert asyncio.run(score(row, oracle))['score'] == pytest.approx(1.0), task.id
        nothing = episode(row, DoNothingPolicy(), run_dir, sandbox)
        assert asyncio.run(score(row, nothing))['score'] == 0.0
    parts = parts_of(rows[0], env_root=run_dir, sandbox=sandbox)
    try: assert type(parts.executor.episode.env.backend).__name__ == 'SandboxBackend'
    finally: parts.executor.close()

def test_rows_pointing_out_of_the_run_are_refused(astra_run, sandbox, tmp_path):
    run_dir, rows = astra_run
    row, own = rows[0], rows[0]['extra_info'][ENV_FOLDER_KEY]
    elsewhere = tmp_path / 'elsewhere'
    shutil.copytree(run_dir / own, elsewhere)
    (run_dir / 'linked').symlink_to(elsewhere, target_is_directory=True)
    link_in_path = run_dir / '08_mix' / 'envs-link'
    link_in_path.symlink_to(run_dir / '08_mix' / 'envs', target_is_directory=True)
    up = f'{own}/../../../../{elsewhere.relative_to(elsewhere.anchor)}'
    attacks = [(up, 'is not allowed'), (elsewhere, 'outside env_root'),
               ('linked', 'symbolic link'), (f'08_mix/envs-link/{Path(own).name}', 'symbolic link'),
               ('08_mix/envs/nope', 'no such folder'), ('08_mix', 'not an environment folder')]
    for folder, words in attacks:
        with pytest.raises(RLError, match=words):
            parts_of(forged(row, folder), env_root=run_dir, sandbox=sandbox)
    with pytest.raises(RLError, match='pass env_root'): parts_of(row, sandbox=sandbox)
    with pytest.raises(RLError, match='run only in a sandbox'): parts_of(row, env_root=run_dir)
    bad_file = run_dir / '08_mix' / 'envs' / 'bad-file'
    shutil.copytree(run_dir / own, bad_file)
    (bad_file / 'tools.py').unlink(); (bad_file / 'tools.py').symlink_to(elsewhere / 'tools.py')
    with pytest.raises(RLError, match='symbolic links'):
        parts_of(forged(row, '08_mix/envs/bad-file'), env_root=run_dir, sandbox=sandbox)
    other = next(r for r in rows if r['extra_info'][ENV_FOLDER_KEY] != own)
    with pytest.raises(RLError, match='holds environment'):       # another task's environment
        parts_of(forged(row, other['extra_info'][ENV_FOLDER_KEY]), env_root=run_dir,
                 sandbox=sandbox)

def test_hostile_tools_run_only_in_the_sandbox(astra_run, sandbox, tmp_path):
    "A tools.py in the run that writes to the host at import: never imported here, no host file."
    run_dir, rows = astra_run
    row = rows[0]
    hostile = run_dir / '08_mix' / 'envs' / 'hostile'
    shutil.copytree(run_dir / row['extra_info'][ENV_FOLDER_KEY], hostile)
    marker = tmp_path / 'pwned'
    code = (hostile / 'tools.py').read_text()
    (hostile / 'tools.py').write_text(f'open({str(marker)!r}, "w").write("pwned")\n' + code)
    before = set(sys.modules)
    try: parts_of(forged(row, 'envs/hostile'), env_root=run_dir / '08_mix',
                  sandbox=sandbox).executor.close()
    except RLError as e: assert 'cannot be loaded' in str(e) and 'sandbox' in str(e)
    assert not marker.exists()
    assert not any(m.startswith('envsynth_env_hostile') for m in set(sys.modules) - before)

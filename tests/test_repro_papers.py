"""`envsynth repro <paper> --scale smoke` for the three papers test_repro.py does not run (ASTRA, EnvFactory,
AgentScaler: about 45-65 s each on 2 cores), so every implemented paper's one command runs in CI."""
import json, subprocess, sys
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]
RL_STATUS = {'astra': 'dry run', 'envfactory': 'dry run', 'agentscaler': 'AgentScaler trains with SFT only'}
NAMES = {'astra': 'ASTRA', 'envfactory': 'EnvFactory', 'agentscaler': 'AgentScaler'}


@pytest.mark.parametrize('paper', sorted(RL_STATUS))
def test_smoke_repro_of_each_paper(paper, tmp_path):
    run = tmp_path / paper
    r = subprocess.run([sys.executable, '-m', 'envsynth.cli', 'repro', paper, '--scale', 'smoke', '--run-dir', str(run)],
                       capture_output=True, text=True, timeout=900, cwd=REPO)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out['stages']['synth'] == 'ok' and out['stages']['sft'] == out['stages']['eval'] == 'done'
    assert out['stages']['rl'].startswith(RL_STATUS[paper])
    if paper != 'agentscaler':                      # the job validates on the held-out rows, not the training rows
        argv = (run / '03_rl' / 'job' / 'command.sh').read_text().split()
        files = {a.split('=', 1)[0]: a.split('=', 1)[1] for a in argv if a.startswith(('data.train_files=', 'data.val_files='))}
        assert files['data.val_files'] != files['data.train_files'] and Path(files['data.val_files']).exists()
    rep = json.loads((run / 'report.json').read_text())
    assert rep['paper'] == NAMES[paper] and 'teacher' in rep['offline_teacher_roles']
    assert rep['stages']['sft']['splits'][0]['steps'] > 0
    by_model = {(x['model'], x['metric']): x['value'] for x in rep['ours']}
    assert by_model[('oracle', 'reward')] == 1.0 and by_model[('do-nothing', 'reward')] < 1.0
    assert ('sft-smoke', 'reward') in by_model
    assert any(e['table'] == 'Table 1' for e in rep['paper_numbers'])
    md = (run / 'report.md').read_text()
    assert 'Offline teacher' in md and '### Table 1' in md and 'Not reproducible here' in md


def test_rl_files_validate_on_held_out_rows_and_keep_scheduled_rows_in_order(tmp_path):
    "The RL job reads the recipe's val rows (never its train rows); rows with a reward schedule turn shuffling off."
    from envsynth.data import rl_row, write_rl_parquet
    from envsynth.envfactory.reward import EnvFactoryReward, scheduled_spec
    from envsynth.repro import RLFiles
    from envsynth.schema import Action, Task, Tool
    tool = Tool.parse({'name': 'book', 'description': 'Book.', 'parameters': {'type': 'object', 'properties': {}}})
    task = Task(instruction='Book it.', gold_actions=[Action(name='book', arguments={})], gold_state_hash='h')
    plain, timed = EnvFactoryReward(), scheduled_spec(EnvFactoryReward(), 1.0, 0, 64, 10)
    for name, spec in (('plain', plain), ('timed', timed)):
        write_rl_parquet([rl_row(task, [tool], data_source='envfactory', reward=spec)], tmp_path / f'{name}.parquet')
    assert RLFiles((tmp_path / 'plain.parquet',), tmp_path / 'v.parquet', tmp_path).overrides() == []
    timed_files = RLFiles((tmp_path / 'timed.parquet', tmp_path / 'plain.parquet'), tmp_path / 'v.parquet', tmp_path)
    assert timed_files.overrides() == ['data.shuffle=False', 'trainer.total_epochs=1']
    assert timed_files.hydra_train() == f"[{tmp_path / 'timed.parquet'},{tmp_path / 'plain.parquet'}]"

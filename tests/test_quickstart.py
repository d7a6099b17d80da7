"""The README's first command runs nbs/00_quickstart.ipynb with papermill in a real kernel: the whole loop, from
tool documents to a tiny model evaluated on held-out tasks. This test does the same (same parameters, a temporary
output folder) and checks what it wrote."""
import json, subprocess, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

def test_quickstart_runs_the_whole_loop_headlessly_with_papermill(tmp_path):
    out = tmp_path / 'quickstart'; out.mkdir()
    res = subprocess.run([str(Path(sys.executable).parent / 'papermill'), 'nbs/00_quickstart.ipynb',
                          str(out / 'quickstart.ipynb'), '-p', 'out_dir', str(out), '--cwd', 'nbs',
                          '-k', 'python3', '--no-progress-bar'], cwd=REPO, capture_output=True, text=True, timeout=580)
    assert res.returncode == 0, res.stderr[-3000:]
    executed = json.loads((out / 'quickstart.ipynb').read_text())
    assert executed['metadata']['papermill']['parameters'] == {'out_dir': str(out)}
    printed = ''.join(''.join(o.get('text', '')) for c in executed['cells'] for o in c.get('outputs', []))
    assert f'quickstart outputs: {out}' in printed
    results = json.loads((out / 'results.json').read_text())
    assert results['offline_teacher'] and results['tasks'] == results['train_tasks'] + results['heldout_tasks']
    assert results['heldout_tasks'] >= 2 and 0 < results['kept'] <= results['trajectories']
    assert results['filter']['kept'] == results['kept'] < results['filter']['total']      # the filter dropped some
    assert results['sft']['last_loss'] < results['sft']['first_loss']
    heldout = results['heldout']
    assert heldout['oracle']['reward'] == 1.0 and heldout['do nothing']['reward'] == 0.0
    assert {'tiny, before SFT', 'tiny, after SFT'} <= set(heldout)
    before, after = results['calls']['tiny, before SFT'], results['calls']['tiny, after SFT']
    assert before['turns'] == after['turns'] >= 4                       # every gold call turn of the held-out tasks
    assert before['call attempt'] == 0.0 and after['call attempt'] >= 0.5   # seeds 0, 1, 2: 0.82, 0.86, 1.0
    assert all(after[m] >= before[m] for m in ('parseable call', 'right tool', 'exact call'))
    # the tiny model learns valid calls of the right tool on held-out tasks (before: 0 on every seed)
    # parseable after SFT on seeds 0, 1, 2, 4: 0.27, 0.29, 0.70, 0.30; right tool 0.18, 0.14, 0.20, 0.0 -- too few
    # turns (10-14) for a floor that holds on every machine's float rounding, so it is reported, not asserted
    assert before['parseable call'] == 0.0 and after['parseable call'] >= 0.1
    assert before['right tool'] == 0.0
    # which tool, by likelihood: measured for both models on the same turns; not asserted to improve (10 to 14
    # turns per seed: within noise)
    reference = results['tool_choice_reference']
    assert reference['chance'] == round(1 / reference['tools'], 2) and reference['tools'] >= 2
    for m in (before, after):
        assert 0 <= m['right tool (ranked)'] <= m['top-2'] <= 1 and 1 <= m['mean rank'] <= reference['tools']
        assert (m['right tool (ranked)'] == 1) == (m['mean rank'] == 1)
    env_dir = out / 'envs' / results['environment']
    assert {'tools.py', 'seed_state.json', 'db_schema.json', 'tests.json'} <= {p.name for p in env_dir.iterdir()}
    rows = [json.loads(l) for l in (out / 'sft' / 'sft.jsonl').read_text().splitlines()]
    assert len(rows) == results['sft_rows'] == results['kept'] and all(any(x != -100 for x in r['labels']) for r in rows)
    assert (out / 'sft_run' / 'final').is_dir() and (out / 'heldout.png').stat().st_size > 1000

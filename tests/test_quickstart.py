"""The README's first command runs nbs/00_quickstart.ipynb with papermill in a real kernel.
This test does the same (same parameters, a temporary output folder) and checks what it wrote."""
import json, subprocess, sys
from pathlib import Path
from envsynth.pipeline import read_records

REPO = Path(__file__).resolve().parents[1]

def test_quickstart_runs_headlessly_with_papermill(tmp_path):
    out = tmp_path / 'quickstart'; out.mkdir()
    res = subprocess.run([str(Path(sys.executable).parent / 'papermill'), 'nbs/00_quickstart.ipynb',
                          str(out / 'quickstart.ipynb'), '-p', 'out_dir', str(out), '--cwd', 'nbs',
                          '-k', 'python3', '--no-progress-bar'], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    executed = json.loads((out / 'quickstart.ipynb').read_text())
    assert executed['metadata']['papermill']['parameters'] == {'out_dir': str(out)}
    stats = json.loads((out / 'checked' / 'stats.json').read_text())
    assert (stats['inputs'], stats['kept'], stats['failed']) == (6, 2, {}), stats
    assert stats['dropped'] == {'arguments violate the tool schema': 1, 'invalid trajectory': 2, 'malformed assistant output': 1}
    sft = read_records(out / 'sft')
    assert [ex['task_id'] for ex in sft] == ['ok-search-book', 'ok-parallel-cancel']
    assert all(ex['text'].startswith('<|im_start|>system\n') and '<tool_call>' in ex['text'] for ex in sft)

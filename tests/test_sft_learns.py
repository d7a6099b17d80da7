"""nbs/train/02_sft_learns.ipynb, run with papermill at its `test` size (about two minutes on 2 CPU cores): a tiny random
Qwen3 trained on the oracle trajectories of six curated environments, evaluated on the two held-out environments.

What is asserted is what was robust when measured (size 'test', seed 0, CPU): the assistant-token loss falls from
about 7.6 to about 1, and the model goes from never opening a `<tool_call>` block to opening one in (nearly) every
held-out episode. Parsable calls, the right tool and task success on unseen environments need a larger model or more
steps (size 'cpu' / 'gpu'); they are recorded in results.json and only checked not to get worse here."""
import json, subprocess, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

def test_sft_learns_tool_call_format(tmp_path):
    out = tmp_path / 'learns'; out.mkdir()
    res = subprocess.run([str(Path(sys.executable).parent / 'papermill'), 'nbs/train/02_sft_learns.ipynb', str(out / 'run.ipynb'),
                          '-p', 'size', 'test', '-p', 'out_dir', str(out), '--cwd', 'nbs/train', '-k', 'python3', '--no-progress-bar'],
                         cwd=REPO, capture_output=True, text=True, timeout=420)
    assert res.returncode == 0, res.stderr[-3000:]
    r = json.loads((out / 'results.json').read_text())
    s = r['summary']
    tail = sum(r['losses'][-10:]) / len(r['losses'][-10:])
    assert tail < 0.5 * r['first_loss'], (r['first_loss'], tail)
    assert s['heldout after']['call_attempt'] >= s['heldout before']['call_attempt'] + 0.5, s
    for k in ('well_formed', 'valid_args'):
        assert s['heldout after'][k] >= s['heldout before'][k], (k, s)
    assert s['heldout before']['success'] <= s['heldout before']['do_nothing_floor'] + 1e-9   # an untrained model only gets read-only tasks

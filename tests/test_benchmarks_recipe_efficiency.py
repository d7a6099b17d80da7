"""benchmarks/recipe_efficiency.py at a tiny size: the table has its columns and efficiency is in
(0, 1.05]; the dependency and ideal arithmetic on a hand-made log."""
import importlib.util, json, subprocess, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / 'benchmarks' / 'recipe_efficiency.py'

def _module():
    spec = importlib.util.spec_from_file_location('recipe_efficiency', SCRIPT)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

def test_dependencies_and_ideal():
    bench = _module()
    answer = {'choices': [{'message': {'content': 'the order 1234 was shipped on Monday'}}]}
    quotes = [bench.answer_quotes(answer), [], []]
    texts = ['[]', '[{"content": "asked: the order 1234 was shipped on Monday"}]',
             '[{"content": "other"}]']
    log = [{'request': 0, 'tag': 'x', 'status': 200, 'arrived': 0.0, 'start': 0.0, 'end': 1.0},
           {'request': 1, 'tag': 'x', 'status': 200, 'arrived': 1.0, 'start': 1.0, 'end': 2.0},
           {'request': 2, 'tag': 'y', 'status': 200, 'arrived': 0.0, 'start': 0.0, 'end': 1.0}]
    after = bench.quoted_answers(log, texts, quotes, window=5.0)
    assert after == [[], [0], []]          # the second request quotes the first one's answer
    log = [{**e, 'after': a} for e, a in zip(log, after)]
    row, stages = bench.summarize('r', log, latency=1.0, concurrency=2, run_wall=3.0)
    assert (row['requests'], row['chain'], row['ideal_s'], row['efficiency']) == (3, 2, 2.0, 1.0)
    assert [s['mean_in_flight'] for s in stages] == [1.0, 1.0]

def test_tiny_run_prints_the_table(tmp_path):
    out = tmp_path / 'eff.json'
    command = [sys.executable, str(SCRIPT), '--recipes', 'synthagent', '--latency', '0.05',
               '--concurrency', '8', '--set', 'max_personas', '2', '--out', str(out)]
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    bench = _module()
    header = '| ' + ' | '.join(bench.COLUMNS) + ' |'
    assert header in proc.stdout, proc.stdout
    row = json.loads(out.read_text())['recipes'][0]
    assert set(bench.COLUMNS) <= set(row) and row['requests'] > 0
    assert 0 < row['efficiency'] <= 1.05, row

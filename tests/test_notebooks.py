"""Every notebook under nbs/ runs as one pytest test, so a failure names the notebook, and its
fresh outputs must match the outputs saved in it: notebooks are committed executed, to be read as
tutorials.

Each notebook runs once, the way nbdev's test runner runs it (execnb's in-process shell, the
notebook's folder as working directory): cells flagged with one of the `tst_flags` of
pyproject.toml (notest, slow, gpu) are skipped and not compared; folders holding a `.notest` file
and files starting with `_` or `.` are not collected. The comparison masks what changes by design
(timings, addresses, temporary paths, dates, ports: `VOLATILE` in tools/execute_notebooks.py) and
leaves figures out (they are refreshed by saving), but checks that they belong to the notebook: no
pyplot figure is open when a cell starts or when the notebook ends, the backend is not switched, and an
image is saved only from a cell that draws. `tools/execute_notebooks.py` refreshes the saved outputs.
"""
from pathlib import Path
import base64, json, sys
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'tools'))
from execute_notebooks import (REFRESH_HINT, NotebookFailed, collect_notebooks, execute, mask,
                               masked_outputs, open_figures, scrub_paths, stale_cells, undrawn_images)

NBS_PATH = REPO / 'nbs'
NOTEBOOKS = collect_notebooks(NBS_PATH)

def test_notebooks_were_found():
    assert NOTEBOOKS, f'no notebooks under {NBS_PATH}'

@pytest.mark.parametrize('nb', NOTEBOOKS, ids=lambda p: str(p.relative_to(NBS_PATH)))
def test_notebook(nb):
    rel, saved = nb.relative_to(REPO), json.loads(nb.read_text(encoding='utf-8'))
    try: fresh = execute(nb)
    except NotebookFailed as e: pytest.fail(f'{rel} failed:\n{e}', pytrace=False)
    assert not open_figures(), f'{rel} left pyplot figures open'   # execute fails first; belt and braces
    problems = stale_cells(saved, fresh) + undrawn_images(saved['cells'])
    if problems:
        shown = problems[:5] + [f'... and {len(problems) - 5} more cells'] * (len(problems) > 5)
        pytest.fail(f'{rel}: saved outputs are stale: {REFRESH_HINT.format(nb=rel)}\n'
                    + '\n'.join(shown), pytrace=False)


# The comparison itself, on hand-made outputs.
def _stream(text, name='stdout'): return {'output_type': 'stream', 'name': name, 'text': text}
def _code(*outputs): return {'cell_type': 'code', 'source': 'x', 'outputs': list(outputs)}
PNG = base64.b64encode(b'\x89PNG not really').decode()

def test_mask_hides_what_changes_run_to_run():
    assert mask('/tmp/tmpab12cd_x/a.json in 1.93s') == mask('/tmp/tmp9q_e2kzw/a.json in 2s')
    assert mask('/tmp/run-2/a') == mask('/tmp/runzz/a')
    assert scrub_paths('/tmp/sandbox') == '/tmp/sandbox'   # a fixed name is kept in saved outputs
    assert mask('<Env at 0x7f3a2b1c>, pid 4121') == mask('<Env at 0x7f00aa11>, pid 77')
    assert mask('<Env at 0x7f3a2b1c>') == mask('<Env>')   # nbdev-clean drops the address
    assert mask('id 0x7f3a2b1c') == mask('id 0x7f00aa11')
    assert (mask("{'wall_s': 3.25, 'at': '2026-01-02T10:11:12Z'}")
            == mask("{'wall_s': 0.5, 'at': '2027-03-04T01:02:03Z'}"))
    assert mask('on 127.0.0.1:43121 (812 tok/s)') == mask('on 127.0.0.1:5001 (97.5 tok/s)')
    assert '<repo>/nbs' in mask(f'{REPO}/nbs/x.ipynb')

def test_mask_keeps_what_a_reader_checks():
    assert mask('reward 0.75 over 12 tasks') != mask('reward 0.50 over 12 tasks')
    assert mask('12 tasks') != mask('13 tasks')
    assert mask('wrote <tmp>/run.jsonl') != mask('wrote <tmp>/run.json')

def test_streams_merge_and_carriage_returns_overwrite():
    merged = masked_outputs([_stream('a\n'), _stream('b\n')])
    assert merged == masked_outputs([_stream(['a\n', 'b\n'])])
    assert masked_outputs([_stream('10%\r100%\n')]) == masked_outputs([_stream('100%\n')])

def test_figures_are_not_compared():
    "matplotlib's inline backend may show a figure twice depending on what ran before in the process."
    fig = lambda b64: {'output_type': 'display_data', 'metadata': {}, 'data': {'image/png': b64,
                                                                          'text/plain': '<Figure>'}}
    saved = {'cells': [_code(fig(PNG), _stream('3 rows\n'))]}
    assert stale_cells(saved, [[fig(base64.b64encode(b'other pixels').decode()), _stream('3 rows\n')]]) == []
    assert stale_cells(saved, [[fig(PNG), fig(PNG), _stream('3 rows\n')]]) == []
    assert stale_cells(saved, [[fig(PNG), _stream('4 rows\n')]])

def test_missing_or_changed_outputs_are_stale_and_skipped_cells_are_not_compared():
    saved = {'cells': [_code(), _code(_stream('3 rows\n')), _code(_stream('old\n')),
                       {'cell_type': 'markdown', 'source': 'm'}]}
    problems = stale_cells(saved, [[_stream('1 row\n')], [_stream('3 rows\n')], None, None])
    assert len(problems) == 1 and 'cell 0' in problems[0] and 'no saved output' in problems[0]
    assert stale_cells(saved, [[], [_stream('4 rows\n')], None, None])[0].startswith('cell 1')
    assert stale_cells(saved, [[]]) == ['4 cells saved, 1 executed']

def test_timing_columns_of_tables_are_masked_and_other_columns_kept():
    ledger = ('tag          calls  tok in  mean s  max s\n'
              'agent.x         11   12378   {}   0.028\n')
    assert mask(ledger.format('0.010')) == mask(ledger.format('0.051'))
    assert mask(ledger.format('0.010')) != mask(ledger.format('0.010').replace('12378', '12379'))
    frame = ('<table><tr><th></th><th>kept</th><th>seconds</th></tr>'
             '<tr><th>0</th><td>{}</td><td>{}</td></tr>')
    assert mask(frame.format(10, 2.39) + '</table>') == mask(frame.format(10, 1.5) + '</table>')
    assert mask(frame.format(10, 2.39) + '</table>') != mask(frame.format(9, 2.39) + '</table>')
    logs = "{'train_runtime': '1.954', 'train_steps_per_second': '1.024', 'train_loss': '6.96'}"
    assert mask(logs) == mask(logs.replace('1.954', '2.3').replace('1.024', '0.86'))
    assert mask(logs) != mask(logs.replace('6.96', '6.97'))


# Figures belong to the notebook that draws them, on small notebooks run for real.
def _notebook(tmp_path, name, *sources):
    cells = [{'cell_type': 'code', 'id': f'c{i}', 'metadata': {}, 'source': src, 'outputs': [],
              'execution_count': None} for i, src in enumerate(sources)]
    path = tmp_path / f'{name}.ipynb'
    path.write_text(json.dumps({'cells': cells, 'metadata': {'kernelspec': {'language': 'python',
                    'name': 'python3', 'display_name': 'Python 3'}}, 'nbformat': 4, 'nbformat_minor': 5}))
    return path

DRAW = 'from matplotlib.figure import Figure\nfig = Figure(); fig.subplots().plot([1, 2]); fig'

def _images(outputs): return sum('image/png' in o.get('data', {}) for o in outputs)

def test_a_figure_is_shown_by_the_cell_that_draws_it_and_nowhere_else(tmp_path):
    fresh = execute(_notebook(tmp_path, 'draws', 'x = 1', DRAW, 'import matplotlib.pyplot as plt\n'
                              'plt.plot([1, 2]);', 'print(x)'))
    assert [_images(o) for o in fresh] == [0, 1, 1, 0] and open_figures() == []

def test_a_backend_switch_or_a_figure_left_open_fails_and_is_not_carried_over(tmp_path):
    "What library code that forced a backend did: its figure stayed open and showed in later notebooks."
    agg = _notebook(tmp_path, 'agg', 'import matplotlib; matplotlib.use("Agg", force=True)\n'
                    'import matplotlib.pyplot as plt\nplt.figure(); 1', 'z = 3')
    with pytest.raises(NotebookFailed, match='(?s)cell `z = 3` started with pyplot figure.*left open at '
                                             'the end.*backend switched'): execute(agg)
    assert open_figures() == []
    fresh = execute(_notebook(tmp_path, 'next', 'y = 2', DRAW))     # the next notebook shows only its own
    assert [_images(o) for o in fresh] == [0, 1] and open_figures() == []

def test_images_come_only_from_cells_that_draw():
    image = {'output_type': 'display_data', 'metadata': {}, 'data': {'image/png': PNG}}
    cells = [dict(_code(image), source='card = run(params)'), dict(_code(image), source='plot_card(card)'),
             dict(_code(image), source='fig'), _code(_stream('3 rows\n')), {'cell_type': 'markdown'}]
    problems = undrawn_images(cells)
    assert len(problems) == 1 and problems[0].startswith('cell 0 `card = run(params)`')

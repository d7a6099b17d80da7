"""`papers_repro/reported_numbers.json`: every record has the documented shape, every paper's
tables are there, the repro report lists the paper's ablation rows with the files that run them
and names the benchmarks it cannot run with the reason, and each paper's README maps every
transcribed table to what reproduces it."""
import json, re
from pathlib import Path
import pytest
from envsynth.eval.results import (RECORD_KEYS, UNITS, TidyTableError, check_reported_numbers,
                                   printed_value, reported_numbers, reported_numbers_path)
from envsynth.repro import PAPERS, paper_notes, paper_numbers, not_reproducible, report_markdown

REPO = Path(__file__).resolve().parents[1]
DOC = json.loads(reported_numbers_path().read_text())
RECORDS = DOC['entries'] + DOC['other_tables']
# the numeric tables each paper prints (read in the papers: the others print no result numbers)
TABLES = {'ASTRA': ['Table 1', 'Table 2', 'Table 3', 'Table 4'],
          'SynthAgent': ['Table 1', 'Table 2', 'Table 3', 'Table 4', 'Table 5', 'Table 6'],
          'EnvFactory': ['Table 1'], 'AgentScaler': ['Table 1', 'Table 2']}
# what envsynth.eval can run (nbs/eval: the BFCL and tau2 runners, the held-out environments)
RUNNABLE = {'bfcl', 'tau2'}


def test_every_record_has_the_documented_shape():
    assert check_reported_numbers(DOC) is DOC
    for i, e in enumerate(RECORDS):
        assert all(k in e for k in RECORD_KEYS), i
        assert all(isinstance(e[k], str) and e[k] for k in ('row', 'column')), i
        assert printed_value(e['printed']) == e['value'], e
        assert e.get('unit', 'percent') in UNITS, e
        if e.get('unit', 'percent') == 'percent': assert 0 <= e['value'] <= 100, e
    cells = [(e['paper'], e['table'], e['row'], e['column']) for e in RECORDS]
    assert len(cells) == len(set(cells)), 'one record per printed cell'


def test_main_tables_stay_where_the_results_notebook_reads_them():
    main = reported_numbers()
    main_table = {p: 'Table 3' if p == 'SynthAgent' else 'Table 1' for p in TABLES}
    assert {(e['paper'], e['table']) for e in main} == set(main_table.items())
    assert len(reported_numbers(other_tables=True)) == len(RECORDS)


def test_every_papers_tables_are_present_and_described():
    held = {}
    for e in RECORDS: held.setdefault(e['paper'], set()).add(e['table'])
    assert {p: sorted(t) for p, t in held.items()} == {p: sorted(t) for p, t in TABLES.items()}
    for paper, tables in DOC['tables'].items():
        transcribed = {t for t, about in tables.items() if about['transcribed']}
        assert transcribed == held[paper], paper
        assert all(about['caption'] for about in tables.values())


@pytest.mark.parametrize('paper, table, row, column, printed', [
    ('ASTRA', 'Table 2', '14B / Ours-14B SFT', 'BFCL-MT Missing Func', '25.50'),
    ('ASTRA', 'Table 3', 'ASTRA-32B-Thinking-v1', '(topp=0.95, topk=-1, temperature=0.6) Avg',
     '75.15'),
    ('ASTRA', 'Table 4', 'Qwen3-32B', 'Average Tokens (per sub-job)', '1145.3'),
    ('SynthAgent', 'Table 1', 'Total #Tasks', 'Value', '15,096'),
    ('SynthAgent', 'Table 2', '[0.50, 0.75)', 'Task percentage', '19.5%'),
    ('SynthAgent', 'Table 4', 'ToolStar-14B', 'Search XBench', '40.0'),
    ('SynthAgent', 'Table 5', 'W/O information gap', 'TAU-2 Bench Telecom', '28.9'),
    ('SynthAgent', 'Table 6', 'Low-score rate (< 0.25)', 'Technology', '49.1%'),
    ('AgentScaler', 'Table 2', 'AgentScaler-30B-A3B', 'Overall', '81.5'),
])
def test_cells_as_printed(paper, table, row, column, printed):
    cell = (paper, table, row, column)
    got = [e['printed'] for e in RECORDS if (e['paper'], e['table'], e['row'], e['column']) == cell]
    assert got == [printed]


def test_printed_averages_agree_with_their_cells():
    "ASTRA prints Overall = mean of the parts; a transcription slip would break it."
    for table in ('Table 1', 'Table 2'):
        cells = [e for e in RECORDS if e['paper'] == 'ASTRA' and e['table'] == table]
        for row in {e['row'] for e in cells}:
            c = {e['column']: e['value'] for e in cells if e['row'] == row}
            parts = [c[f'BFCL-MT {k}']
                     for k in ('Base', 'Missing Func', 'Missing Param', 'Long Context')]
            assert abs(sum(parts) / 4 - c['BFCL-MT Overall']) < 0.01, (table, row)
            ace = (c['ACEBench Multi Turn'] + c['ACEBench Multi Step']) / 2
            assert abs(ace - c['ACEBench Overall']) < 0.01, (table, row)


def test_ablation_rows_name_an_existing_file_and_every_ablation_file_is_listed():
    listed = RECORDS + DOC['ablations_without_numbers']
    named = {e['ablation_file'] for e in listed if e.get('ablation_file')}
    assert all((REPO / f).is_file() for f in named)
    on_disk = {str(p.relative_to(REPO))
               for p in (REPO / 'papers_repro').glob('*/ablations/*.yaml')}
    assert on_disk == named, on_disk ^ named
    for e in RECORDS:
        if 'ablation_file' in e: assert e.get('setting'), e


def test_unreproducible_benchmarks_are_marked_with_a_reason():
    for e in RECORDS:
        if e['benchmark'] not in RUNNABLE | {'tau2+bfcl', 'synthagent_data', 'synthagent_heldout', 'synthagent_heldout_domains'}:
            assert e.get('not_reproducible_here'), e
        if e['benchmark'] in RUNNABLE and e.get('unit', 'percent') == 'percent':
            assert 'not_reproducible_here' not in e, e
    for b in ('acebench', 'acebench_en', 'acebench_zh', 'tau_bench', 'mcp_atlas', 'vitabench',
              'aime', 'math', 'search'):
        assert any(e['benchmark'] == b and len(e['not_reproducible_here']) > 20 for e in RECORDS), b


def test_a_bad_record_is_refused_by_name():
    first = DOC['other_tables'][0]
    bad = dict(DOC, other_tables=[{k: v for k, v in first.items() if k != 'printed'}])
    with pytest.raises(TidyTableError, match=r"other_tables\[0\]: lacks \['printed'\]"):
        check_reported_numbers(bad)
    bad = dict(DOC, other_tables=[dict(DOC['other_tables'][0], unit='furlongs')])
    with pytest.raises(TidyTableError, match='unit'): check_reported_numbers(bad)


def _report(paper: str, ours: list[dict]) -> str:
    theirs, notes = paper_numbers(paper), paper_notes(paper)
    rep = dict(paper=PAPERS[paper].paper, scale='paper', roles={'policy': 'm'},
               offline_teacher_roles=[], stages={}, harnesses=[], data_revisions=[], protocol={},
               ours=ours, paper_numbers=theirs, not_reproducible=not_reproducible(theirs),
               paper_tables=notes['tables'], paper_notes=notes['notes'],
               ablations_without_numbers=notes['ablations_without_numbers'])
    return '\n'.join(report_markdown(rep))


def _row(benchmark, category, metric, value):
    return dict(benchmark=benchmark, category=category, model='m', metric=metric, value=value, n=10,
                harness='h', harness_version='1', data_revision='r')


@pytest.mark.parametrize('paper', sorted(PAPERS))
def test_report_lists_every_table_ablation_and_unreproducible_benchmark(paper):
    md = _report(paper, [])
    name = PAPERS[paper].paper
    for table in TABLES[name]: assert f'### {table}' in md, table
    ablations = md.split("## The paper's ablations")[1]
    for e in DOC['ablations_without_numbers'] + RECORDS:
        if e['paper'] == name and e.get('ablation_file'):
            assert f"`{e['ablation_file']}`" in ablations
    unrun = md.split('## Not reproducible here')[1]
    for e in paper_numbers(paper):
        if why := e.get('not_reproducible_here'):
            assert f"**{e['benchmark']} (" in unrun and why in unrun


def test_our_numbers_stand_beside_the_papers_cells():
    tau2 = (('retail', 0.5), ('telecom', 0.7), ('airline', 0.1))
    ours = [_row('tau2', d, 'pass^1', v) for d, v in tau2]
    ours += [_row('bfcl', c, 'accuracy', 0.4)
             for c in ('base', 'miss_func', 'miss_param', 'long_context', 'multi_turn_overall')]
    md = _report('astra', ours)
    table2 = md.split('### Table 2')[1].split('###')[0]
    # ASTRA Table 2: BFCL columns, then tau2 Retail, Telecom, Overall (mean of our retail, telecom)
    ours_row = '| **ours: m** |  |  | ' + ' | '.join(['40.00'] * 5 + ['50.00', '70.00', '60.00'])
    assert ours_row + ' |  |  |  |' in table2
    assert ('no number of ours for ACEBench Multi Turn, ACEBench Multi Step, ACEBench Overall: '
            'not reproducible here') in table2
    table3 = _report('synthagent', ours).split('### Table 3')[1].split('###')[0]
    # SynthAgent's Avg@4 is our pass^1 over 4 trials
    assert '| **ours: m** | 10.00 | 70.00 | 50.00 | 40.00 | 40.00 | 40.00 | 40.00 |  |' in table3


@pytest.mark.parametrize('paper', sorted(PAPERS))
def test_paper_readme_maps_every_table_to_what_reproduces_it(paper):
    readme = (REPO / 'papers_repro' / paper / 'README.md').read_text()
    section = readme.split('## Paper tables')[1]
    tables = {e['table'] for e in RECORDS if e['paper'] == PAPERS[paper].paper}
    for table in sorted(tables):
        assert re.search(rf'^\| {table} \|', section, re.M), table

"""Style of the notebooks, which readers read as tutorials: code lines fit in 100 characters in the
core notebooks and 120 everywhere, an export cell holds one definition (tools/cell_style.py
splits the others mechanically), and the checks use one test idiom; plus the cell tool itself on
small synthetic notebooks.

The test idiom: in a cell that is not exported, a check is a plain `assert` (with a message where
the value helps) and an expected error is `test_fail(lambda: ..., contains='...')` (fastcore's;
`exc=` names the exception type). Nothing else: no `test_eq`, `test_ne`, `test_close`, `test_is`
or other fastcore `test_*`, no `pytest.raises`, no try/except written as a check, but for the
expected error of an awaited call, which a lambda cannot hold. Approximate equality is written out:
`assert abs(a - b) < eps` or `math.isclose`. Export cells are library code: their asserts are not
tests and are not looked at. `python tools/cell_style.py idiom --verify NOTEBOOK` rewrites the
other forms where the rewrite is the same test."""
import ast, json, sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'tools'))
import cell_style as cs  # noqa: E402

CORE = REPO / 'nbs' / 'core'
MAX_LINE = 100          # core notebooks
MAX_LINE_ALL = 120      # every notebook
CHECKED = sorted(CORE.glob('*.ipynb'))
ALL = cs.notebooks([str(REPO / 'nbs')])
nb_id = lambda p: str(p.relative_to(REPO / 'nbs'))


def long_code_lines(path: Path, limit: int = MAX_LINE) -> list[str]:
    "`cell id: length: start of line` for every code-cell line of notebook `path` over `limit`."
    cells = json.loads(path.read_text())['cells']
    code = [(c.get('id'), ''.join(c['source'])) for c in cells if c['cell_type'] == 'code']
    return [f'{cid}: {len(line)}: {line.strip()[:60]}' for cid, src in code
            for line in src.splitlines() if len(line) > limit]


def multi_definition_cells(path: Path) -> list[str]:
    "`cell id: names` of every export cell of notebook `path` that holds more than one top-level definition."
    out = []
    for c in cs.read_nb(path)['cells']:
        if not cs.is_export(c): continue
        tree = cs.parse(cs.split_directives(cs.src(c))[1])
        names = [n.name for n in tree.body if isinstance(n, cs.DEFS)] if tree else []
        if len(names) > 1: out.append(f'{c.get("id")}: {", ".join(names)}')
    return out


def test_finds_long_lines(tmp_path):
    too_long = 'y = "' + 'z' * 100 + '"'
    nb = {'cells': [{'cell_type': 'code', 'id': 'a', 'source': ['x = 1\n', too_long]},
                    {'cell_type': 'markdown', 'id': 'b', 'source': ['w' * 200]}]}
    (tmp_path / 'n.ipynb').write_text(json.dumps(nb))
    found = long_code_lines(tmp_path / 'n.ipynb')
    assert len(found) == 1 and found[0].startswith('a: 106: ')
    assert long_code_lines(tmp_path / 'n.ipynb', MAX_LINE_ALL) == []


def test_finds_core_notebooks():
    assert CHECKED, CORE
    assert set(CHECKED) <= set(ALL) and len(ALL) > len(CHECKED)


@pytest.mark.parametrize('path', CHECKED, ids=lambda p: p.stem)
def test_code_lines_fit(path):
    long = long_code_lines(path)
    assert not long, f'{path.name}: code lines over {MAX_LINE} characters:\n' + '\n'.join(long)


@pytest.mark.parametrize('path', ALL, ids=nb_id)
def test_code_lines_fit_everywhere(path):
    long = long_code_lines(path, MAX_LINE_ALL)
    assert not long, (f'{nb_id(path)}: code lines over {MAX_LINE_ALL} characters (code: python tools/cell_style.py '
                      f'wrap {path.relative_to(REPO)}; lines in triple-quoted strings by hand):\n' + '\n'.join(long))


@pytest.mark.parametrize('path', ALL, ids=nb_id)
def test_one_definition_per_export_cell(path):
    multi = multi_definition_cells(path)
    assert not multi, (f'{nb_id(path)}: export cells with several definitions (split them: '
                       f'python tools/cell_style.py split {path.relative_to(REPO)}):\n' + '\n'.join(multi))


def other_idioms(path: Path) -> list[str]:
    "`cell id: line: statement` of every check in a non-export cell of notebook `path` not in the one idiom."
    return [f'{c.get("id")}: {f}' for c, _, code in cs.code_cells(cs.read_nb(path)) for f in cs.forbidden_checks(code)]


@pytest.mark.parametrize('path', ALL, ids=nb_id)
def test_one_test_idiom(path):
    found = other_idioms(path)
    assert not found, (f'{nb_id(path)}: checks not written as `assert` / `test_fail(lambda: ..., contains=...)` '
                       f'(python tools/cell_style.py idiom --verify {path.relative_to(REPO)}; the rest by hand):\n'
                       + '\n'.join(found))


def test_finds_other_idioms():
    code = ('test_eq(a, 1)\nif x: test_close(b, 2)\nwith pytest.raises(ValueError): f()\n'
            'try: f(); raise AssertionError\nexcept ValueError: pass\n'
            'try: await g(); raise AssertionError\nexcept ValueError as e: assert "m" in str(e)\n'
            'try: h()\nfinally: pass\n'
            'assert a == 1\ntest_fail(lambda: f(), contains="m")\n[test_ne(x, 1) for x in xs]')
    found = cs.forbidden_checks(code)
    assert [f.split(':')[0] for f in found] == ['1', '2', '3', '4', '12'], found
    nb = notebook(cell('#| export\ntest_eq(a, 1)', id='e'), cell('test_eq(a, 1)', id='t'))
    assert [f'{c["id"]}' for c, _, code in cs.code_cells(nb) if cs.forbidden_checks(code)] == ['t']


# --- the cell tool on synthetic notebooks --------------------------------------------------------

def cell(source: str, cell_type='code', id='c0', outputs=None, metadata=None) -> dict:
    c = {'cell_type': cell_type, 'id': id, 'metadata': metadata or {}, 'source': cs.to_lines(source)}
    if cell_type == 'code': c.update(execution_count=None, outputs=outputs or [])
    return c

def notebook(*cells) -> dict:
    return {'cells': list(cells), 'metadata': {'kernelspec': {'name': 'python3'}}, 'nbformat': 4,
            'nbformat_minor': 5}

MULTI = '''#| export
import re
X = 1

# what f does
@patch
@other(2)
def f(a): return a + X

class K:
    "A class."
    def m(self): return f(1)
# g does nothing
async def g(): pass
G = g
'''

def exported(nb: dict) -> str:
    "The code nbdev would export: the export cells without their directive lines, joined."
    return '\n\n'.join(cs.split_directives(cs.src(c))[1] for c in nb['cells'] if cs.is_export(c))

def test_split_keeps_the_code_and_attaches_what_belongs_to_a_definition():
    nb = notebook(cell('# Title', 'markdown', id='m0'),
                  cell(MULTI, id='e1', outputs=[{'output_type': 'stream', 'name': 'stdout', 'text': ['x']}],
                       metadata={'tags': ['t']}),
                  cell('f(1)', id='e2'))
    before = exported(nb)
    assert cs.split_nb(nb) == 1
    parts = [c for c in nb['cells'] if cs.is_export(c)]
    assert ast.dump(ast.parse(exported(nb))) == ast.dump(ast.parse(before))
    srcs = [cs.src(p) for p in parts]
    assert len(parts) == 3 and all(s.startswith('#| export\n') for s in srcs)
    assert srcs[0] == '#| export\nimport re\nX = 1\n\n# what f does\n@patch\n@other(2)\ndef f(a): return a + X'
    assert srcs[1] == '#| export\nclass K:\n    "A class."\n    def m(self): return f(1)'
    assert srcs[2] == '#| export\n# g does nothing\nasync def g(): pass\nG = g'
    assert parts[0]['id'] == 'e1' and parts[0]['outputs'] and not parts[1]['outputs']
    ids = [c['id'] for c in nb['cells']]
    assert len(set(ids)) == len(ids) and all(p['metadata'] == {'tags': ['t']} for p in parts)
    assert [c['id'] for c in nb['cells']][-1] == 'e2' and cs.src(nb['cells'][0]) == '# Title'
    assert cs.split_nb(nb) == 0                                  # a second run changes nothing


def test_split_leaves_what_it_cannot_or_need_not_cut():
    one = '#| export\nX = 1\ndef f(): pass\nY = f'
    same_line = '#| export\ndef f(): pass\nx = 1; exec("")\ndef g(): pass; y = 2'
    shown = 'def f(): pass\ndef g(): pass'                     # not exported: an example
    magic = '#| export\n%time 1\ndef f(): pass\ndef g(): pass'
    nb = notebook(*[cell(s, id=f'c{i}') for i, s in enumerate([one, shown, magic])])
    assert cs.split_nb(nb) == 0 and len(nb['cells']) == 3
    assert cs.split_code(cs.split_directives(same_line)[1]) == ['def f(): pass',
                                                                'x = 1; exec("")\ndef g(): pass; y = 2']
    assert cs.split_code('def f(): pass\nx = 1; def_ = 2\ndef g(): pass') is not None
    assert cs.split_code('x = 1\ndef f(): pass\nclass A: pass; y = 1\ndef g(): pass') is not None
    assert cs.split_code('def f(): pass; z = 1\ndef g(): pass') is not None
    assert cs.split_code('x = 1; def_ = 2') is None


def test_hide_only_touches_check_only_cells():
    cells = [cell('assert f(1) == 2, "f adds one"\ntest_eq(g(), 3)\nwith pytest.raises(ValueError): h()',
                  id='checks'),
             cell('x = f(1)\nassert x == 2', id='computes'),
             cell('test_eq(f(1), 2)\nf(1)', id='shows'),
             cell('assert f(1) == 2', id='printed', outputs=[{'output_type': 'stream', 'text': ['w']}]),
             cell('#| export\nassert X', id='exported'),
             cell('#| hide\nassert x', id='hidden'),
             cell('#| eval: false\ntest_fail(lambda: f(None))', id='flagged'),
             cell('assert x', 'markdown', id='md')]
    nb = notebook(*cells)
    before = {c['id']: cs.src(c) for c in nb['cells']}
    assert cs.hide_nb(nb) == 2
    after = {c['id']: cs.src(c) for c in nb['cells']}
    assert after['checks'] == '#| hide\n' + before['checks']
    assert after['flagged'] == '#| hide\n' + before['flagged']
    assert {k: v for k, v in after.items() if k not in ('checks', 'flagged')} == \
           {k: v for k, v in before.items() if k not in ('checks', 'flagged')}
    assert cs.hide_nb(nb) == 0


@pytest.mark.parametrize('before, after', [
    ("test_eq(r.error.type, 'bad')", "assert r.error.type == 'bad'"),
    ("test_ne(len(xs), 0)", "assert len(xs) != 0"),
    ("test_eq(f(x), None)", "assert f(x) is None"),
    ("test_ne(None, y)", "assert y is not None"),
    ("test_eq(a or b, {'k': 1})", "assert (a or b) == {'k': 1}"),
    ("test_eq(await f(), 2)", "assert (await f()) == 2"),
    ("if ok: test_eq(x, 1.5)", "if ok: assert x == 1.5"),
    ("test_eq(xs, [1, 2])", None),                   # fastcore compares a list and a tuple element-wise
    ("test_eq(xs, ys)", None),
    ("test_eq(b, b'x')", None),
    ("test_eq(x, 1, 'msg')", None),
    ("test_eq(x,\n        'two lines')", "assert (x ==\n        'two lines')"),
    ("test_eq(\n    f(x).reason,\n    'y',\n)", "assert (\n    f(x).reason ==\n    'y'\n)"),
    ("test_eq(a +\n  b, 'c')  # why", "assert ((a +\n  b) == 'c')  # why"),
    ("test_is(a, b)", "assert a is b"),
    ("test_close(x, 1.5)", None),                    # numbers or not: only a run tells
    ("with pytest.raises(ValueError, match='min_len'): walk(g, 1)",
     "test_fail(lambda: walk(g, 1), exc=ValueError, contains='min_len')"),
    ("with pytest.raises(KeyError):\n    load(\n        'x')", "test_fail(lambda: load(\n        'x'), exc=KeyError)"),
    ("with pytest.raises(ValueError, match='a.b'): f()", None),     # a regex, not a substring
    ("with pytest.raises(ValueError, match=msg): f()", None),
    ("with pytest.raises(ValueError) as e: f()", None),
    ("with pytest.raises(ValueError):\n    f()\n    g()", None),
    ("try: f(x); raise AssertionError('no')\nexcept (ValueError, TypeError) as e: assert 'empty' in str(e)",
     "test_fail(lambda: f(x), exc=(ValueError, TypeError), contains='empty')"),
    ("try: f(x); raise AssertionError\nexcept ValueError: pass", "test_fail(lambda: f(x), exc=ValueError)"),
    ("try: f(x); raise AssertionError\nexcept ValueError as e: print(e)", None),
    ("try: f(x); raise AssertionError\nexcept ValueError as e: assert str(e).startswith('m')", None),
    ("try: await f(x); raise AssertionError\nexcept ValueError as e: assert 'm' in str(e)", None),
])
def test_idiom_rewrites_only_the_same_test(before, after):
    out, left = cs.idiom_cell(before)
    assert out == (after or before)
    assert bool(left) == (after is None)
    if after: assert not cs.forbidden_checks(out)


@pytest.mark.parametrize('before, after', [
    ("test_eq(xs, [1, 2])", "assert xs == [1, 2]"),
    ("test_ne(xs, ys)", "assert xs != ys"),
    ("test_close(f(x), 0.75, eps=1e-6)", "assert abs(f(x) - 0.75) < 1e-6"),
    ("test_close(a + b, c * d)", "assert abs(a + b - (c * d)) < 1e-5"),   # the AST is checked
    ("test_close(a, b + c, 1e-3)", "assert abs(a - (b + c)) < 1e-3"),
    ("test_close(a if x else b, c)", "assert abs((a if x else b) - c) < 1e-5"),
])
def test_idiom_rewrites_what_a_run_verified(before, after):
    assert cs.idiom_cell(before)[0] == before                   # static: not known to be the same test
    out, left = cs.idiom_cell(before, {(1, 0)})
    assert (out, left) == (after, [])


VERIFY_NB = [
    'from fastcore.test import test_eq, test_ne, test_close, test_fail\nimport numpy as np, pytest',
    'test_eq([1, 2], [1, 2])\ntest_eq([1, 2], (1, 2))\ntest_eq(np.array([1, 2]), [1, 2])\n'
    'for x in [[1], (1,)]: test_eq(x, [1])\ntest_ne((1, 2), (2, 1))\ntest_close(0.1 + 0.2, 0.3)\n'
    'test_close([0.1], [0.1])\nif False: test_eq([], [])',
    '#| eval: false\ntest_eq([3], [3])',
    'with pytest.raises(ZeroDivisionError, match="division"): 1 / 0',
]

def test_verify_runs_the_notebook_and_rewrites_what_agreed(tmp_path):
    pytest.importorskip('numpy')
    p = tmp_path / 'v.ipynb'
    p.write_text(cs.dump_nb(notebook(*[cell(s, id=f'c{i}') for i, s in enumerate(VERIFY_NB)])))
    verified = cs.verify_nb(p)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['v.ipynb']           # the copy run is gone
    assert verified == {'c1': {(1, 0), (5, 0), (6, 0)}}
    nb = cs.read_nb(p)
    n, left = cs.idiom_nb(nb, verified)
    srcs = [cs.src(c) for c in nb['cells']]
    assert srcs[0] == 'from fastcore.test import test_eq, test_close, test_fail\nimport numpy as np'
    assert srcs[1].splitlines()[0] == 'assert [1, 2] == [1, 2]' and srcs[1].splitlines()[4] == 'assert (1, 2) != (2, 1)'
    assert srcs[1].splitlines()[5] == 'assert abs(0.1 + 0.2 - 0.3) < 1e-5'
    assert srcs[1].splitlines()[1] == 'test_eq([1, 2], (1, 2))'                  # equals: element-wise, == False
    assert srcs[3] == 'test_fail(lambda: 1 / 0, exc=ZeroDivisionError, contains="division")'
    assert n == 4 and len(left) == 6 and srcs[2] == VERIFY_NB[2]


def test_notebooks_are_written_as_nbdev_writes_them(tmp_path):
    src = CORE / '00_schema.ipynb'
    assert cs.dump_nb(cs.read_nb(src)) == src.read_text()
    p = tmp_path / 'a.ipynb'
    p.write_text(cs.dump_nb(notebook(cell(MULTI, id='e1'), cell('assert f(1) == 2', id='t'))))
    assert cs.main(['check', str(tmp_path)]) == 0 and p.read_text() == cs.dump_nb(cs.read_nb(p))
    assert cs.main(['split', 'hide', str(tmp_path)]) == 0
    nb = cs.read_nb(p)
    assert len(nb['cells']) == 4 and cs.src(nb['cells'][-1]).startswith('#| hide\n')
    assert p.read_text().endswith('}\n') and not multi_definition_cells(p)
    mtime = p.stat().st_mtime_ns
    cs.main(['split', 'hide', str(p)])
    assert p.stat().st_mtime_ns == mtime                         # nothing to do: not rewritten


@pytest.mark.skipif(cs.shutil.which('ruff') is None, reason='wrap needs ruff')
def test_wrap_shortens_long_lines_and_keeps_the_code():
    long_call = "    if not found: raise ValueError(f'the {tag!r} request has no inputs block, " + 'x' * 60 + "')"
    code = ('from envsynth.schema import (' + ', '.join(f'name_{i}' for i in range(25)) + ')\n'
            'def f(found, tag):\n'
            '    "' + 'A docstring far too long to fit. ' * 5 + '"\n'
            '    if found: return 1\n' + long_call + '\n'
            "    return {'a': 1,   'b':2}")
    new, left = cs.wrap_code(code)
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(code))
    assert left == []                                            # the docstring: cut into adjacent literals
    assert '    ("A docstring far too long' in new
    assert new.splitlines()[0].startswith('from envsynth.schema import (name_0, ')   # nbdev makes it relative
    assert "    if found: return 1\n" in new and "    return {'a': 1,   'b':2}" in new   # only long lines move
    assert "raise ValueError(\n" in new and "f'the {tag!r}" in new                    # quotes kept
    assert cs.wrap_code('%time f()\n' + 'x' * 130)[0].startswith('%time')             # magics: left


# --- wrap: long string literals and comments -----------------------------------------------------

W = 'word ' * 30
STRINGS = {
    'docstring': 'def f(x):\n    "' + 'A docstring far too long to fit. ' * 5 + '"\n    return x',
    'assigned': "msg = 'it\\'s \"quoted\" ' + '" + W + "'",
    'f-string': "raise ValueError(f'the {tag!r} request {n:>{w}} has {{braces}} and {d[\"k\"]} ' f'" + W + "{x}')",
    'raw bytes': "pat = rb'\\d+ \\' " + W + "\\w' + Rb'x'",
    'fr': "s = fr'{a} \\n " + W + "{b!s:>3}'",
    'escapes': "s = '" + 'caf\\u00e9 \\n\\N{BULLET} \\x41\\t\\101 ' * 10 + "'",
    'u prefix': "s = u'" + W + "'",
    'in a dict': "d = {'key': \"" + "it's ok " * 18 + "\", 'b': [1, 2]}",
    'triple on one line': 'x = """' + W + '"""',
    'no spaces': "url = '" + 'x' * 200 + "'",
    'far right': ("def g(x):\n    if x:\n        result = some_function_with_a_long_name(first_argument, "
                  "second_argument, 'a b c " + W + "')"),
}

def long_lines(code: str, limit: int = MAX_LINE_ALL) -> list[str]:
    return [l for l in code.splitlines() if len(l) > limit]

@pytest.mark.parametrize('code', STRINGS.values(), ids=STRINGS.keys())
def test_wrap_cuts_long_strings_into_the_same_literal(code):
    new, left = cs.wrap_code(code)
    assert left == [] and not long_lines(new) and new != code
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(code))      # one Constant / JoinedStr, as before
    assert len(new.splitlines()) > len(code.splitlines())
    assert cs.wrap_code(new) == (new, [])                            # a second run changes nothing

def test_wrap_keeps_docstrings():
    code = ('class K:\n    "' + 'Class doc. ' * 12 + '"\n'
            '    def m(self, a: int):  # the a\n        \'' + 'Method doc, with `code`: ' * 5 + '\'\n')
    new, left = cs.wrap_code(code)
    assert not left and '    ("Class doc.' in new and "        ('Method doc" in new
    ns_old, ns_new = {}, {}
    exec(code, ns_old); exec(new, ns_new)
    assert ns_new['K'].__doc__ == ns_old['K'].__doc__ and ns_new['K'].m.__doc__ == ns_old['K'].m.__doc__
    assert ast.get_docstring(ast.parse(new).body[0]) == ast.get_docstring(ast.parse(code).body[0])

def test_wrap_cuts_strings_only_between_units():
    for s in ['\\N{BLACK CIRCLE} ' * 12, '\\u00e9\\x41 ' * 25, '{a} {{b}} {c:>{w}} ' * 8]:
        code = f"x = f'{s}'"
        new, _ = cs.wrap_code(code)
        assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(code))
        for piece in [l.strip().lstrip('x =(') for l in new.splitlines()]:
            body = piece.rstrip(')')[2:-1]
            assert cs.str_units(body, False, True) is not None            # each piece is whole by itself
    units = cs.str_units('a\\n b {x!r:>{w}} \\N{DASH} c', False, True)
    assert [t for t, _ in units] == ['a', '\\n', ' ', 'b', ' ', '{x!r:>{w}}', ' ', '\\N{DASH}', ' ', 'c']
    assert [t for t, ok in units if ok] == ['\\n', ' ', ' ', ' ', ' ']
    assert [t for t, _ in cs.str_units('a\\\' b', True, False)] == ['a', "\\'", ' ', 'b']   # raw: \' is two characters
    assert cs.str_units('{unclosed', False, True) is None

def test_wrap_cuts_comments_and_leaves_what_it_must():
    code = ('flag = False  # ' + 'a comment that explains the flag at length ' * 4 + '\n'
            '# ' + 'a paragraph of comment lines that runs on and on, ' * 3 + '\n'
            '# and it goes on here\n'
            'def f(a: int,  # ' + 'the a, documented by nbdev from this comment ' * 3 + '\n'
            '      b=2): return a\n'
            'x = 1  # noqa: E501 ' + 'z' * 120 + '\n'
            's = """a docstring-like text\n' + W * 2 + '\n"""\n')
    new, left = cs.wrap_code(code)
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(code))
    lines = new.splitlines()
    assert lines[0].startswith('flag = False  # a comment') and lines[1].startswith(' ' * 14 + '# ')
    assert '# and it goes on here' not in new and new.count('# a paragraph') == 1   # the paragraph flows on
    assert ' '.join(new.split()).count('and it goes on here') == 1
    assert sorted(left) == sorted(l for l in code.splitlines() if 'the a, documented' in l or 'noqa' in l
                                  or l.startswith('word'))                # docments, pragmas, multi-line strings

def test_wrap_leaves_short_literals_of_a_long_line_whole():
    code = ("PRESETS = [\n    Preset('synthagent', 'envsynth_synthagent', group_size=16, train_batch_size=128, "
            "ppo_mini_batch_size=16, learning_rate=1e-6,\n           clip=0.2),\n]")
    new = cs.break_line(code, 1)                                       # where ruff's layout is not taken
    assert "'envsynth_synthagent'" in new and ast.dump(ast.parse(new)) == ast.dump(ast.parse(code))
    assert new.splitlines()[2] == ' ' * 11 + 'learning_rate=1e-6,'       # cut after a comma, aligned in the call
    assert not long_lines(new) and cs.wrap_code(code)[1] == []


def test_wrap_keeps_the_comments_nbdev_shows_as_parameter_docs():
    code = ('@dataclass\nclass P:\n    a: int = 1   # the a\n    # a section\n'
            '    b: str | None = None        # ' + 'the b, documented at length by this comment ' * 3 + '\n'
            'def f(x: int,  # ' + 'the x, documented by nbdev from this comment ' * 3 + '\n      y=2): return x\n')
    new, left = cs.wrap_code(code)
    assert cs.doc_comments(new) == cs.doc_comments(code) and ('P', 'b') in cs.doc_comments(code)
    assert '    # a section\n\n    # the b, documented' in new and '    b: str | None = None\n' in new   # moved above
    assert left == [l for l in code.splitlines() if 'the x, documented' in l]   # no way keeps x's doc: left
    shown = ('def show(tr, n=100): print(render(tr.model_copy(update={"messages": tr.messages[1:]}), '
             'max_output_chars=n))   # no system prompt')
    assert len(shown) > 125
    assert cs.wrap_code(shown, docs=False)[1] == [] and cs.wrap_code(shown)[1] == [shown]   # an example: docs=False


DOC = ("def f():\n"
       '    """Servers started ahead for the episodes that will take them, each one a fresh process in a '
       'freshly made folder of '
       'its own\n'
       "    house. `take` hands one to a single episode, which closes it; at most `ahead` per server wait, and none"
       " - not one beyond\n"
       "    - a list item that is long" + " long" * 20 + "\n"
       "    ```\n"
       "    a code block line that is long" + " long" * 20 + "\n"
       "    ```\n"
       "    the end, long" + " long" * 22 + '."""\n'
       "    return 1\n")

def test_docwrap_cuts_docstring_lines_keeping_words_and_markdown():
    import inspect
    mistune = pytest.importorskip('mistune')
    new, left = cs.docwrap_code(DOC)
    assert cs.words_dump(ast.parse(new)) == cs.words_dump(ast.parse(DOC))
    lines = new.splitlines()
    assert all(len(l) > 120 for l in DOC.splitlines()[1:4]) and len(DOC.splitlines()[7]) > 120
    assert left == [l for l in DOC.splitlines() if 'code block line' in l]          # fenced: left
    assert [l for l in lines if len(l) > 120] == left
    assert lines[1].endswith('folder of') and lines[2].startswith('    its own house.')   # the rest flows on
    assert not any(l.strip().startswith('- not one') for l in lines)
    doc = lambda c: inspect.cleandoc(ast.get_docstring(ast.parse(c).body[0], clean=False))
    html = lambda c: ' '.join(mistune.html(doc(c)).split())
    assert html(new) == html(DOC)
    assert cs.docwrap_code(new) == (new, left)                                        # a second run changes nothing
    raw = 'x = """' + 'data ' * 30 + '\n' + 'data ' * 30 + '"""'     # not a docstring: its text is data
    assert cs.docwrap_code(raw)[0] == raw


def test_idiom_fixes_the_imports():
    nb = notebook(cell('#| hide\nimport pytest', id='a'), cell('from fastcore.test import test_eq\nx = 1', id='b'),
                  cell("with pytest.raises(ValueError, match='m'): f()\ntest_eq(x, 1)", id='c'))
    assert cs.idiom_nb(nb) == (2, [])
    assert [cs.src(c) for c in nb['cells']] == ['#| hide\nfrom fastcore.test import test_fail', 'x = 1',
                                                "test_fail(lambda: f(), exc=ValueError, contains='m')\nassert x == 1"]
    nb = notebook(cell('import os', id='a'), cell('test_eq(f(), None)', id='b'))
    assert cs.idiom_nb(nb)[0] == 1 and cs.src(nb['cells'][1]) == 'assert f() is None'
    nb = notebook(cell('import os', id='a'), cell("try: f(); raise AssertionError\nexcept KeyError: pass", id='b'))
    assert cs.idiom_nb(nb)[0] == 1
    assert [cs.src(c) for c in nb['cells']] == ['from fastcore.test import test_fail\nimport os',
                                                'test_fail(lambda: f(), exc=KeyError)']

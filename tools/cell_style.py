"""Mechanical style fixes for the notebooks under nbs/, safe to run on the whole tree.

    python tools/cell_style.py check nbs                 # counts per notebook, nothing written
    python tools/cell_style.py split hide wrap nbs       # rewrite in place: the three safe fixes
    python tools/cell_style.py docwrap nbs               # long lines in docstrings (same words, not same AST)
    python tools/cell_style.py idiom --verify nbs/core/00_schema.ipynb   # runs the notebook first

Subcommands (several may be given; they run in the order written), then notebook files or folders.
`split`, `hide` and `wrap` leave the exported code AST-identical; `docwrap` changes the whitespace of
docstrings only; `idiom` changes checks only and is not run on the whole tree without executing the
notebooks it touched.

* `split`: an export cell (`#| export`, `#| exports`, `#| exporti`) that holds more than one
  top-level `def`/`class` becomes one cell per definition. Statements that are not definitions
  (constants, imports, assignments) stay with the definition that follows them; those after the
  last definition stay with it. Decorators and the comment lines right above a definition move
  with it. The directive lines are repeated in every part. The code nbdev exports is unchanged
  but for the cell markers (`# %% ...`) and blank lines between cells.
* `hide`: a code cell that is not exported and only checks things (every top-level statement is
  an `assert`, a fastcore `test_*(...)` call, or a `with pytest.raises(...)`/`with raises(...)`
  block) and shows no output gets `#| hide`, so the docs do not present it as an example.
* `idiom`: the one test idiom of the notebooks. A check is a plain `assert` (with a message where
  the value helps); an expected error is `test_fail(lambda: ..., contains='...')` (fastcore's, which
  nbdev users know; `exc=` names the exception type where it matters). Nothing else in a cell that
  is not exported: no `test_eq`, `test_ne`, `test_close`, `test_is` or other fastcore `test_*`, no
  `pytest.raises`, no try/except written as a check. Approximate equality is written out:
  `assert abs(a - b) < eps` or `math.isclose(a, b)`. The one exception: an expected error of an
  awaited call (a lambda cannot `await`) stays `try: await f(); raise AssertionError(...)` /
  `except E as e: assert '...' in str(e)`. Export cells are library code and are never touched.
  A rewrite must be the same test, so `idiom` rewrites only
  - `test_eq(a, b)` / `test_ne(a, b)` as `assert a == b` / `assert a != b` where one side is a value
    for which fastcore's `equals` is `==` (a string, number, bool, dict or set, a `len(...)`/`str(...)`
    call ...), `test_eq(x, None)` as `assert x is None`, `test_is(a, b)` as `assert a is b`;
  - with `--verify`, also the `test_eq`/`test_ne` calls that a run of the notebook found to agree:
    a copy of the notebook runs (as tests/test_notebooks.py runs it) with every such call recording
    whether `a == b` (`a != b`) was a `bool` equal to fastcore's `equals(a, b)`; a call rewritten
    agreed at every call (a list compared with a tuple, a numpy array, a DataFrame do not), and a
    call never made (a skipped cell, a branch not taken) is left. `test_close(a, b, eps)` becomes
    `assert abs(a - b) < eps` where both values were real numbers at every call;
  - `with pytest.raises(E, match='m'): f(x)` as `test_fail(lambda: f(x), exc=E, contains='m')` where
    `m` is a string with no regex metacharacters (then `re.search` is `in`);
  - `try: f(x); raise AssertionError(...)` / `except E as e: assert 'm' in str(e)` (or `pass`) as
    `test_fail(lambda: f(x), exc=E, contains='m')`.
  A check over several lines keeps its layout (`assert (` is as wide as `test_eq(`). Calls it
  cannot rewrite (never run, disagreeing values, a rewrite over the line limit: 100 characters in
  nbs/core, 120 elsewhere) are left and listed, to be written out by hand (`assert list(a) == [...]`,
  `assert (arr == x).all()` ...); then the unused `test_*` and `pytest` imports are dropped and
  `test_fail` imported where it is used. Run the notebooks after (tools/execute_notebooks.py).
* `wrap`: a statement with a line over 120 characters is reformatted by `ruff format --range`
  (quotes kept, nothing else in the cell touched); a long `from ... import` becomes
  `from m import (a, b,` plus aligned lines, the form nbdev still makes relative. Where ruff
  cannot shorten the line, a one-line string literal that crosses the limit is cut into adjacent
  literals (`"a b c"` -> `("a b "` / `"c")`, no parentheses added inside brackets), which the
  parser joins back into the same constant: the AST and every docstring stay the same. Pieces end
  after a space or a `\n` escape, never inside an escape or an f-string field, and keep the
  prefix (r, b, f, u ...). A long comment becomes several comment lines (a comment paragraph flows
  on into its next line, a trailing one may move above its line); then a line in brackets is cut
  after a comma. A change that would alter the code's AST is not taken, nor, in export cells, one
  that changes the comments nbdev shows as parameter docs (on a parameter's or a dataclass field's
  line, or right above it). Left and listed: lines inside multi-line (triple-quoted) strings (see
  `docwrap`), such parameter comments, pragmas (`# noqa` ...), cells with magics. Needs `ruff`.
* `docwrap`: a line over 120 characters inside a multi-line docstring is cut at spaces, the rest
  flowing on into the paragraph's next line. Not AST-identical: `__doc__` gets a newline (and the
  indentation `inspect.getdoc` removes) for a space, the words stay the same (checked), and its
  Markdown renders the same paragraph: no cut where the next word would start a Markdown block
  (list item, heading, quote, table row, fence), none in an indented or fenced block. Other
  triple-quoted strings are left: their text is data.
* `check`: counts per notebook: export cells with more than one definition, non-export code
  cells hidden, check idioms (assert, test_fail, other fastcore test_*, pytest.raises, try/except
  checks), code lines over 120 characters.

Files are written the way nbdev writes them (sorted keys, one-space indent, UTF-8, a final
newline); a notebook that needs no change is not rewritten.
"""
from __future__ import annotations
import argparse, ast, copy, hashlib, io, json, re, shutil, subprocess, sys, textwrap, tokenize
from pathlib import Path

EXPORT_RE = re.compile(r'^#\|\s*export[si]?\b')
DIRECTIVE_RE = re.compile(r'^\s*#\|')
HIDE_RE = re.compile(r'^#\|\s*(hide|echo:\s*false|include:\s*false)\b')
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
LONG = 120
MAX_CORE = 100          # core notebooks (tests/test_notebook_style.py)
TEST_CALLS = re.compile(r'^test(_\w+)?$')


# --- reading and writing notebooks ------------------------------------------------------------

def read_nb(path: Path) -> dict: return json.loads(Path(path).read_text(encoding='utf-8'))

def dump_nb(nb: dict) -> str: return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + '\n'

def write_nb(path: Path, nb: dict) -> bool:
    "Write `nb` to `path` if it differs from the file; whether it was written."
    text = dump_nb(nb)
    if Path(path).read_text(encoding='utf-8') == text: return False
    Path(path).write_text(text, encoding='utf-8')
    return True

def src(cell: dict) -> str:
    s = cell.get('source', '')
    return ''.join(s) if isinstance(s, list) else s

def to_lines(text: str) -> list[str]: return text.splitlines(keepends=True)

def split_directives(text: str) -> tuple[list[str], str]:
    "The leading `#|` directive lines of a cell and the code after them."
    lines = to_lines(text)
    i = 0
    while i < len(lines) and DIRECTIVE_RE.match(lines[i]): i += 1
    return lines[:i], ''.join(lines[i:])

def is_export(cell: dict) -> bool:
    return cell['cell_type'] == 'code' and any(EXPORT_RE.match(l.strip()) for l in split_directives(src(cell))[0])

def is_hidden(cell: dict) -> bool:
    return any(HIDE_RE.match(l.strip()) for l in split_directives(src(cell))[0])

def parse(code: str) -> ast.Module | None:
    "The module of `code`, or None where it is not plain Python (magics, shell lines)."
    try: return ast.parse(code)
    except SyntaxError: return None

def n_defs(code: str) -> int:
    tree = parse(code)
    return sum(isinstance(n, DEFS) for n in tree.body) if tree else 0

def fresh_id(old: str, k: int, taken: set[str]) -> str:
    "A cell id derived from the id it was split from (so a rerun gives the same ids), unique in `taken`."
    salt = 0
    while True:
        new = hashlib.sha1(f'{old}:{k}:{salt}'.encode()).hexdigest()[:8]
        if new not in taken: taken.add(new); return new
        salt += 1


# --- split ---------------------------------------------------------------------------------------

def start_line(node: ast.stmt) -> int:
    "First line (1-based) of `node`, decorators included."
    decs = getattr(node, 'decorator_list', None) or []
    return min([node.lineno] + [d.lineno for d in decs])

def split_code(code: str) -> list[str] | None:
    """`code` cut into one piece per top-level definition, or None where it needs no cut (at most one
    definition) or cannot be cut on line boundaries."""
    tree = parse(code)
    if tree is None: return None
    body = tree.body
    if sum(isinstance(n, DEFS) for n in body) < 2: return None
    # groups: leading non-defs + a def; trailing non-defs join the last group
    groups, cur = [], []
    for n in body:
        cur.append(n)
        if isinstance(n, DEFS): groups.append(cur); cur = []
    if cur: groups[-1].extend(cur)
    if any(a[-1].end_lineno >= start_line(b[0]) for a, b in zip(groups, groups[1:])):
        return None                                            # `def f(): ...; x = 1` then a cut on that line
    lines = to_lines(code)
    cuts = [0]                                                 # 0-based line index where each group starts
    for prev, g in zip(groups, groups[1:]):
        i = start_line(g[0]) - 1
        floor = prev[-1].end_lineno                            # do not climb into the previous statement
        while i - 1 >= floor and lines[i - 1].strip().startswith('#'): i -= 1
        cuts.append(i)
    cuts.append(len(lines))
    pieces = [''.join(lines[a:b]).strip('\n') for a, b in zip(cuts, cuts[1:])]
    return None if any(not p.strip() for p in pieces) else pieces

def split_nb(nb: dict) -> int:
    "Split the multi-definition export cells of `nb` in place; how many cells were split."
    taken = {c.get('id') for c in nb['cells']}
    out, n = [], 0
    for cell in nb['cells']:
        if not is_export(cell): out.append(cell); continue
        directives, code = split_directives(src(cell))
        pieces = split_code(code)
        if not pieces: out.append(cell); continue
        n += 1
        for k, piece in enumerate(pieces):
            part = copy.deepcopy(cell) if k == 0 else {
                'cell_type': 'code', 'execution_count': None, 'id': fresh_id(cell.get('id', ''), k, taken),
                'metadata': copy.deepcopy(cell.get('metadata', {})), 'outputs': [], 'source': []}
            if 'id' not in cell: part.pop('id', None)
            part['source'] = to_lines(''.join(directives) + piece)
            out.append(part)
    nb['cells'] = out
    return n


# --- hide ----------------------------------------------------------------------------------------

def _call_name(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call): return None
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None

def is_raises(item: ast.withitem) -> bool: return _call_name(item.context_expr) == 'raises'

def is_check(node: ast.stmt) -> bool:
    "Whether top-level statement `node` only checks something."
    if isinstance(node, ast.Assert): return True
    if isinstance(node, ast.Expr) and TEST_CALLS.match(_call_name(node.value) or ''): return True
    if isinstance(node, ast.With) and node.items and all(is_raises(i) for i in node.items): return True
    return False

def check_only(cell: dict) -> bool:
    "A non-export code cell, not hidden yet, with no output, whose every statement is a check."
    if cell['cell_type'] != 'code' or is_export(cell) or is_hidden(cell) or cell.get('outputs'): return False
    tree = parse(split_directives(src(cell))[1])
    return bool(tree and tree.body) and all(is_check(n) for n in tree.body)

def hide_nb(nb: dict) -> int:
    n = 0
    for cell in nb['cells']:
        if check_only(cell):
            cell['source'] = to_lines('#| hide\n' + src(cell)); n += 1
    return n


# --- idiom ---------------------------------------------------------------------------------------
# The one test idiom of the notebooks (see the module docstring): a check is `assert`, an expected
# error is `test_fail(lambda: ..., contains='...')`. `idiom_cell` rewrites the other forms where the
# rewrite is the same test; `verify_nb` runs the notebook to find the `test_eq` calls for which `==`
# is the same test as fastcore's `equals` on the values the notebook compares.

SCALAR_CALLS = {'len', 'str', 'int', 'float', 'bool', 'repr', 'type', 'isinstance', 'round', 'hash',
                'dict', 'set', 'frozenset'}
LOW_PRECEDENCE = (ast.BoolOp, ast.Compare, ast.Lambda, ast.IfExp, ast.NamedExpr, ast.Await, ast.Yield)
ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Dict, ast.Set,
         ast.ListComp, ast.DictComp, ast.SetComp, ast.JoinedStr)
FORBIDDEN_CALLS = re.compile(r'^test_(?!fail$)\w+$')    # every fastcore `test_*` but `test_fail`
REGEX_META = set('.^$*+?{}[]\\|()')
PROBED = ('test_eq', 'test_ne', 'test_close')

def eq_safe(node: ast.expr) -> bool:
    "Whether fastcore's `equals(x, node)` is `x == node` whatever `x` is (it is for str, dict, set, scalars)."
    if isinstance(node, ast.Constant): return not isinstance(node.value, bytes)   # bytes: element-wise
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant): return True
    if isinstance(node, (ast.JoinedStr, ast.Dict, ast.Set, ast.DictComp, ast.SetComp)): return True
    return _call_name(node) in SCALAR_CALLS and isinstance(node.func, ast.Name)

def _seg(code: str, node: ast.AST) -> str | None: return ast.get_source_segment(code, node)

def operand(code: str, node: ast.expr, atoms=None) -> str | None:
    "Source of `node`, in parentheses where it binds looser than a comparison (or is not in `atoms`)."
    seg = _seg(code, node)
    if seg is None: return None
    loose = not isinstance(node, atoms) if atoms else isinstance(node, LOW_PRECEDENCE)
    return f'({seg})' if loose or ('\n' in seg and not isinstance(node, ATOMS)) else seg

def _has_await(node: ast.AST) -> bool: return any(isinstance(n, ast.Await) for n in ast.walk(node))

def _is_name(node, *names) -> bool: return isinstance(node, ast.Name) and node.id in names

def fastcore_check(node: ast.stmt) -> str | None:
    "The name of the fastcore `test_*` that statement `node` calls (`test_eq(a, b)`), or None."
    if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call): return None
    f = node.value.func
    return f.id if isinstance(f, ast.Name) and FORBIDDEN_CALLS.match(f.id) else None

def _expect(tree_node: ast.AST) -> str: return ast.dump(tree_node)

def rewrite_check(code: str, node: ast.stmt, verified: set = frozenset()) -> tuple[str, ast.AST] | None:
    """The statement that replaces check `node` of `code` (and the AST it must parse to), or None where
    the rewrite is not known to be the same test. `verified` holds the `(line, col)` of the calls that
    `verify_nb` found to compare the same with `==` as with fastcore's `equals` (or to compare numbers,
    for `test_close`)."""
    name = fastcore_check(node)
    if name in ('test_eq', 'test_ne', 'test_is'):
        call = node.value
        if call.keywords or len(call.args) != 2 or any(isinstance(a, ast.Starred) for a in call.args): return None
        a, b = call.args
        sa, sb = operand(code, a), operand(code, b)
        if sa is None or sb is None: return None
        if name == 'test_is': op, neg = ast.Is(), 'is'
        elif _is_name(b, 'None') or isinstance(b, ast.Constant) and b.value is None:
            op, neg = (ast.IsNot(), 'is not') if name == 'test_ne' else (ast.Is(), 'is')
        elif isinstance(a, ast.Constant) and a.value is None:
            a, b, sa, sb = b, a, sb, sa
            op, neg = (ast.IsNot(), 'is not') if name == 'test_ne' else (ast.Is(), 'is')
        elif eq_safe(a) or eq_safe(b) or (node.lineno, node.col_offset) in verified:
            op, neg = (ast.NotEq(), '!=') if name == 'test_ne' else (ast.Eq(), '==')
        else: return None
        want = ast.Assert(test=ast.Compare(left=a, ops=[op], comparators=[b]))
        if node.lineno == node.end_lineno: return f'assert {sa} {neg} {sb}', want
        # over several lines: `assert (` is as wide as `test_eq(`, so the layout and columns stay
        lines = to_lines(code)
        head = code[_offset(lines, call.func.end_lineno, call.func.end_col_offset) + 1:_span(lines, a)[0]]
        gap = re.fullmatch(r'[ \t]*,(\s*)', code_between(code, a, b))
        tail = re.fullmatch(r'(\s*?),?(\s*)\)', code[_span(lines, b)[1]:_span(lines, node)[1]])
        if head.strip() or gap is None or tail is None: return None
        brk = gap.group(1) if '\n' in gap.group(1) else ' '
        return f'assert ({head}{sa} {neg}{brk}{sb}{tail.group(1)}{tail.group(2)})', want
    if name == 'test_close' and (node.lineno, node.col_offset) in verified:
        call = node.value
        args = list(call.args) + [k.value for k in call.keywords if k.arg == 'eps']
        if len(args) not in (2, 3) or any(k.arg != 'eps' for k in call.keywords): return None
        a, b = args[:2]
        eps = args[2] if len(args) == 3 else ast.Constant(1e-5)
        sa = operand(code, a, (*ATOMS, ast.BinOp, ast.UnaryOp))
        sb = operand(code, b, ATOMS)
        se = '1e-5' if len(args) == 2 else operand(code, eps, ATOMS)
        if None in (sa, sb, se): return None
        if isinstance(a, ast.BinOp) and not isinstance(a.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
                                                              ast.Mod, ast.Pow)): sa = f'({sa})'
        want = ast.Assert(test=ast.Compare(
            left=ast.Call(func=ast.Name('abs', ast.Load()), args=[ast.BinOp(a, ast.Sub(), b)], keywords=[]),
            ops=[ast.Lt()], comparators=[eps]))
        if node.lineno != node.end_lineno: return f'assert (abs({sa} - {sb}) < {se})', want
        return f'assert abs({sa} - {sb}) < {se}', want
    return None

def code_between(code: str, a: ast.AST, b: ast.AST) -> str:
    "The source between the end of node `a` and the start of node `b`."
    lines = to_lines(code)
    return code[_offset(lines, a.end_lineno, a.end_col_offset):_offset(lines, b.lineno, b.col_offset)]

def _fail_call(code: str, expr: ast.expr, exc: ast.expr | None, contains: ast.expr | None):
    "`test_fail(lambda: expr, exc=..., contains=...)` and its AST."
    se = _seg(code, expr)
    if se is None or _has_await(expr): return None
    parts = [f'lambda: {se}']
    kws = []
    if exc is not None:
        sx = _seg(code, exc)
        if sx is None: return None
        if isinstance(exc, ast.Tuple) and not sx.startswith('('): sx = f'({sx})'
        parts.append(f'exc={sx}'); kws.append(ast.keyword('exc', exc))
    if contains is not None:
        parts.append(f'contains={_seg(code, contains)}'); kws.append(ast.keyword('contains', contains))
    lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                     body=expr)
    want = ast.Expr(ast.Call(func=ast.Name('test_fail', ast.Load()), args=[lam], keywords=kws))
    return f'test_fail({", ".join(parts)})', want

def _literal(node) -> bool:
    "A string constant that a regex search finds as it is (no metacharacters)."
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and not REGEX_META & set(node.value)

def is_raises_check(node: ast.stmt) -> bool:
    return isinstance(node, ast.With) and any(is_raises(i) for i in node.items)

def rewrite_raises(code: str, node: ast.stmt):
    "`with pytest.raises(E, match='m'): f(x)` as `test_fail(lambda: f(x), exc=E, contains='m')`, or None."
    if not is_raises_check(node) or len(node.items) != 1 or node.items[0].optional_vars is not None: return None
    call = node.items[0].context_expr
    if len(node.body) != 1 or not isinstance(node.body[0], ast.Expr) or len(call.args) != 1: return None
    if any(k.arg != 'match' for k in call.keywords): return None
    match = next((k.value for k in call.keywords), None)
    if match is not None and not _literal(match): return None
    return _fail_call(code, node.body[0].value, call.args[0], match)

def is_try_check(node: ast.stmt) -> bool:
    """A try/except written as a check: its body raises AssertionError (the call was expected to fail),
    its `else` does, or a handler asserts."""
    if not isinstance(node, ast.Try): return False
    raises = lambda body: any(isinstance(s, ast.Raise) and s.exc is not None and
                              'AssertionError' in ast.dump(s.exc) for s in body)
    return (raises(node.body) or raises(node.orelse)
            or any(isinstance(s, ast.Assert) for h in node.handlers for s in h.body))

def rewrite_try(code: str, node: ast.stmt):
    """`try: f(x); raise AssertionError(...)` / `except E as e: assert 'm' in str(e)` (or `pass`) as
    `test_fail(lambda: f(x), exc=E, contains='m')`, or None where the form differs."""
    if not isinstance(node, ast.Try) or node.orelse or node.finalbody or len(node.handlers) != 1: return None
    if len(node.body) != 2 or not isinstance(node.body[0], ast.Expr) or not is_try_check(node): return None
    h = node.handlers[0]
    if h.type is None or len(h.body) != 1: return None
    s = h.body[0]
    if isinstance(s, ast.Pass): return _fail_call(code, node.body[0].value, h.type, None)
    if (isinstance(s, ast.Assert) and isinstance(s.test, ast.Compare) and len(s.test.ops) == 1
            and isinstance(s.test.ops[0], ast.In) and isinstance(s.test.left, ast.Constant)
            and isinstance(s.test.left.value, str) and h.name and len(s.test.comparators) == 1):
        c = s.test.comparators[0]
        if _call_name(c) == 'str' and len(c.args) == 1 and _is_name(c.args[0], h.name):
            return _fail_call(code, node.body[0].value, h.type, s.test.left)
    return None

def _offset(lines: list[str], lineno: int, col: int) -> int:
    "Character offset in the joined `lines` of 1-based `lineno` and UTF-8 byte column `col`."
    return sum(len(l) for l in lines[:lineno - 1]) + len(lines[lineno - 1].encode()[:col].decode())

def _span(lines, node) -> tuple[int, int]:
    return _offset(lines, node.lineno, node.col_offset), _offset(lines, node.end_lineno, node.end_col_offset)

def idiom_cell(code: str, verified: set = frozenset(), limit: int = LONG) -> tuple[str, list[str]]:
    """`code` with its checks in the one idiom where the rewrite is the same test (see `rewrite_check`,
    `rewrite_raises`, `rewrite_try`); and the checks left in another form."""
    tree = parse(code)
    if tree is None: return code, []
    lines, left, edits = to_lines(code), [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt): continue
        if fastcore_check(node): new = rewrite_check(code, node, verified)
        elif is_raises_check(node): new = rewrite_raises(code, node)
        elif is_try_check(node): new = rewrite_try(code, node)
        else: continue
        text = (_seg(code, node) or '').splitlines()[0]
        if new is None: left.append(text); continue
        a, b = _span(lines, node)
        out = code[:a] + new[0] + code[b:]
        t = parse(out)
        got = next((n for n in ast.walk(t) if isinstance(n, ast.stmt) and (n.lineno, n.col_offset) ==
                    (node.lineno, node.col_offset)), None) if t else None
        if got is None or ast.dump(got) != ast.dump(new[1]):
            left.append(text + '  <rewrite not the same code>'); continue
        width = max(len(l) for l in (code[:a].rsplit('\n', 1)[-1] + new[0] + code[b:].split('\n', 1)[0]).split('\n'))
        if width > limit: left.append(text + f'  <rewrite over {limit} characters>'); continue
        edits.append((a, b, new[0]))
    edits.sort(reverse=True)
    if any(e0[0] < e1[1] for e0, e1 in zip(edits, edits[1:])): return code, left + ['<overlapping rewrites>']
    for a, b, new in edits: code = code[:a] + new + code[b:]
    return code, left

def forbidden_checks(code: str) -> list[str]:
    "The checks of non-export cell `code` not in the idiom; a try/except around an `await` is allowed."
    tree = parse(code)
    if tree is None: return []
    out = []
    for n in ast.walk(tree):
        if (fastcore_check(n) or is_raises_check(n) or isinstance(n, ast.Call) and FORBIDDEN_CALLS.match(
                _call_name(n) or '') and isinstance(n.func, ast.Name)
                or is_try_check(n) and not _has_await(ast.Module(body=n.body, type_ignores=[]))):
            out.append(f'{n.lineno}: {(_seg(code, n) or "").splitlines()[0][:70]}')
    return sorted(set(out), key=lambda s: int(s.split(':')[0]))

def code_cells(nb: dict):
    "(cell, directives, code) of the non-export code cells of `nb`."
    for cell in nb['cells']:
        if cell['cell_type'] == 'code' and not is_export(cell):
            d, code = split_directives(src(cell))
            yield cell, d, code

def fix_imports(nb: dict) -> list[str]:
    """Imports of the non-export cells after a rewrite: fastcore `test_*` names and `pytest` no longer
    used are dropped, `test_fail` is imported where it is used and was not. The imports left to do by hand."""
    used = set()
    for c in nb['cells']:
        if c['cell_type'] != 'code': continue
        t = parse(split_directives(src(c))[1])
        if t: used |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        if t: used |= {n.value.id for n in ast.walk(t) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    need_fail, have_fail, left = 'test_fail' in used, False, []
    for cell, d, code in code_cells(nb):
        t = parse(code)
        if t is None: continue
        lines, edits = to_lines(code), []
        for n in t.body:
            if isinstance(n, ast.ImportFrom) and n.module == 'fastcore.test':
                names = [a for a in n.names if a.name == '*' or not a.name.startswith('test_') or a.name in used]
                have_fail |= any(a.name in ('*', 'test_fail') for a in names)
                if len(names) == len(n.names): continue
                new = ('from fastcore.test import ' + ', '.join(
                    a.name + (f' as {a.asname}' if a.asname else '') for a in names)) if names else ''
                edits.append((n, new))
            elif isinstance(n, ast.Import) and any(a.name == 'pytest' for a in n.names) and 'pytest' not in used:
                names = [a for a in n.names if a.name != 'pytest']
                new = 'import ' + ', '.join(a.name + (f' as {a.asname}' if a.asname else '') for a in names) if names else ''
                if need_fail and not have_fail:             # the import pytest had: test_fail's
                    new = 'from fastcore.test import test_fail' + ('\n' + new if new else '')
                    have_fail = True
                edits.append((n, new))
        if not edits: continue
        for n, new in sorted(edits, key=lambda e: -e[0].lineno):
            if n.lineno != n.end_lineno: left.append(_seg(code, n)); continue
            a, b = _span(lines, n)
            if not new and lines[n.lineno - 1].strip() == _seg(code, n): a, b = _offset(lines, n.lineno, 0), \
                _offset(lines, n.lineno, 0) + len(lines[n.lineno - 1])
            code = code[:a] + new + code[b:]
            lines = to_lines(code)
        cell['source'] = to_lines(''.join(d) + code)
    if need_fail and not have_fail:
        first = next(((c, d, code) for c, d, code in code_cells(nb) if 'test_fail' in code), None)
        cand = next(((c, d, code) for c, d, code in code_cells(nb)
                     if re.search(r'^(from \S+ )?import ', code, re.M)), first)
        if cand is not None and nb['cells'].index(cand[0]) <= nb['cells'].index(first[0]): first = cand
        c, d, code = first
        c['source'] = to_lines(''.join(d) + 'from fastcore.test import test_fail\n' + code)
    return left

def idiom_nb(nb: dict, verified: dict | None = None, limit: int = LONG) -> tuple[int, list[str]]:
    """Rewrite the checks of `nb`'s non-export cells in the one idiom (`verified`: per cell id, the
    call sites `verify_nb` found safe); statements rewritten and the checks left."""
    n, left = 0, []
    for cell, directives, code in list(code_cells(nb)):
        new, l = idiom_cell(code, (verified or {}).get(cell.get('id'), set()), limit)
        left += [f'{cell.get("id")}: {t}' for t in l]
        if new != code:
            n += len(forbidden_checks(code)) - len(forbidden_checks(new))
            cell['source'] = to_lines(''.join(directives) + new)
    if n: left += [f'import left: {t}' for t in fix_imports(nb)]
    return n, left

def _probe(results: dict):
    "The function the instrumented notebook calls in place of `test_eq`/`test_ne`/`test_close`."
    import numbers
    from fastcore.imports import equals
    import fastcore.test as ft
    def probe(key, kind, *args, **kw):
        try:
            a, b = args[:2]
            if kind == 'test_eq': r = a == b; ok = type(r) is bool and r == bool(equals(a, b))
            elif kind == 'test_ne': r = a != b; ok = type(r) is bool and r == (not equals(a, b))
            else: ok = all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in (a, b))
        except Exception: ok = False
        results.setdefault(key, []).append(ok)
        return getattr(ft, kind)(*args, **kw)
    return probe

def instrument(code: str, cell_id: str) -> str:
    "`code` with each `test_eq`/`test_ne`/`test_close` statement calling `_idiom_probe('id:line:col', name, ...)`."
    tree = parse(code)
    if tree is None: return code
    lines, edits = to_lines(code), []
    for node in ast.walk(tree):
        if fastcore_check(node) in PROBED:
            f = node.value.func
            a, b = _span(lines, f)
            if code[b:b + 1] != '(': continue
            edits.append((a, b + 1, f"_idiom_probe('{cell_id}:{node.lineno}:{node.col_offset}', '{f.id}', "))
    for a, b, new in sorted(edits, reverse=True): code = code[:a] + new + code[b:]
    return code

def verify_nb(path: Path) -> dict[str, set]:
    """Run a copy of notebook `path` (as tests/test_notebooks.py runs it) with its `test_eq`, `test_ne`
    and `test_close` calls recorded: per cell id, the `(line, col)` of the calls where, at every call,
    `a == b` (`a != b`) was a bool that agreed with fastcore's `equals`, or for `test_close` both values
    were real numbers. A call never made (a skipped cell, a branch not taken) is not among them."""
    import builtins
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import execute_notebooks as ex
    nb = read_nb(path)
    for cell, d, code in code_cells(nb):
        cell['source'] = to_lines(''.join(d) + instrument(code, cell.get('id')))
    tmp = Path(path).with_name(f'_idiom_{Path(path).name}')
    results: dict = {}
    tmp.write_text(dump_nb(nb), encoding='utf-8')
    builtins._idiom_probe = _probe(results)
    try: ex.execute(tmp)
    finally:
        tmp.unlink()
        del builtins._idiom_probe
    out: dict[str, set] = {}
    for key, oks in results.items():
        cid, line, col = key.rsplit(':', 2)
        if oks and all(oks): out.setdefault(cid, set()).add((int(line), int(col)))
    return out


# --- wrap ----------------------------------------------------------------------------------------

RUFF_OPTS = ['--isolated', '--config', "format.quote-style='preserve'", '--config', 'format.docstring-code-format=false']

def ruff_range(code: str, line: int, limit: int) -> str | None:
    "`code` with the statement(s) on 1-based `line` formatted by `ruff format` within `limit`; None if ruff fails."
    ruff = shutil.which('ruff')
    if ruff is None: raise SystemExit('cell_style.py wrap needs ruff on the PATH (pip install ruff)')
    n = len(to_lines(code)[line - 1].rstrip('\n'))
    r = subprocess.run([ruff, 'format', *RUFF_OPTS, '--line-length', str(limit), '--range', f'{line}:1-{line}:{n + 1}',
                        '--stdin-filename', 'cell.py', '-'], input=code, capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None

def wrap_import(code: str, node: ast.ImportFrom, limit: int) -> str | None:
    "`code` with import `node` rewritten as `from m import (a, b,` + aligned continuation lines; None if it has comments."
    lines = to_lines(code)
    seg = ''.join(lines[node.lineno - 1:node.end_lineno])
    if '#' in seg or node.col_offset: return None
    head = f'from {"." * node.level}{node.module or ""} import ('
    names = [a.name + (f' as {a.asname}' if a.asname else '') for a in node.names]
    out, cur = [], head
    for k, nm in enumerate(names):
        piece = nm + (', ' if k < len(names) - 1 else ')')
        if cur.strip() != head.strip() and cur != ' ' * len(head) and len(cur) + len(piece.rstrip()) > limit:
            out.append(cur.rstrip()); cur = ' ' * len(head)
        cur += piece
    out.append(cur)
    end = '\n' if seg.endswith('\n') else ''
    return ''.join(lines[:node.lineno - 1]) + '\n'.join(out) + end + ''.join(lines[node.end_lineno:])

def wrap_code(code: str, limit: int = LONG, docs: bool = True) -> tuple[str, list[str]]:
    """`code` with every statement that has a line over `limit` reformatted by ruff (quotes kept) or, where
    ruff cannot, shortened by `line_breaks`; and the lines left too long. A change that alters the code's AST
    (ruff normalises docstrings) or, with `docs`, the comments nbdev reads as parameter docs is not taken."""
    tree = parse(code)
    if tree is None: return code, [l.rstrip('\n') for l in to_lines(code) if len(l.rstrip('\n')) > limit]
    want, want_docs, stuck = ast.dump(tree), doc_comments(code), set()
    n_long = lambda c: sum(len(l.rstrip('\n')) > limit for l in to_lines(c))
    def same(new: str | None) -> bool:
        "Whether `new` is the same code as `code` with fewer long lines."
        if new is None or new == code: return False
        t = parse(new)
        return (t is not None and ast.dump(t) == want and n_long(new) < n_long(code)
                and (not docs or doc_comments(new) == want_docs))   # nbdev's parameter docs: the same words
    for _ in range(500):
        lines = to_lines(code)
        todo = [i for i, l in enumerate(lines) if len(l.rstrip('\n')) > limit and l not in stuck]
        if not todo: break
        i = todo[0]
        stmt = next((n for n in ast.walk(parse(code)) if isinstance(n, ast.stmt) and n.lineno <= i + 1 <= n.end_lineno
                     and not hasattr(n, 'body')), None)
        if isinstance(stmt, ast.ImportFrom):                   # nbdev makes `from envsynth.x import (a,` relative
            new = wrap_import(code, stmt, limit)               # only with a name on the first line
        else: new = ruff_range(code if code.endswith('\n') else code + '\n', i + 1, limit)
        if new is not None and not code.endswith('\n'): new = new.rstrip('\n')
        if same(new): code = new; continue
        new = next((n for n in line_breaks(code, i, limit) if same(n)), None)   # ruff cannot: cut a string ...
        if new is not None: code = new
        else: stuck.add(lines[i])
    return code, [l.rstrip('\n') for l in to_lines(code) if len(l.rstrip('\n')) > limit]

def wrap_nb(nb: dict, limit: int = LONG) -> tuple[int, list[str]]:
    "Reformat the code cells of `nb` that have lines over `limit`; cells changed and lines left."
    n, left = 0, []
    for cell in nb['cells']:
        if cell['cell_type'] != 'code' or all(len(l.rstrip('\n')) <= limit for l in to_lines(src(cell))): continue
        directives, code = split_directives(src(cell))
        new, l = wrap_code(code, limit, docs=is_export(cell))  # parameter docs: of exported code only
        left += [f'{cell.get("id")}: {len(x)}: {x.strip()[:70]}' for x in l]
        if new != code: cell['source'] = to_lines(''.join(directives) + new); n += 1
    return n, left


# --- strings and comments ------------------------------------------------------------------------
# Adjacent string literals are one literal to the parser ("ab" "c" is the Constant "abc", f'{a} ' f'b' one
# JoinedStr), so a long literal cut into adjacent pieces in brackets is the same code: the same AST, the
# same docstring. A piece ends after a space (or a `\n` escape) where it can, never inside an escape or
# an f-string field. Comments are cut into comment lines. What would change the AST is not taken.

STR_RE = re.compile(r'([A-Za-z]*)("""|\'\'\'|"|\')')
ESCAPE_RE = re.compile(r'\\(N\{[^}]*\}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)', re.S)
PRAGMA_RE = re.compile(r'#\s*(\||%%|noqa|type:|pragma|fmt:|ruff:|pyright:|mypy:)')

def str_units(body: str, raw: bool, fmt: bool) -> list[tuple[str, bool]] | None:
    """The body of a string literal as units a piece may end after: `(text, good)`, good where a break after
    it reads well (a space, a `\\n` escape). None where it cannot be cut (a field not closed)."""
    units, i = [], 0
    while i < len(body):
        c = body[i]
        if c == '\\':
            m = ESCAPE_RE.match(body, i)
            if m is None: return None
            t = body[i:i + 2] if raw else m.group(0)             # raw: a backslash keeps the next character
            units.append((t, t == '\\n' and not raw)); i += len(t); continue
        if fmt and body.startswith(('{{', '}}'), i): units.append((body[i:i + 2], False)); i += 2; continue
        if fmt and c == '{':                                   # a replacement field is one unit
            depth, j, q = 0, i, None
            while j < len(body):
                d = body[j]
                if q: q = None if d == q else q
                elif d in '\'"': q = d
                elif d in '{[(': depth += 1
                elif d in '}])':
                    depth -= 1
                    if depth == 0: break
                j += 1
            if j >= len(body): return None
            units.append((body[i:j + 1], False)); i = j + 1; continue
        units.append((c, c == ' ')); i += 1
    return units

def pack(units: list[tuple[str, bool]], widths: list[int], hard: bool = True) -> list[str] | None:
    """`units` packed into pieces, piece k at most `widths[min(k, len(widths) - 1)]` long: each ends at the last
    good break that fits (if that leaves it at least a third full), else, if `hard`, at the last unit that fits."""
    pieces, start, n = [], 0, len(units)
    while start < n:
        w = widths[min(len(pieces), len(widths) - 1)]
        total, end, good = 0, start, None
        while end < n and total + len(units[end][0]) <= w:
            total += len(units[end][0]); end += 1
            if units[end - 1][1]: good, good_len = end, total
        if end == n: pieces.append(units[start:]); break
        if end == start: return None                           # one unit (a field) wider than the line
        if not good and not hard: return None
        cut = good if good and (good_len * 3 >= w or not hard) else end
        pieces.append(units[start:cut]); start = cut
    return [''.join(t for t, _ in p) for p in pieces]

def string_tokens(code: str) -> list[tuple[tokenize.TokenInfo, int]]:
    "The string tokens of `code`, each with the depth of brackets it is in."
    out, depth = [], 0
    for t in tokenize.generate_tokens(io.StringIO(code).readline):
        if t.type == tokenize.OP and t.string in '([{': depth += 1
        elif t.type == tokenize.OP and t.string in ')]}': depth -= 1
        elif t.type == tokenize.STRING: out.append((t, depth))
    return out

def break_string(code: str, tok: tokenize.TokenInfo, depth: int, limit: int = LONG) -> str | None:
    """`code` with the one-line string literal `tok` cut into adjacent literals on lines that fit in `limit`,
    in parentheses unless it is in brackets already; None if it cannot be. A literal that ends before `limit`
    is cut only if it is long (40 characters) and only at spaces: it is not what makes the line long."""
    (row, c0), (row1, c1) = tok.start, tok.end
    m = STR_RE.match(tok.string)
    if row != row1 or m is None: return None
    crosses = c1 > limit
    if not crosses and len(tok.string) < 40: return None
    prefix, q = m.groups()
    body = tok.string[len(prefix) + len(q):len(tok.string) - len(q)]
    units = str_units(body, 'r' in prefix.lower(), 'f' in prefix.lower())
    if not units: return None
    lines = to_lines(code)
    line = lines[row - 1]
    eol = '\n' if line.endswith('\n') else ''
    head, tail = line[:c0] + ('' if depth else '('), line[c1:].rstrip('\n')
    close = '' if depth else ')'
    extra = len(prefix) + 2 * len(q)
    indent = len(head)
    if limit - indent - extra < 40:                            # far to the right: start on a line of its own
        indent = len(line) - len(line.lstrip(' ')) + 4
        head = head.rstrip() + '\n' + ' ' * indent
    w, tail_w = limit - indent - extra, len(close + tail)
    if w < 20: return None
    units[-1] = (units[-1][0] + '\0' * tail_w, units[-1][1])    # what follows the literal stays on its last line
    pieces = pack(units, [w], hard=crosses)
    if pieces is None or len(pieces) < 2: return None
    pieces[-1] = pieces[-1][:len(pieces[-1]) - tail_w]
    new = head + ('\n' + ' ' * indent).join(prefix + q + p + q for p in pieces) + close + tail + eol
    return ''.join(lines[:row - 1]) + new + ''.join(lines[row:])

def doc_comments(code: str) -> dict[tuple[str, str], str] | None:
    """The comments nbdev shows as the documentation of parameters (fastcore's `docments`): for each parameter of
    a def (and `return`) and each annotated field of a class, the comment on its line, else the comment lines
    right above it inside the definition, words only, by (definition, parameter); like `docments`, which reads
    the definition's own source, one parameter per line (the last).
    None where `code` does not parse."""
    tree = parse(code)
    if tree is None: return None
    try: comments = {t.start[0]: t.string for t in tokenize.generate_tokens(io.StringIO(code).readline)
                     if t.type == tokenize.COMMENT}
    except (tokenize.TokenError, SyntaxError): return None
    out = {}
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = n.args
            parms = {x.lineno: x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
            if n.returns: parms[n.returns.lineno] = 'return'
        elif isinstance(n, ast.ClassDef):
            parms = {x.lineno: x.target.id for x in n.body if isinstance(x, ast.AnnAssign) and isinstance(x.target, ast.Name)}
        else: continue
        for line, name in parms.items():
            found = [comments[line]] if line in comments else []
            if not found:
                k, above = line - 1, []
                while k > n.lineno and k in comments and k not in parms: above.append(comments[k]); k -= 1
                found = above[::-1]
            text = ' '.join(' '.join(found).replace('#', ' ').split())
            if text: out[(n.name, name)] = text
    return out

def break_comment(code: str, tok: tokenize.TokenInfo, limit: int = LONG) -> str | None:
    "`code` with comment `tok` cut into comment lines that fit in `limit`, at spaces; None if it cannot be."
    row, c0 = tok.start
    if PRAGMA_RE.match(tok.string): return None
    text = tok.string[1:].strip()
    lines = to_lines(code)
    line = lines[row - 1]
    before = line[:c0]
    col = c0 if len(before.strip()) == 0 or limit - c0 >= 40 else len(line) - len(line.lstrip(' '))
    first_w, w = limit - c0 - 2, limit - col - 2
    if min(first_w, w) < 20: return None
    first = textwrap.wrap(text, first_w, break_long_words=False, break_on_hyphens=False)
    if not first: return None
    rest = textwrap.wrap(text[len(first[0]):].strip(), w, break_long_words=False, break_on_hyphens=False)
    nxt = lines[row] if row < len(lines) else ''
    if (not before.strip() and nxt.startswith(before + '# ') and nxt[len(before) + 2:][:1].isalnum()
            and not PRAGMA_RE.match(nxt.strip())):             # a paragraph of comment lines: the rest joins the next
        lines[row] = before + '# ' + ' '.join(rest) + ' ' + nxt[len(before) + 2:]
        rest = []
    out = [before + '# ' + first[0]] + [' ' * col + '# ' + r for r in rest]
    if len(out) < 2 and row >= len(lines) or any(len(o) > limit for o in out): return None
    new = ''.join(lines[:row - 1]) + '\n'.join(out) + ('\n' if line.endswith('\n') else '') + ''.join(lines[row:])
    if len(out) == 1 and len(lines[row].rstrip('\n')) > limit:    # the next line got too long in turn: cut it
        nxt_tok = next((t for t in tokenize.generate_tokens(io.StringIO(new).readline)
                        if t.type == tokenize.COMMENT and t.start[0] == row + 1), None)
        return break_comment(new, nxt_tok, limit) if nxt_tok else None
    return new

def line_breaks(code: str, i: int, limit: int = LONG):
    """Ways to shorten 0-based line `i` of `code`, best first: cut the string literal that crosses `limit` (else the
    longest one-line literal on it); narrow the padding before its comment; cut the comment into comment lines;
    move it above the line (where nbdev reads a parameter's doc from either place); cut the line after a comma."""
    if parse(code) is None: return
    try:
        strs = [(t, d) for t, d in string_tokens(code) if t.start[0] == t.end[0] == i + 1]
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError): return
    strs.sort(key=lambda td: (not (td[0].start[1] < limit < td[0].end[1]), -len(td[0].string)))
    for t, d in strs:
        new = break_string(code, t, d, limit)
        if new is not None: yield new
    lines = to_lines(code)
    line, over = lines[i], len(lines[i].rstrip('\n')) - limit
    com = next((t for t in toks if t.type == tokenize.COMMENT and t.start[0] == i + 1), None)
    if com:
        pad = re.search(r' {3,}#$', line[:com.start[1] + 1])          # an aligned comment: less padding
        if pad and pad.end() - pad.start() - 3 >= over:
            yield ''.join(lines[:i]) + line[:pad.start()] + ' ' * (pad.end() - pad.start() - 1 - over) + \
                line[com.start[1]:] + ''.join(lines[i + 1:])
        if com.end[1] > limit and (new := break_comment(code, com, limit)) is not None: yield new
        code_part = line[:com.start[1]].rstrip()
        if code_part.strip():                                        # a trailing comment: above the line instead
            ind = len(line) - len(line.lstrip(' '))
            text = textwrap.wrap(com.string[1:].strip(), limit - ind - 2, break_long_words=False, break_on_hyphens=False)
            gap = '\n' if i and lines[i - 1].strip().startswith('#') else ''   # not one block with the comment above
            if text and len(code_part) <= limit:
                yield (''.join(lines[:i]) + gap + ''.join(' ' * ind + '# ' + t + '\n' for t in text) + code_part
                       + ('\n' if line.endswith('\n') else '') + ''.join(lines[i + 1:]))
    new = break_at_comma(code, toks, i, limit)
    if new is not None: yield new

def break_line(code: str, i: int, limit: int = LONG) -> str | None:
    "The first of `line_breaks(code, i, limit)`, or None."
    return next(line_breaks(code, i, limit), None)

def break_at_comma(code: str, toks: list[tokenize.TokenInfo], i: int, limit: int = LONG) -> str | None:
    """`code` with 0-based line `i` cut after its last comma in brackets that leaves the line within `limit`,
    the rest aligned after the bracket (or indented 4 more than the bracket's line); None if there is none."""
    lines, stack, best = to_lines(code), [], None
    for k, t in enumerate(toks):
        if t.type == tokenize.OP and t.string in '([{': stack.append(t.start)
        elif t.type == tokenize.OP and t.string in ')]}': stack and stack.pop()
        elif (t.type == tokenize.OP and t.string == ',' and stack and t.start[0] == i + 1 and t.end[1] <= limit
              and k + 1 < len(toks) and toks[k + 1].start[0] == i + 1
              and toks[k + 1].type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)):
            (brow, bcol), nxt = stack[-1], toks[k + 1]
            col = bcol + 1
            if col > limit - 40:
                bline = lines[brow - 1]
                col = len(bline) - len(bline.lstrip(' ')) + 4
            best = (t.end[1], nxt.start[1], col)
    if best is None: return None
    end, start, col = best
    line = lines[i]
    lines[i] = line[:end] + '\n' + ' ' * col + line[start:]
    return ''.join(lines)


# --- docwrap -------------------------------------------------------------------------------------
# A line inside a triple-quoted docstring cannot be cut without changing the string. `docwrap` cuts
# it anyway, at a space, into lines indented as the docstring's: `__doc__` changes (a space becomes a
# newline and the indentation `inspect.cleandoc` removes) but not the words, so its Markdown renders
# the same paragraph. A cut is not made where the next word would start a Markdown block (a list
# item, a heading, a quote, a table row, a fence), nor in an indented or fenced block.

MD_BLOCK_RE = re.compile(r'([-*+>#|=<]|\d+[.)](\s|$)|```|~~~)')

def docstring_nodes(tree: ast.Module) -> list[ast.Expr]:
    "The docstring statements of `tree`: the module's, each def's and class's."
    out = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body:
            e = n.body[0]
            if isinstance(e, ast.Expr) and isinstance(e.value, ast.Constant) and isinstance(e.value.value, str):
                out.append(e)
    return out

def words_dump(tree: ast.Module) -> str:
    "`ast.dump` of `tree` with the whitespace of every docstring collapsed to single spaces."
    tree = copy.deepcopy(tree)
    for e in docstring_nodes(tree): e.value.value = ' '.join(e.value.value.split())
    return ast.dump(tree)

def cut_doc_line(line: str, indent: int, limit: int) -> list[str] | None:
    "`line` of a docstring cut at spaces into lines within `limit`, the new ones indented by `indent`; None if it cannot be."
    out = []
    while len(line.rstrip('\n')) > limit:
        cuts = [k for k in range(indent + 20, min(limit, len(line) - 1) + 1)
                if line[k] == ' ' and line[k - 1] not in ' \\' and line[k + 1] not in ' \n'
                and not MD_BLOCK_RE.match(line[k + 1:])]
        if not cuts: return None
        k = cuts[-1]
        out.append(line[:k] + '\n'); line = ' ' * indent + line[k + 1:]
    return out + [line]

def docwrap_code(code: str, limit: int = LONG) -> tuple[str, list[str]]:
    """`code` with the lines over `limit` inside its multi-line docstrings cut at spaces; the docstrings' words
    stay the same (checked), the rest of the AST too. Returns the code and the long lines left in docstrings."""
    tree = parse(code)
    if tree is None: return code, []
    lines, want, left = to_lines(code), words_dump(tree), []
    for e in sorted(docstring_nodes(tree), key=lambda e: -e.lineno):     # bottom up: line numbers stay valid
        a, b = e.lineno - 1, e.end_lineno
        if b - a < 2 or not any(len(l.rstrip('\n')) > limit for l in lines[a:b]): continue
        body = lines[a + 1:b]
        ind = min((len(l) - len(l.lstrip(' ')) for l in body if l.strip()), default=e.col_offset)
        seg, k, fence = lines[a:b], 0, False
        while k < len(seg):
            l = seg[k]
            if l.strip()[:3] in ('```', '~~~'): fence = not fence
            if len(l.rstrip('\n')) <= limit: k += 1; continue
            cut = None if fence or (k and len(l) - len(l.lstrip(' ')) != ind) else cut_doc_line(l, ind, limit)
            if cut is None: left.append(l.rstrip('\n')); k += 1; continue
            nxt = seg[k + 1] if k + 1 < len(seg) else ''
            if (nxt.strip() and len(nxt) - len(nxt.lstrip(' ')) == ind and nxt.strip()[0] not in '\'"'
                    and not MD_BLOCK_RE.match(nxt.strip())):   # a paragraph: the rest flows on into the next line
                seg[k + 1] = ' ' * ind + cut.pop().strip() + ' ' + nxt.lstrip(' ')
            seg[k:k + 1] = cut
            k += len(cut)
        new = seg
        lines[a:b] = new
    out = ''.join(lines)
    t = parse(out)
    if t is None or words_dump(t) != want: return code, [l.rstrip('\n') for l in to_lines(code) if len(l.rstrip('\n')) > limit]
    return out, left

def docwrap_nb(nb: dict, limit: int = LONG) -> tuple[int, list[str]]:
    "Cut the long lines of the multi-line docstrings of `nb`'s code cells; cells changed and lines left."
    n, left = 0, []
    for cell in nb['cells']:
        if cell['cell_type'] != 'code' or all(len(l.rstrip('\n')) <= limit for l in to_lines(src(cell))): continue
        directives, code = split_directives(src(cell))
        new, l = docwrap_code(code, limit)
        left += [f'{cell.get("id")}: {len(x)}: {x.strip()[:70]}' for x in l]
        if new != code: cell['source'] = to_lines(''.join(directives) + new); n += 1
    return n, left


# --- check ---------------------------------------------------------------------------------------

def idioms(code: str) -> dict[str, int]:
    "Check statements of `code` by idiom: assert, test_eq (any fastcore test_*), raises, try/except."
    c = dict(assert_=0, test_fail=0, fastcore=0, raises=0, try_except=0)
    tree = parse(code)
    if tree is None: return c
    for n in ast.walk(tree):
        if isinstance(n, ast.Assert): c['assert_'] += 1
        elif isinstance(n, ast.Call) and _call_name(n) == 'test_fail': c['test_fail'] += 1
        elif isinstance(n, ast.Call) and TEST_CALLS.match(_call_name(n) or '') and _call_name(n) != 'test': c['fastcore'] += 1
        elif isinstance(n, ast.With) and any(is_raises(i) for i in n.items): c['raises'] += 1
        elif is_try_check(n): c['try_except'] += 1
    return c

def stats(nb: dict) -> dict:
    code = [c for c in nb['cells'] if c['cell_type'] == 'code']
    exp = [c for c in code if is_export(c)]
    other = [c for c in code if not is_export(c)]
    s = dict(export=len(exp), multi=sum(n_defs(split_directives(src(c))[1]) > 1 for c in exp),
             other=len(other), hidden=sum(is_hidden(c) for c in other),
             check_only=sum(check_only(c) for c in other),
             lines=sum(len(to_lines(src(c))) for c in code),
             long=sum(len(l.rstrip('\n')) > LONG for c in code for l in to_lines(src(c))))
    for c in other:
        for k, v in idioms(split_directives(src(c))[1]).items(): s[k] = s.get(k, 0) + v
    for k in ('assert_', 'test_fail', 'fastcore', 'raises', 'try_except'): s.setdefault(k, 0)
    return s

def pct(a, b): return f'{100 * a / b:5.1f}%' if b else '    -'

def report(rows: list[tuple[str, dict]]) -> str:
    head = (f'{"notebook":44} {"exp":>4} {">1def":>5} {"%":>6} {"other":>5} {"hid":>4} {"%":>6} '
            f'{"assert":>6} {"t_fail":>6} {"test_*":>6} {"raises":>6} {"try":>4} {">120":>5} {"%":>6}')
    out = [head]
    tot: dict = {}
    for name, s in rows:
        for k, v in s.items(): tot[k] = tot.get(k, 0) + v
        out.append(f'{name[-44:]:44} {s["export"]:4} {s["multi"]:5} {pct(s["multi"], s["export"])} {s["other"]:5} '
                   f'{s["hidden"]:4} {pct(s["hidden"], s["other"])} {s["assert_"]:6} {s["test_fail"]:6} {s["fastcore"]:6} '
                   f'{s["raises"]:6} {s["try_except"]:4} {s["long"]:5} {pct(s["long"], s["lines"])}')
    if tot:
        s = tot
        out.append(f'{"TOTAL":44} {s["export"]:4} {s["multi"]:5} {pct(s["multi"], s["export"])} {s["other"]:5} '
                   f'{s["hidden"]:4} {pct(s["hidden"], s["other"])} {s["assert_"]:6} {s["test_fail"]:6} {s["fastcore"]:6} '
                   f'{s["raises"]:6} {s["try_except"]:4} {s["long"]:5} {pct(s["long"], s["lines"])}')
        out.append(f'check-only cells not yet hidden: {s["check_only"]}')
    return '\n'.join(out)


# --- command line --------------------------------------------------------------------------------

COMMANDS = ('split', 'hide', 'idiom', 'wrap', 'docwrap', 'check')

def notebooks(paths: list[str]) -> list[Path]:
    "The notebooks named or under the folders named, skipping checkpoints and `_`/`.` names."
    found = []
    for p in map(Path, paths):
        cands = [p] if p.is_file() else sorted(p.rglob('*.ipynb'))
        found += [c for c in cands if c.suffix == '.ipynb'
                  and not any(part.startswith(('.', '_')) for part in c.relative_to(p if p.is_dir() else p.parent).parts)]
    return found

def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cmds = []
    while argv and argv[0] in COMMANDS: cmds.append(argv.pop(0))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0], usage='cell_style.py {split,hide,idiom,wrap,check}... PATH...')
    ap.add_argument('paths', nargs='+')
    ap.add_argument('--verify', action='store_true',
                    help='idiom: run each notebook first to find the test_eq calls == can replace')
    args = ap.parse_args(argv)
    if not cmds: ap.error(f'name at least one of {", ".join(COMMANDS)}')
    nbs = notebooks(args.paths)
    rows, changed, left, long_left = [], 0, [], []
    for path in nbs:
        nb = read_nb(path)
        msgs = []
        for cmd in cmds:
            if cmd == 'split': msgs.append(f'split {split_nb(nb)}')
            elif cmd == 'hide': msgs.append(f'hid {hide_nb(nb)}')
            elif cmd == 'idiom':
                verified = {}
                if args.verify:
                    try: verified = verify_nb(path)
                    except Exception as e:                      # the static rewrites only
                        print(f'{path}: verification run failed ({type(e).__name__}: {str(e)[:300]})')
                n, l = idiom_nb(nb, verified, MAX_CORE if 'core' in Path(path).parts else LONG)
                msgs.append(f'rewrote {n}'); left += [f'{path}: {t}' for t in l]
            elif cmd == 'wrap':
                n, l = wrap_nb(nb); msgs.append(f'wrapped {n} cells')
            elif cmd == 'docwrap':
                n, l = docwrap_nb(nb); msgs.append(f'cut docstrings in {n} cells')
        if {'wrap', 'docwrap'} & set(cmds):
            long_left += [f'{path}: {c.get("id")}: {len(x)}: {x.strip()[:70]}' for c in nb['cells']
                          if c['cell_type'] == 'code' for x in (l.rstrip('\n') for l in to_lines(src(c))) if len(x) > LONG]
        if cmds != ['check'] and write_nb(path, nb):
            changed += 1
            print(f'{path}: {", ".join(msgs)}')
        if 'check' in cmds: rows.append((str(path), stats(nb)))
    if rows: print(report(rows))
    if left:
        print(f'\n{len(left)} checks left as they are (rewrite them by hand):')
        print('\n'.join(left))
    if long_left:
        print(f'\n{len(long_left)} lines still over {LONG} characters '
              '(in multi-line strings, in cells with magics, comments in a def header, pragmas):')
        print('\n'.join(long_left))
    if cmds != ['check']: print(f'{changed} of {len(nbs)} notebooks rewritten')
    return 0


if __name__ == '__main__': sys.exit(main())

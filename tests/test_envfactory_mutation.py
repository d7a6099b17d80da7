"""EnvFactory's generated tests are measured by mutation: the mutator's operators and deduplication; on every smoke
environment, each planted fault kind (argument ignored, no write, wrong row, another record returned, code right only
for the test's inputs, a suite of `pass` bodies) is caught by the tests or the gate while the clean environment passes;
declared output fields must be returned; gold write arguments are stated by the user or read from one earlier result,
and a candidate with a write the user did not ask for is never gold."""
import ast, json
from pathlib import Path
import pytest
from envsynth.pipeline import read_records
from test_envfactory_recipe import SMOKE, shared_smoke_run

pytestmark = pytest.mark.timeout(600)

@pytest.fixture(scope='module')
def smoke(tmp_path_factory):
    return shared_smoke_run(tmp_path_factory)

@pytest.fixture(scope='module')
def pool():
    from envsynth.sandbox import SandboxPool
    with SandboxPool(size=1) as p: yield p

LIB = '''
from envsynth.envs import Row, Toolkit, ToolFailure, read_tool, write_tool
class BookRow(Row):
    title: str
    copies: int
class LibraryTools(Toolkit):
    tables = {'books': BookRow}
    @read_tool
    def get_book(self, book_id: str) -> dict:
        """Get one book.

        Args:
            book_id: the id of the book
        """
        row = self.row('books', book_id, 'book')
        return {'book_id': book_id, **row}
    @write_tool('books')
    def lend_book(self, book_id: str, copies: int = 1) -> dict:
        """Lend copies.

        Args:
            book_id: the id of the book
            copies: how many
        """
        row = self.row('books', book_id, 'book')
        if not (row['copies'] < copies): row['copies'] -= copies
        else: raise ToolFailure('not enough copies')
        return {'book_id': book_id, 'copies': self.db['books'][book_id]['copies']}
    @read_tool
    def count_books(self, title: str = '') -> dict:
        """Count books.

        Args:
            title: only books with this title
        """
        if title is not None: return {'count': sum(r['title'] == title for r in self.db['books'].values())}
        return {'count': len(self.db['books'])}
'''

def test_mutator_plants_each_fault_kind_and_drops_equivalent_mutants():
    from envsynth.mutation import enumerate_mutants, mutant_source, REQUIRED
    mutants, counts = enumerate_mutants(LIB, 'LibraryTools')
    ops = {m.op for m in mutants}
    assert set(REQUIRED) <= ops and {'return_const', 'negate_cond', 'cmp_swap', 'off_by_one'} <= ops
    assert counts['generated'] == len(mutants) + counts['equivalent'] + counts['duplicates']
    assert counts['equivalent'] + counts['duplicates'] >= 1        # `not (a < b)` negated is the cmp swap's twin, etc.
    sources = [mutant_source(LIB, 'LibraryTools', m) for m in mutants]
    assert len(set(sources)) == len(sources) and all(s != ast.unparse(ast.parse(LIB)) for s in sources)
    lend = [m for m in mutants if m.tool == 'lend_book']
    assert {m.op for m in lend if m.op == 'write_dropped'} and {m.op for m in lend if m.op == 'wrong_key'}

def _env_parts(folder: Path):
    from envsynth.envfactory.build import UnitTest
    from envsynth.schema import Tool
    code = (folder / 'tools.py').read_text()
    toolkit = next(n.name for n in ast.parse(code).body if isinstance(n, ast.ClassDef) and n.name.endswith('Tools'))
    tests = [UnitTest(**t) for t in json.loads((folder / 'unit_tests.json').read_text())]
    prov = json.loads((folder / 'env.json').read_text())
    tools = {t['function']['name']: Tool.parse(t) for t in prov['provenance']['proposal']['tools']} \
        if 'provenance' in prov else {t['function']['name']: Tool.parse(t) for t in json.loads((folder / 'tools.json').read_text())}
    return code, toolkit, json.loads((folder / 'seed_state.json').read_text()), tools, tests

def _method(tree, toolkit, name):
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == toolkit)
    return next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == name)

def _row_calls(fn):
    return [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == 'row'
            and len(n.args) >= 2 and isinstance(n.args[0], ast.Constant)]

def _another_row(call):
    "self.row(T, key) -> self.row(T, min(k for k in self.db[T] if k != key)): always a row the caller did not name."
    t, key = ast.unparse(call.args[0]), ast.unparse(call.args[1])
    call.args[1] = ast.parse(f'min(k for k in self.db[{t}] if k != {key})').body[0].value

def plant(code: str, toolkit: str, tests, kind: str) -> str:
    "`code` with one fault of `kind` planted by hand (not by the mutator) in the first tool it fits."
    tree = ast.parse(code)
    tools = [t.tool for t in tests]
    by = lambda *prefixes: next(t for t in dict.fromkeys(tools) if t.split('_')[0] in prefixes)
    if kind == 'argument_ignored':                        # create_x stores a fixed value whatever it is given
        fn = _method(tree, toolkit, by('create'))
        args = ast.literal_eval(next(t for t in tests if t.tool == fn.name).code.split('ARGS = ')[1].split('\n')[0])
        p = next(k for k in args if not k.endswith('_id'))
        for d in (n for n in ast.walk(fn) if isinstance(n, ast.Dict)):
            d.values = [ast.Constant(args[p]) if isinstance(v, ast.Name) and v.id == p else v for v in d.values]
    elif kind == 'no_write':                              # create_x builds the row and never stores it
        fn = _method(tree, toolkit, by('create'))
        fn.body = [ast.Pass() if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript) else s for s in fn.body]
    elif kind == 'wrong_row': _another_row(_row_calls(_method(tree, toolkit, by('cancel', 'update')))[0])
    elif kind == 'other_record': _another_row(_row_calls(_method(tree, toolkit, by('get')))[0])
    elif kind == 'input_specific':                        # get_x is right only for the id its tests use
        fn = _method(tree, toolkit, by('get'))
        args = ast.literal_eval(next(t for t in tests if t.tool == fn.name).code.split('ARGS = ')[1].split('\n')[0])
        (k, v), = args.items()
        guard = ast.parse(f'if {k} != {v!r}: return {{{k!r}: {k}}}').body[0]
        fn.body.insert(1, guard)
    else: raise ValueError(kind)
    return ast.unparse(ast.fix_missing_locations(tree))

def caught(code, toolkit, seed, tools, tests, pool) -> str | None:
    "How the build would catch this environment: its tests fail, or they fail the mutation gate (None: it passes)."
    from envsynth.envfactory.build import measure_tests, run_unit_tests
    from envsynth.mutation import MutationGate
    rep = run_unit_tests(code, toolkit, seed, tools, tests, pool)
    if rep.error or rep.failed: return 'tests fail'
    problems = MutationGate().problems(measure_tests(code, toolkit, seed, tools, tests, pool))
    return f'gate: {problems[0]}' if problems else None

FAULTS = ('argument_ignored', 'no_write', 'wrong_row', 'other_record', 'input_specific')

def test_each_planted_fault_is_caught_on_every_smoke_environment(smoke, pool):
    from envsynth.envfactory.build import UnitTest
    run_dir, _ = smoke
    folders = sorted(p for p in (run_dir / 'envs').iterdir() if (p / 'unit_tests.json').exists())
    assert len(folders) >= 2
    for folder in folders:
        code, toolkit, seed, tools, tests = _env_parts(folder)
        assert caught(code, toolkit, seed, tools, tests, pool) is None, folder.name      # the clean one passes
        for kind in FAULTS:
            assert caught(plant(code, toolkit, tests, kind), toolkit, seed, tools, tests, pool), (folder.name, kind)
        empty = [UnitTest(name=t.name, tool=t.tool, criterion=t.criterion, code=f'def {t.name}(env):\n    pass\n') for t in tests]
        assert caught(code, toolkit, seed, tools, empty, pool).startswith('gate'), folder.name

def test_the_smoke_run_gates_and_records_mutation_scores(smoke):
    from envsynth.mutation import REQUIRED
    run_dir, _ = smoke
    card = json.loads((run_dir / 'data_card.json').read_text())
    assert card['test_gate']['min_mutation_score'] == 0.8 and card['test_gate']['tools_missing_outputs'] == 0
    for b in read_records(run_dir / '02_build'):
        m = b['mutation']
        assert m['score'] >= 0.8 and all(m['by_operator'][op][0] == m['by_operator'][op][1] for op in REQUIRED if op in m['by_operator'])
        assert card['environments'][b['name']]['mutation_score'] == m['score']

def test_a_declared_output_that_is_never_returned_is_found(smoke, pool):
    from envsynth.envfactory.build import missing_outputs, run_unit_tests
    from envsynth.schema import Tool
    run_dir, _ = smoke
    code, toolkit, seed, tools, tests = _env_parts(sorted((run_dir / 'envs').iterdir())[0])
    rep = run_unit_tests(code, toolkit, seed, tools, tests, pool)
    assert not rep.failed and missing_outputs(tools, rep) == {}
    name = next(n for n in tools if n.startswith('get_'))
    d = tools[name].to_openai(); d['function']['output_schema'] = json.loads(json.dumps(tools[name].function.output_schema))
    d['function']['output_schema']['properties']['shoe_size'] = {'type': 'integer'}
    assert missing_outputs({**tools, name: Tool.parse(d)}, rep) == {name: ['shoe_size']}

def test_gold_write_arguments_are_stated_or_read_from_one_earlier_result(smoke, pool):
    from envsynth.envs import load_environment
    from envsynth.envfactory.queries import mentions, unambiguous_source
    from envsynth.schema import Task
    run_dir, _ = smoke
    sols, envs = read_records(run_dir / '05_solutions'), {}
    assert sols
    for s in sols:
        t = Task.model_validate(s['task'])
        if t.env_id not in envs: envs[t.env_id] = load_environment(run_dir / 'envs' / t.env_id, sandbox=pool)
        env = envs[t.env_id]
        outs = [r.output for r in env.run_actions(t.gold_actions, t)[0]]
        said = ' '.join(t.user_queries or [t.instruction])
        for i, a in enumerate(t.gold_actions):
            if env.tool_info[a.name].kind != 'write': continue
            for k, v in a.arguments.items():
                if v is None or isinstance(v, bool): continue
                assert mentions(said, v) or unambiguous_source(k, v, outs[:i]) is not None, (t.id, a.name, k, v)
    for e in envs.values(): e.close()

def test_a_candidate_with_an_unasked_write_is_not_gold():
    from envsynth.envfactory.solutions import unasked_writes
    from envsynth.schema import Action, Task
    class Info:
        def __init__(self, kind): self.kind = kind
    class Env:
        tool_info = {'get_loan': Info('read'), 'cancel_loan': Info('write'), 'create_loan': Info('write')}
    task = Task(env_id='library', instruction='cancel L1', gold_actions=[Action(name='cancel_loan', arguments={'loan_id': 'L1'})])
    faithful = [Action(name='get_loan', arguments={'loan_id': 'L1'}), Action(name='cancel_loan', arguments={'loan_id': 'L1'})]
    detour = [Action(name='cancel_loan', arguments={'loan_id': 'L2'}), Action(name='create_loan', arguments={'book_id': 'B1'}),
              Action(name='cancel_loan', arguments={'loan_id': 'L1'})]
    assert unasked_writes(Env(), task, faithful) == []
    assert [a.arguments for a in unasked_writes(Env(), task, detour)] == [{'loan_id': 'L2'}, {'book_id': 'B1'}]
    twice = [Action(name='cancel_loan', arguments={'loan_id': 'L1'})] * 2
    assert len(unasked_writes(Env(), task, twice)) == 1            # each gold write matches once

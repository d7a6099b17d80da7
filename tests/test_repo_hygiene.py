"""nbdev-clean and nbdev-export must leave the tree as it is: notebooks are committed clean and
lib/ is in sync with nbs/. On a fresh clone this is exactly "they leave git clean"; on a working
tree with edits it checks that the two commands would change nothing more.
If a check fails, the command has already fixed the files: review `git diff` and commit."""
import hashlib, subprocess, sys
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

def _snapshot(*folders: str) -> dict[str, str]:
    out = {}
    for folder in folders:
        for p in sorted((REPO / folder).rglob('*')):
            if p.is_file() and '__pycache__' not in p.parts and '.ipynb_checkpoints' not in p.parts:
                out[str(p.relative_to(REPO))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out

def _changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))

@pytest.mark.parametrize('command, folders', [('nbdev-clean', ('nbs',)), ('nbdev-export', ('lib',))])
def test_nbdev_command_changes_nothing(command, folders):
    before = _snapshot(*folders)
    res = subprocess.run([str(BIN / command)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    changed = _changed(before, _snapshot(*folders))
    assert not changed, f'{command} changed {changed}: run it, review `git diff` and commit'

def test_lib_is_never_hand_edited():
    "Every module in lib/envsynth (but the package files) comes from a notebook's default_exp."
    import json
    exported = set()
    for nb in (REPO / 'nbs').rglob('*.ipynb'):
        for cell in json.loads(nb.read_text())['cells']:
            src = ''.join(cell['source'])
            if cell['cell_type'] == 'code' and src.startswith('#| default_exp'):
                exported.add(src.split()[2].replace('.', '/') + '.py')
    modules = {str(p.relative_to(REPO / 'lib' / 'envsynth')) for p in (REPO / 'lib' / 'envsynth').rglob('*.py')
               if p.name not in ('__init__.py', '_modidx.py')}
    assert modules <= exported, f'modules with no notebook: {sorted(modules - exported)}'

def test_readme_matches_index_notebook():
    sys.path.insert(0, str(REPO / 'tools'))
    from render_readme import render_readme
    assert (REPO / 'README.md').read_text() == render_readme(), 'README.md is stale: run `make readme`'

def test_readme_starts_with_the_two_commands():
    head = (REPO / 'README.md').read_text().split('## ')[0]
    assert 'make quickstart' in head and 'make test' in head
    assert 'make test' in (REPO / '.ci' / 'run').read_text()

def _private_imports(path: Path) -> list[str]:
    "`from envsynth.x import _name`, `import envsynth.x as m` + `m._name`, and relative forms, in one module."
    import ast
    tree, found, aliases = ast.parse(path.read_text()), [], set()
    pkg = path.relative_to(REPO / 'lib').with_suffix('').parts[:-1]
    def absolute(node: ast.ImportFrom) -> str:
        if not node.level: return node.module or ''
        base = pkg[:len(pkg) - node.level + 1]
        return '.'.join([*base, *([node.module] if node.module else [])])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and absolute(node).startswith('envsynth'):
            for a in node.names:
                if a.name.startswith('_') and not a.name.startswith('__'): found.append(f'{path.name}:{node.lineno} imports {absolute(node)}.{a.name}')
                else: aliases.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            aliases |= {a.asname or a.name.split('.')[0] for a in node.names if a.name.startswith('envsynth')}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith('_') and not node.attr.startswith('__')
                and isinstance(node.value, ast.Name) and node.value.id in aliases):
            found.append(f'{path.name}:{node.lineno} uses {node.value.id}.{node.attr}')
    return found

def test_no_module_imports_another_modules_private_name():
    "A name starting with `_` is private to its module: other modules use public names (the lib is what users import)."
    found = [x for p in sorted((REPO / 'lib' / 'envsynth').rglob('*.py')) if p.name != '_modidx.py' for x in _private_imports(p)]
    assert not found, 'private names used across modules:\n' + '\n'.join(found)

"Style of the core notebooks, which readers read as tutorials: code lines fit in 100 characters."
import json
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / 'nbs' / 'core'
MAX_LINE = 100
CHECKED = sorted(CORE.glob('*.ipynb'))


def long_code_lines(path: Path, limit: int = MAX_LINE) -> list[str]:
    "`cell id: length: start of line` for every code-cell line of notebook `path` over `limit`."
    cells = json.loads(path.read_text())['cells']
    code = [(c.get('id'), ''.join(c['source'])) for c in cells if c['cell_type'] == 'code']
    return [f'{cid}: {len(line)}: {line.strip()[:60]}' for cid, src in code
            for line in src.splitlines() if len(line) > limit]


def test_finds_long_lines(tmp_path):
    too_long = 'y = "' + 'z' * 100 + '"'
    nb = {'cells': [{'cell_type': 'code', 'id': 'a', 'source': ['x = 1\n', too_long]},
                    {'cell_type': 'markdown', 'id': 'b', 'source': ['w' * 200]}]}
    (tmp_path / 'n.ipynb').write_text(json.dumps(nb))
    found = long_code_lines(tmp_path / 'n.ipynb')
    assert len(found) == 1 and found[0].startswith('a: 106: ')


def test_finds_core_notebooks():
    assert CHECKED, CORE


@pytest.mark.parametrize('path', CHECKED, ids=lambda p: p.stem)
def test_code_lines_fit(path):
    long = long_code_lines(path)
    assert not long, f'{path.name}: code lines over {MAX_LINE} characters:\n' + '\n'.join(long)

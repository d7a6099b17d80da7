"""Render README.md from nbs/index.ipynb without quarto (not installable offline).

The README is the notebook's markdown cells, in order, separated by blank lines; code cells are
not rendered. `python tools/render_readme.py` writes README.md; `--check` exits 1 if it is stale."""
import json, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

def render_readme(index_nb: Path = REPO / 'nbs' / 'index.ipynb') -> str:
    cells = json.loads(index_nb.read_text())['cells']
    parts = [''.join(c['source']).strip() for c in cells if c['cell_type'] == 'markdown']
    return '\n\n'.join(p for p in parts if p) + '\n'

if __name__ == '__main__':
    text, readme = render_readme(), REPO / 'README.md'
    if '--check' in sys.argv[1:]:
        if readme.read_text() != text: sys.exit('README.md is stale: run `make readme`')
    else: readme.write_text(text)

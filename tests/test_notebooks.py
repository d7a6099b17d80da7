"""Every notebook under nbs/ runs as one pytest test, so a failure names the notebook.

Uses nbdev's own runner (the same one `nbdev-test` uses): cells flagged with one of the
`tst_flags` of pyproject.toml (notest, slow, gpu) are skipped; folders holding a `.notest`
file and files starting with `_` or `.` are not collected.
"""
from pathlib import Path
import os
import pytest
from nbdev.config import get_config
from nbdev.test import test_nb as run_notebook   # aliased so pytest does not collect it

CFG = get_config()
NBS_PATH = Path(CFG.nbs_path)

def _collect(root: Path) -> list[Path]:
    out = []
    for p in sorted(root.rglob('*.ipynb')):
        rel = p.relative_to(root)
        if any(part.startswith(('_', '.')) for part in rel.parts): continue
        if any((root / Path(*rel.parts[:i]) / '.notest').exists() for i in range(len(rel.parts))): continue
        out.append(p)
    return out

NOTEBOOKS = _collect(NBS_PATH)

def test_notebooks_were_found():
    assert NOTEBOOKS, f'no notebooks under {NBS_PATH}'

@pytest.mark.parametrize('nb', NOTEBOOKS, ids=lambda p: str(p.relative_to(NBS_PATH)))
def test_notebook(nb, monkeypatch):
    monkeypatch.setenv('IN_TEST', '1')
    ok, elapsed = run_notebook(nb, skip_flags=CFG.tst_flags.split(), basepath=CFG.config_path)
    assert ok, f'{nb.relative_to(NBS_PATH)} failed (its traceback is printed above)'

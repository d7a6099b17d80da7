"""The verl tier inside the ordinary test run. tests/test_rl_verl.py needs verl 0.9.1, which lives
in .venv-verl (verl pins transformers<5.11). Under an interpreter without verl (`make test` in
.venv), this builds .venv-verl with tools/make_verl_venv.sh (about a minute from scratch: only verl,
Ray and the packages whose pins differ from .venv's are installed, the rest is reused from .venv; a
no-op when up to date) and runs tests/test_rl_verl*.py there (one file per paper's rows besides
the adapters' own). It fails, never skips, when the venv
cannot be built or a verl test fails or skips; ENVSYNTH_SKIP_VERL_TIER=1 opts out explicitly (e.g.
offline, where the build cannot reach PyPI)."""
import importlib.util, os, re, subprocess
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500),
              pytest.mark.skipif(importlib.util.find_spec('verl') is not None,
                                 reason='verl is importable: tests/test_rl_verl.py runs directly')]

def test_verl_tier_runs_in_its_venv():
    if os.environ.get('ENVSYNTH_SKIP_VERL_TIER') == '1':
        pytest.skip('ENVSYNTH_SKIP_VERL_TIER=1: the verl tier was opted out')
    build = subprocess.run(['bash', str(REPO / 'tools' / 'make_verl_venv.sh')], cwd=REPO,
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, (f'tools/make_verl_venv.sh failed ({build.returncode}):\n'
                                   f'{build.stdout[-2000:]}\n{build.stderr[-4000:]}')
    env = {k: v for k, v in os.environ.items() if not k.startswith(('PYTEST_', 'VIRTUAL_ENV'))}
    python = str(REPO / '.venv-verl' / 'bin' / 'python')
    files = sorted(str(f.relative_to(REPO)) for f in (REPO / 'tests').glob('test_rl_verl*.py')
                   if f.name != 'test_rl_verl_tier.py')
    tests = ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', *files]
    run = subprocess.run([python, *tests], cwd=REPO, capture_output=True, text=True, timeout=900,
                         env=env)
    assert run.returncode == 0, (f'{files} failed in .venv-verl ({run.returncode}):\n'
                                 f'{run.stdout[-6000:]}\n{run.stderr[-2000:]}')
    summary = run.stdout.strip().splitlines()[-1]
    assert re.search(r'\d+ passed', summary), summary
    assert not re.search(r'skipped|failed|error', summary), summary

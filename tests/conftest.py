"Shared pytest fixtures and paths."
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]

@pytest.fixture
def repo() -> Path:
    return REPO

@pytest.fixture(scope='session')
def docker_daemon():
    """A Docker daemon for the sandbox's Docker backend. `tools/ensure_docker.sh` installs
    docker.io and starts dockerd when needed; if it fails, the tests that use this fail (they are
    not skipped). A daemon it started is stopped by its PID at the end of the session."""
    import os, signal, subprocess, time
    r = subprocess.run(['bash', str(REPO / 'tools' / 'ensure_docker.sh')],
                       capture_output=True, text=True, timeout=900)
    if r.returncode:
        pytest.fail(f'tools/ensure_docker.sh failed ({r.returncode}): {r.stderr[-2000:]}',
                    pytrace=False)
    started = [int(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith('started ')]
    yield
    for pid in started:
        try: os.kill(pid, signal.SIGTERM)
        except ProcessLookupError: continue
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and Path(f'/proc/{pid}').exists(): time.sleep(0.2)
        try: os.kill(pid, signal.SIGKILL)
        except ProcessLookupError: pass

@pytest.fixture(params=['namespaces', 'docker'])
def sandbox_backend(request) -> str:
    "Each sandbox test that takes this runs on both backends of `SandboxPool`."
    if request.param == 'docker': request.getfixturevalue('docker_daemon')
    return request.param

@pytest.fixture(scope='session')
def built_docs_site(tmp_path_factory):
    """The real docs site, built once per session (tools/build_docs.py): (out folder, its build summary, seconds).
    tests/test_docs.py checks its links, tests/test_docs_site.py opens it in a browser."""
    import sys, time
    sys.path.insert(0, str(REPO / 'tools'))
    from build_docs import build_site
    out = tmp_path_factory.mktemp('site') / '_docs'
    t0 = time.perf_counter()
    summary = build_site(out)
    return out, summary, time.perf_counter() - t0

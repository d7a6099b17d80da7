"""The curated environments in environments/: property checks, shape, reproducible builds, no benchmark names,
and the same results in-process and in the sandbox."""
import json, shutil, subprocess, sys
from pathlib import Path
import pytest
from envsynth.envs import load_environment, read_tool_tests, validate_environment
from envsynth.sandbox import SandboxPool

REPO = Path(__file__).resolve().parents[1]
ENVS = sorted(p.parent for p in (REPO / 'environments').glob('*/env.json'))
BENCH = json.loads((REPO / 'tests' / 'fixtures' / 'benchmark_tool_names.json').read_text())
DERIVED = ['env.json', 'tools.json', 'db_schema.json', 'seed_state.json', 'tasks.jsonl', 'tests.json']

def test_at_least_eight_domains():
    assert len(ENVS) >= 8, [p.name for p in ENVS]
    assert not {p.name for p in ENVS} & {'airline', 'retail', 'telecom', 'mock'}      # tau2's domains

@pytest.mark.parametrize('folder', ENVS, ids=lambda p: p.name)
def test_environment_valid(folder):
    "Files, schemas, lint, gold hashes, tool tests and every property check."
    assert validate_environment(folder, trusted=True) == []

@pytest.mark.parametrize('folder', ENVS, ids=lambda p: p.name)
def test_environment_shape(folder):
    meta = json.loads((folder / 'env.json').read_text())
    kinds = [t['kind'] for t in meta['tools']]
    assert 4 <= len(kinds) <= 10 and kinds.count('read') >= 2 and kinds.count('write') >= 2, kinds
    env = load_environment(folder, trusted=True)
    assert len(env.tasks) >= 5
    writes = [t for t in env.tasks.values() if any(env.tool_info[a.name].kind == 'write' for a in t.gold_actions)]
    assert len(writes) >= 3 and all(t.gold_state_hash for t in env.tasks.values())
    assert sum(meta['tables'].values()) >= 100, meta['tables']          # seed states of realistic size
    assert len(read_tool_tests(folder)) >= 5

@pytest.mark.parametrize('folder', ENVS, ids=lambda p: p.name)
def test_no_benchmark_tool_names(folder):
    names = {t['name'] for t in json.loads((folder / 'env.json').read_text())['tools']}
    assert not names & set(BENCH['bfcl']), names & set(BENCH['bfcl'])
    assert not names & set(BENCH['tau2']), names & set(BENCH['tau2'])

@pytest.mark.parametrize('folder', ENVS, ids=lambda p: p.name)
def test_build_is_reproducible(folder, tmp_path):
    "Re-running build.py gives byte-identical derived files: what is committed is what the code produces."
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(*DERIVED, '__pycache__'))
    subprocess.run([sys.executable, str(copy / 'build.py')], check=True, capture_output=True, cwd=REPO)
    for f in DERIVED: assert (copy / f).read_bytes() == (folder / f).read_bytes(), f

def test_same_results_in_the_sandbox():
    "Every curated environment's gold runs give the same results and hashes in sandbox workers as in-process."
    with SandboxPool(size=2) as pool:
        for folder in ENVS:
            local, boxed = load_environment(folder, trusted=True), load_environment(folder, sandbox=pool)
            for task in local.tasks.values():
                (r1, h1), (r2, h2) = local.gold_run(task), boxed.gold_run(task)
                assert [r.model_dump() for r in r1] == [r.model_dump() for r in r2] and h1 == h2 == task.gold_state_hash, (folder.name, task.id)
        assert pool.stats['replaced'] == {}

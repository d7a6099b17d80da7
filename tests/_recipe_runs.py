"""Subprocess helpers the recipe tests share: start a run in its own process group, finish it, SIGKILL it in
the middle of a stage, and compare two runs' outputs without their wall-clock timings."""
import os, signal, subprocess, sys, time
from pathlib import Path
from typing import Callable
import pytest
from envsynth.pipeline import TIMING_SUFFIXES, without_timing


def start(cmd: list[str], env: dict | None = None) -> subprocess.Popen:
    "`cmd` running in a process group of its own (a kill reaches its workers too), output captured."
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=env)


def finish(proc: subprocess.Popen, timeout: float = 600) -> str:
    "The run's stdout; the test fails with the tail of its stderr unless it exited 0."
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return out


def journal_lines(run_dir: Path, stage: str) -> int:
    "Items that `stage` of the run in `run_dir` has journaled so far (all shards)."
    return sum(len(p.read_text().splitlines()) for p in (run_dir / stage).glob('shard-*.jsonl'))


def untimed(x):
    "`x` without wall-clock measurements (latencies differ between any two runs; everything else must not)."
    return without_timing(x)


def kill_during(start_run: Callable[[], subprocess.Popen], run_dir: Path, stage: str, *,
                     timeout_s: float = 300, poll_s: float = 0.005) -> bool:
    """Start a run and SIGKILL its process group as soon as `stage` journals a line more than it had when the run
    started (a resumed folder may hold lines of it already); True if killed before the stage's stats.json existed.
    Fails the test if the run ends first: then nothing was cut."""
    before = journal_lines(run_dir, stage)
    proc = start_run()
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        if journal_lines(run_dir, stage) > before:
            mid = not (run_dir / stage / 'stats.json').exists()
            os.killpg(proc.pid, signal.SIGKILL); proc.wait()
            return mid
        time.sleep(poll_s)
    err = proc.stderr.read()[-2000:] if proc.poll() is not None and proc.stderr else ''
    if proc.poll() is None: os.killpg(proc.pid, signal.SIGKILL); proc.wait()
    pytest.fail(f'{run_dir}: the run ended (rc={proc.returncode}) before {stage} journaled a new item: {err}')


TIMINGS = (*TIMING_SUFFIXES, 'seconds')


def untimed_all(x):
    "`x` without any key (at any depth) ending in latency_s, wall_s or seconds."
    return without_timing(x, TIMINGS)


def first_diff(a, b, path: str = ''):
    "`(path, a_value, b_value)` of the first place where `a` and `b` differ (dict keys sorted, lists by index), else None."
    if type(a) is not type(b): return (path or '.', a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a: return (f'{path}.{k}', '<missing>', b[k])
            if k not in b: return (f'{path}.{k}', a[k], '<missing>')
            if (d := first_diff(a[k], b[k], f'{path}.{k}')) is not None: return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            if (d := first_diff(x, y, f'{path}[{i}]')) is not None:
                key = x.get('key') if isinstance(x, dict) else None
                return (d[0] + (f' (entry key {key})' if key and d[0].count('[') == path.count('[') + 1 else ''), d[1], d[2])
        if len(a) != len(b): return (f'{path} (length)', len(a), len(b))
        return None
    return None if a == b else (path or '.', a, b)


def short(x, n: int = 300) -> str:
    s = repr(x)
    return s if len(s) <= n else s[:n] + '...'


def recipe_smoke_run(module: str, params: Path, run: Path, timeout: int = 300) -> Path:
    "Run `python -m <module> --run-dir run --params params` (a recipe at smoke scale) and return `run`; fails the test otherwise."
    r = subprocess.run([sys.executable, '-m', module, '--run-dir', str(run), '--params', str(params)],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return run

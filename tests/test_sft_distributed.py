"""Distributed SFT on CPU: `torchrun --nproc_per_node 2` (gloo) running `python -m envsynth.train.sft` on a tiny random
Qwen3, the command line `slurm/sft.sbatch` runs on every node.

- Two processes give the same loss curve and the same final weights as one process (the global batch is the preset's:
  gradient accumulation is divided by the number of processes, and each process gets every other micro-batch).
- A 2-process job killed with SIGKILL after a checkpoint resumes (`--resume`) from the newest complete checkpoint and
  ends with the uninterrupted run's losses and weights.
- `final/` is a plain Hugging Face folder (full state dict + tokenizer) that `from_pretrained` loads.

On CPU `accelerate` runs the sharded presets as data parallelism over gloo (it enables FSDP only on accelerators), so
this checks the launcher, the process group, the batch arithmetic, rank-0 saving and resume; FSDP itself runs in
tools/gpu_checks.sh. About 70 s on 2 cores."""
import json, os, random, signal, subprocess, sys, time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STEPS, SAVE = 24, 8


def _env():
    return {**os.environ, 'PYTHONPATH': str(REPO / 'lib'), 'OMP_NUM_THREADS': '1', 'TOKENIZERS_PARALLELISM': 'false'}


def _argv(work: Path, out: str, nproc: int, *extra: str) -> list[str]:
    mod = ['-m', 'envsynth.train.sft', '--data', str(work / 'data'), '--model', str(work / 'model'),
           '--out', str(work / out), '--preset', 'tiny-cpu', '--max-steps', str(STEPS), '--save-steps', str(SAVE), *extra]
    if nproc == 1: return [sys.executable, *mod]
    return [str(BIN / 'torchrun'), '--standalone', '--nproc_per_node', str(nproc), *mod]


def _run(work: Path, out: str, nproc: int, *extra: str) -> dict:
    res = subprocess.run(_argv(work, out, nproc, *extra), cwd=REPO, env=_env(), capture_output=True, text=True,
                         timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads((work / out / 'sft_result.json').read_text())


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file
    return load_file(str(folder / 'model.safetensors'))


def _max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def _kill_tree(proc: subprocess.Popen):
    import psutil
    try: tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess: tree = []
    for p in tree:
        try: p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess: pass
    proc.wait(timeout=30)
    psutil.wait_procs(tree[1:], timeout=30)


@pytest.fixture(scope='module')
def work(tmp_path_factory):
    sys.path.insert(0, str(REPO / 'lib'))
    from envsynth.train.sft import build_tiny_qwen3_on
    from transformers import AutoTokenizer
    d = tmp_path_factory.mktemp('sft_dist')
    words = 'alpha beta gamma delta card block user tool weather city paris london call result'.split()
    rng = random.Random(0)
    texts = [' '.join(rng.choice(words) for _ in range(30)) for _ in range(64)]
    build_tiny_qwen3_on(texts, d / 'model', vocab_size=300, hidden_size=64, layers=2, max_positions=512)
    tok = AutoTokenizer.from_pretrained(d / 'model')
    rows = []
    for i, t in enumerate(texts):
        ids = tok(t)['input_ids'][:48 + i % 16]               # uneven lengths: padding and token-weighted losses
        k = len(ids) // 2
        rows.append({'id': f'r{i}', 'input_ids': ids, 'labels': [-100] * k + ids[k:], 'attention_mask': [1] * len(ids)})
    (d / 'data').mkdir()
    (d / 'data' / 'sft.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
    return d


@pytest.fixture(scope='module')
def one_and_two(work):
    return _run(work, 'one', 1), _run(work, 'two', 2)


def test_two_processes_match_one(work, one_and_two):
    one, two = one_and_two
    assert one['steps'] == two['steps'] == STEPS
    assert len(one['losses']) == len(two['losses']) == STEPS
    gap = max(abs(a - b) for a, b in zip(one['losses'], two['losses']))
    assert gap < 1e-3, (gap, one['losses'][:5], two['losses'][:5])
    assert two['losses'][-1] < 0.8 * two['losses'][0]                       # it learned something
    assert _max_diff(_weights(work / 'one' / 'final'), _weights(work / 'two' / 'final')) < 1e-3
    ck = work / 'two' / f'checkpoint-{STEPS}'
    assert (ck / 'rng_state_0.pth').exists() and (ck / 'rng_state_1.pth').exists()   # really two ranks
    from transformers import AutoModelForCausalLM, AutoTokenizer
    m = AutoModelForCausalLM.from_pretrained(work / 'two' / 'final')          # what vLLM / verl read
    assert AutoTokenizer.from_pretrained(work / 'two' / 'final').pad_token == '<|endoftext|>'
    assert sum(p.numel() for p in m.parameters()) > 0


def test_two_processes_resume_after_kill(work, one_and_two):
    _, two = one_and_two
    out = work / 'killed'
    proc = subprocess.Popen(_argv(work, 'killed', 2), cwd=REPO, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while not (out / f'checkpoint-{SAVE}' / 'trainer_state.json').exists():
            assert proc.poll() is None, f'the job ended (rc {proc.returncode}) before its first checkpoint'
            assert time.monotonic() < deadline, 'no checkpoint after 180 s'
            time.sleep(0.01)
    finally:
        _kill_tree(proc)                     # the node dies: the launcher and both ranks (each in its own session)
    assert not (out / 'final').exists() and not (out / 'sft_result.json').exists(), 'killed too late: nothing to resume'
    res = _run(work, 'killed', 2, '--resume')
    start = int(Path(res['resumed_from']).name.split('-')[1])
    assert start >= SAVE and start < STEPS, res['resumed_from']
    assert res['steps'] == STEPS
    # the log history comes back with the checkpoint: the whole curve, steps before the kill included
    gap = max(abs(a - b) for a, b in zip(res['losses'], two['losses']))
    assert len(res['losses']) == STEPS and gap < 1e-3, (gap, res['losses'], two['losses'])
    assert _max_diff(_weights(out / 'final'), _weights(work / 'two' / 'final')) < 1e-3


def test_resume_skips_a_checkpoint_cut_short(work, one_and_two):
    """A checkpoint folder the kill interrupted (no trainer_state.json) is not resumed from."""
    from envsynth.train.sft import _last_resumable
    import shutil
    d = work / 'cut'
    shutil.copytree(work / 'two', d, ignore=shutil.ignore_patterns('final', 'sft_result.json'))
    (d / f'checkpoint-{STEPS}' / 'trainer_state.json').unlink()
    assert _last_resumable(d).name == f'checkpoint-{STEPS - SAVE}'


def test_sbatch_launches_one_torchrun_per_node(tmp_path):
    """slurm/sft.sbatch on a 2-node allocation (dry run, a fake `scontrol` on PATH): one srun task per node, each a
    torchrun launcher for the node's GPUs, meeting at a c10d rendezvous on the first node; --resume once a checkpoint
    exists."""
    shims = tmp_path / 'bin'; shims.mkdir()
    (shims / 'scontrol').write_text('#!/bin/sh\nprintf "gpu-a7\\ngpu-b3\\n"\n'); (shims / 'scontrol').chmod(0o755)
    venv = tmp_path / 'venv'; (venv / 'bin').mkdir(parents=True)
    (venv / 'bin' / 'torchrun').write_text('#!/bin/sh\n'); (venv / 'bin' / 'torchrun').chmod(0o755)
    env = {**os.environ, 'PATH': f'{shims}:{os.environ["PATH"]}', 'RUN_DIR': str(tmp_path / 'run'),
           'ENVSYNTH_SLURM_VENV': str(venv), 'SFT_MODEL': '/models/Qwen3-32B', 'SFT_PRESET': 'astra-32b',
           'SFT_DRY_RUN': '1', 'SLURM_JOB_ID': '4242', 'SLURM_NNODES': '2', 'SLURM_JOB_NODELIST': 'gpu-[a7,b3]',
           'SLURM_CPUS_PER_TASK': '32', 'CUDA_VISIBLE_DEVICES': '0,1,2,3,4,5,6,7'}
    env.pop('ENVSYNTH_SLURM_CONTAINER', None)
    run = lambda: subprocess.run(['bash', 'slurm/sft.sbatch'], cwd=REPO, env=env, capture_output=True, text=True,
                                 timeout=30)
    res = run()
    assert res.returncode == 0, res.stderr
    line = res.stdout.strip().splitlines()[-1].split()
    assert line[:7] == ['srun', '--nodes', '2', '--ntasks-per-node', '1', '--kill-on-bad-exit=1', str(venv / 'bin' / 'torchrun')]
    cmd = ' '.join(line)
    for part in ('--nnodes 2', '--nproc_per_node 8', '--rdzv_backend c10d', '--rdzv_endpoint gpu-a7:29500',
                 '--rdzv_id 4242', '-m envsynth.train.sft', '--preset astra-32b', '--model /models/Qwen3-32B'):
        assert part in cmd, (part, cmd)
    assert '--resume' not in cmd
    (tmp_path / 'run' / 'sft' / 'checkpoint-20').mkdir(parents=True)
    assert run().stdout.strip().endswith('--resume')
    env['SLURM_NNODES'] = '1'
    line = run().stdout.strip().splitlines()[-1].split()
    assert line[0] == str(venv / 'bin' / 'torchrun') and '--nnodes 1' in ' '.join(line)   # one node: no srun step

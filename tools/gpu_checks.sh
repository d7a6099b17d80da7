#!/usr/bin/env bash
# The GPU checks, as one script for one machine with one or more GPUs, in about 12 minutes. Each check runs under its
# own time limit, writes its log and results under $OUT, and a line to $OUT/summary.tsv (check, exit status, seconds),
# so a check that fails or runs out of time costs only its own slot:
#   0. env          GPUs, driver, torch / vLLM / verl / transformers versions                         (~10 s)
#   1. prepare      a tiny random Qwen3 (head_dim 64, bf16-friendly), verl RL rows of the library
#                   environment's tasks, SFT rows of the curated oracle trajectories                  (~60 s)
#   2. verl-PRESET  one verl GRPO step per paper preset (astra, synthagent, envfactory) on the tiny
#                   model: vLLM rollouts (TP 1), the envsynth agent loop, the preset's reward       (3 x <=150 s)
#   3. rl-gpu       the `gpu` size of the single-node GRPO experiment (nbs/train/05_rl_learns): SFT,
#                   more SFT and GRPO seeds, held-out and training success; seeds as time allows       (<=180 s)
#   4. sft-fsdp     distributed SFT across every GPU (torchrun, FSDP2 via --shard fsdp), then vLLM
#                   loads the saved final/ folder and generates                                       (<=150 s)
#   5. sft-speed    benchmarks/sft_throughput.py: envsynth train_sft against a plain bf16 Trainer in the same run (<=120 s)
#
#   OUT                  results folder (required)
#   GPU_VENV             the GPU venv (default .venv-gpu, `make gpu-venv`)
#   GPU_CHECKS_ONLY      comma-separated checks to run (default: all), e.g. verl-astra,sft-fsdp
#   GPU_CHECKS_DRY_RUN   non-empty: run `prepare` with this venv's python on CPU and print the GPU commands
# Usage: OUT=results bash tools/gpu_checks.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results folder}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
DRY=${GPU_CHECKS_DRY_RUN:-}
VENV=${GPU_VENV:-.venv-gpu}
if [ -n "$DRY" ] && [ ! -x "$VENV/bin/python" ]; then VENV=${GPU_CHECKS_CPU_VENV:-.venv}; fi
PY=$VENV/bin/python
[ -x "$PY" ] || { echo "no $PY: run make gpu-venv (or set GPU_VENV)" >&2; exit 2; }
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
W=$OUT/work; mkdir -p "$W"
NGPU=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU')
SUMMARY=$OUT/summary.tsv
printf 'check\trc\tseconds\n' > "$SUMMARY"

wanted() { [ -z "${GPU_CHECKS_ONLY:-}" ] || [[ ",$GPU_CHECKS_ONLY," == *",$1,"* ]]; }
# check NAME LIMIT_S CMD...: run CMD with a time limit, log to $OUT/NAME.log, one summary line
check() {
  local name=$1 limit=$2; shift 2
  wanted "$name" || return 0
  if [ -n "$DRY" ] && [ "$name" != prepare ]; then
    printf '%s\tdry-run\t0\n' "$name" >> "$SUMMARY"; echo "[$name, ${limit}s] $*"; return 0
  fi
  local t0=$SECONDS rc
  echo "[$(date -u +%T)] $name (limit ${limit}s)"
  timeout --kill-after=20 "$limit" "$@" > "$OUT/$name.log" 2>&1; rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >> "$SUMMARY"
  echo "[$(date -u +%T)] $name: rc=$rc in $((SECONDS - t0))s"; tail -n 3 "$OUT/$name.log"
  return 0
}

# 0. the machine
check env 60 bash -c "nvidia-smi; $PY -c 'import torch, transformers; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, torch.cuda.device_count(), \"GPU(s)\"); print(\"transformers\", transformers.__version__)'; $PY -c 'import vllm, verl; print(\"vllm\", vllm.__version__, \"verl\", verl.__version__)'"

# 1. inputs every later check uses (CPU work; the only check a dry run executes)
check prepare 240 "$PY" - "$W" <<'EOF'
import json, sys
from pathlib import Path
from envsynth.data import sft_text, write_rl_parquet
from envsynth.train.curated_data import oracle_trajectories
from envsynth.train.grpo import split_tasks, task_rows
from envsynth.train.sft import build_tiny_qwen3_on, sft_rows
from transformers import AutoTokenizer
w = Path(sys.argv[1])
trajs = oracle_trajectories()
model = build_tiny_qwen3_on([sft_text(t).text for t in trajs], w / 'tiny', vocab_size=2048, hidden_size=128,
                            layers=2, heads=2, max_positions=4096)          # head_dim 64: what vLLM's kernels take
rows = sft_rows(trajs, AutoTokenizer.from_pretrained(model))
(w / 'sft_data').mkdir(exist_ok=True)
(w / 'sft_data' / 'sft.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
train, held = split_tasks(['library'])
write_rl_parquet(task_rows(train), w / 'rl_data' / 'train.parquet')
write_rl_parquet(task_rows(held), w / 'rl_data' / 'val.parquet')
print(f'tiny model {model}; {len(rows)} SFT rows; RL rows: {sum(map(len, train.values()))} train, {sum(map(len, held.values()))} val')
EOF
[ -n "$DRY" ] || [ -s "$W/rl_data/train.parquet" ] || { echo "prepare failed: see $OUT/prepare.log" >&2; exit 1; }

# 2. one verl GRPO step per paper preset: the preset's command line (envsynth.train.rl.main_ppo_command), made small
SMALL=(trainer.total_training_steps=1 trainer.total_epochs=1 trainer.val_before_train=False trainer.test_freq=-1
       trainer.save_freq=-1 'trainer.logger=[console]' data.train_batch_size=4 data.val_batch_size=4
       data.max_prompt_length=2048 data.max_response_length=512 actor_rollout_ref.rollout.n=4
       actor_rollout_ref.actor.ppo_mini_batch_size=4 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2
       actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2
       actor_rollout_ref.rollout.tensor_model_parallel_size=1 actor_rollout_ref.rollout.gpu_memory_utilization=0.3
       actor_rollout_ref.rollout.agent.num_workers=2 actor_rollout_ref.rollout.enforce_eager=True)
for preset in astra synthagent envfactory; do
  wanted "verl-$preset" || continue
  job=$W/verl-$preset; mkdir -p "$job"
  if ! "$PY" -m envsynth.train.grpo verl-command --preset "$preset" --job-dir "$job" --model "$W/tiny" \
      --train-files "$W/rl_data/train.parquet" --val-files "$W/rl_data/val.parquet" --n-gpus 1 --nnodes 1 \
      --python "$PY" > "$job/main_ppo.argv" 2> "$OUT/verl-$preset.log"; then
    printf 'verl-%s\t2\t0\n' "$preset" >> "$SUMMARY"; continue
  fi
  mapfile -t CMD < "$job/main_ppo.argv"
  EXTRA=("trainer.default_local_dir=$job/checkpoints")
  # the presets' group filters (ASTRA, SynthAgent) fill a batch of the preset's size: make it the small one. With a
  # random model most groups have no reward spread, so the filter may need several rollout rounds for its 4 groups.
  if grep -q 'sampler_kwargs.train_batch_size' "$job/main_ppo.argv"; then
    EXTRA+=(++trainer.v1.sampler.sampler_kwargs.train_batch_size=4); fi
  check "verl-$preset" 150 env RAY_DEDUP_LOGS=0 "${CMD[@]}" "${SMALL[@]}" "${EXTRA[@]}"
done

# 3. the single-node GRPO experiment at its `gpu` size (results.json is rewritten after every seed)
check rl-gpu 180 "$PY" -m envsynth.train.grpo experiment --size gpu --out "$OUT/rl_gpu" --device cuda

# 4. distributed SFT over every GPU with FSDP2, then vLLM serves what it saved
check sft-fsdp 150 bash -c "$VENV/bin/torchrun --standalone --nproc_per_node $((NGPU > 0 ? NGPU : 1)) \
  -m envsynth.train.sft --data $W/sft_data --model $W/tiny --out $OUT/sft_fsdp --preset tiny-gpu --shard fsdp \
  --max-steps 30 --save-steps 15 && $PY - $OUT/sft_fsdp/final <<'EOF'
import json, sys
from vllm import LLM, SamplingParams
llm = LLM(model=sys.argv[1], dtype='bfloat16', gpu_memory_utilization=0.3, enforce_eager=True, max_model_len=2048)
out = llm.generate(['<|im_start|>user\nFind a book<|im_end|>\n<|im_start|>assistant\n'], SamplingParams(max_tokens=16))
print(json.dumps({'vllm_loaded': True, 'text': out[0].outputs[0].text}))
EOF"

# 5. SFT throughput against a plain bf16 Trainer, measured in the same run
check sft-speed 120 bash -c "$PY benchmarks/sft_throughput.py prepare --out $W/sft_bench && \
  $PY benchmarks/sft_throughput.py run --data $W/sft_bench --epochs 1 --repeat 4 \
  --variants 'plain Trainer bf16,envsynth train_sft' --json $OUT/sft_throughput.json"

echo; column -t "$SUMMARY" 2>/dev/null || cat "$SUMMARY"

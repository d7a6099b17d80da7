#!/usr/bin/env bash
# Build .venv-verl: verl 0.9.1 (CPU torch) + envsynth, for the verl tier of the RL tests (tests/test_rl_verl.py).
# verl pins transformers<5.11 and tensordict<=0.10, which conflict with .venv's pins, so it gets its own venv.
# Exact versions: eval_harness_constraints/verl.txt (`--freeze` rewrites it from the built venv).
# Usage: tools/make_verl_venv.sh [--freeze]      (~4 min and ~2 GB on a fresh machine; a no-op when up to date)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VERL_VENV:-.venv-verl}
PINS=eval_harness_constraints/verl.txt
STAMP="$VENV/.envsynth-verl.stamp"
pins_text() { [[ -f "$PINS" ]] && cat "$PINS" || true; }
want=$({ cat "$0"; pins_text; } | sha256sum | cut -c1-16)
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" && "${1:-}" != "--freeze" ]]; then echo "$VENV is up to date"; exit 0; fi
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --quiet)
[[ -f "$PINS" && "${1:-}" != "--freeze" ]] && PIP+=(-c "$PINS")
# verl's base requirements with the local CPU torch; the agent loop and the V1 trainer need the rest.
"${PIP[@]}" "verl==0.9.1" "torch==2.13.0" hydra-core cachetools uvicorn fastapi "TransferQueue==0.1.11" pytest pytest-timeout
# envsynth itself without its heavy optional stack (sentence-transformers, mcp servers): only what the RL path imports.
"${PIP[@]}" --no-deps -e .
"${PIP[@]}" "pydantic>=2.10,<3" "jsonschema>=4.23,<5" tqdm "fastcore>=1.8" "openai>=2.0,<4" "json-repair>=0.40,<1" \
    "orjson>=3.10,<4" "docstring-parser>=0.16,<1" "networkx>=3.2,<4" "mcp>=2.3,<3"
"$VENV/bin/python" -c "import verl, verl.experimental.agent_loop, envsynth.rollout; print('verl', verl.__version__)"
if [[ "${1:-}" == "--freeze" ]]; then
  { echo "# Exact versions of .venv-verl (verl 0.9.1, CPU torch). Written by tools/make_verl_venv.sh --freeze."
    "$VENV/bin/python" -m pip freeze --exclude-editable | grep -v '^-e ' ; } > "$PINS"
  want=$({ cat "$0"; pins_text; } | sha256sum | cut -c1-16)
fi
echo "$want" > "$STAMP"

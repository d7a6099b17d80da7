#!/usr/bin/env bash
# Build .venv-verl: verl 0.9.1 + envsynth, for the verl tier of the RL tests
# (tests/test_rl_verl.py).
# verl pins transformers<5.11 and tensordict<=0.10, which conflict with .venv's pins, so it gets its
# own venv. Exact versions: eval_harness_constraints/verl.txt.
#
# Default, the test tier (~300 MB, about a minute): a venv holding only the distributions the verl
# tests import that .venv lacks at the pinned version (verl, Ray, Hydra, tensordict, transformers
# 5.10, ...), installed without dependencies. Everything else, torch included, is .venv's: a .pth
# file puts this checkout's lib/ and .venv's site-packages on sys.path AFTER the venv's own
# site-packages, so the venv's own versions win and the venv always runs the pinned set. Rebuilt
# from scratch when this script, the pins or .venv's packages change; a no-op otherwise.
# --full: a standalone venv with verl's whole requirement set and its own CPU torch (~2 GB, 10-20
# min), the base of a cluster venv (add a CUDA torch and vLLM there); --full --freeze rewrites the
# pins from it.
# Usage: tools/make_verl_venv.sh [--full [--freeze]]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VERL_VENV:-.venv-verl}
PINS=eval_harness_constraints/verl.txt
STAMP="$VENV/.envsynth-verl.stamp"
MODE=test; FREEZE=0
for a in "$@"; do
  case "$a" in
    --full) MODE=full ;;
    --freeze) FREEZE=1 ;;
    *) echo "unknown option $a" >&2; exit 2 ;;
  esac
done
[[ $FREEZE == 0 || $MODE == full ]] || { echo "--freeze needs --full" >&2; exit 2; }
[[ -x .venv/bin/python ]] || { echo ".venv is missing: run make install first" >&2; exit 1; }
BASE=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
SITE=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
stamp() { { echo "$MODE"; cat "$0" "$PINS"; ls "$SITE"; } | sha256sum | cut -c1-16; }
want=$(stamp)
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" && $FREEZE == 0 ]]; then
  echo "$VENV is up to date"; exit 0
fi
if [[ -e "$VENV" ]]; then
  [[ -f "$VENV/pyvenv.cfg" ]] || { echo "$VENV is not a venv: not touching it" >&2; exit 1; }
  rm -rf "$VENV"
fi

if [[ $MODE == full ]]; then
  "$BASE" -m venv "$VENV"
  PIP=("$VENV/bin/python" -m pip install --quiet)
  [[ $FREEZE == 0 ]] && PIP+=(-c "$PINS")
  "${PIP[@]}" "verl==0.9.1" "torch==2.13.0" hydra-core cachetools uvicorn fastapi \
      "TransferQueue==0.1.11" pytest pytest-timeout
  "${PIP[@]}" --no-deps -e .
  "${PIP[@]}" "pydantic>=2.10,<3" "jsonschema>=4.23,<5" tqdm "fastcore>=1.8" "openai>=2.0,<4" \
      "json-repair>=0.40,<1" "orjson>=3.10,<4" "docstring-parser>=0.16,<1" "networkx>=3.2,<4" \
      "mcp>=2.3,<3"
  if [[ $FREEZE == 1 ]]; then
    { echo "# Exact versions of .venv-verl (verl 0.9.1, CPU torch)." \
           "Written by tools/make_verl_venv.sh --full --freeze."
      "$VENV/bin/python" -m pip freeze --exclude-editable | grep -v '^-e ' ; } > "$PINS"
    want=$(stamp)
  fi
else
  "$BASE" -m venv --without-pip "$VENV"
  # What the verl tier imports (measured: the distributions of sys.modules after a run of
  # tests/test_rl_verl.py). Each is reused from .venv when .venv has its pinned version, else
  # installed here.
  NEEDED="verl TransferQueue ray hydra-core omegaconf antlr4-python3-runtime tensordict torchdata
    pyvers codetiming cachetools colorful fastapi aiohttp aiohappyeyeballs aiosignal frozenlist
    multidict propcache yarl msgpack msgspec protobuf google-api-core google-auth
    googleapis-common-protos opentelemetry-api opentelemetry-sdk opentelemetry-proto
    opentelemetry-semantic-conventions opentelemetry-exporter-prometheus
    opentelemetry-exporter-otlp-proto-common opentelemetry-exporter-otlp-proto-http
    opentelemetry-exporter-otlp-common opentelemetry-exporter-http-transport transformers
    tokenizers huggingface_hub safetensors accelerate peft datasets filelock packaging fsspec
    torch numpy pandas pyarrow PyYAML Jinja2 cloudpickle psutil pyzmq requests starlette uvicorn
    pydantic pydantic_core xxhash dill multiprocess orjson regex tqdm sympy pytest pytest-timeout"
  # shellcheck disable=SC2086
  mapfile -t INSTALL < <(.venv/bin/python - "$PINS" $NEEDED <<'EOF'
import sys, importlib.metadata as md
from packaging.utils import canonicalize_name as canon
from packaging.version import Version
pins = {}
for line in open(sys.argv[1]):
    line = line.split('#')[0].strip()
    if '==' in line: name, ver = line.split('=='); pins[canon(name)] = (name, ver)
for name in dict.fromkeys(sys.argv[2:]):
    if canon(name) not in pins: sys.exit(f'{name} has no pin in {sys.argv[1]}')
    pinned, ver = pins[canon(name)]
    try: have = Version(md.version(name)).public
    except md.PackageNotFoundError: have = None
    if have != Version(ver).public: print(f'{pinned}=={ver}')
EOF
)
  echo "installing ${#INSTALL[@]} distributions into $VENV: ${INSTALL[*]}"
  .venv/bin/python -m pip --python "$VENV/bin/python" install --quiet --no-deps --no-compile \
      -c "$PINS" "${INSTALL[@]}"
  # written after the install, so that pip sees (and never touches) only this venv's own packages
  VSITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  printf '%s\n%s\n' "$PWD/lib" "$SITE" > "$VSITE/zz_envsynth_reuse_dotvenv.pth"
fi
"$VENV/bin/python" -c "import verl, verl.experimental.agent_loop, transfer_queue, envsynth.rollout
print('verl', verl.__version__)"
echo "$want" > "$STAMP"

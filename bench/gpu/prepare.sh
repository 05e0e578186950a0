#!/usr/bin/env bash
# Before the GPU run, on this machine: the shared-traces build and its audit against the benchmark's model folder
# (a Qwen3 config with the embedded tokenizer at /tmp/hfbench/model), into .gpu/ (git-ignored; carried to the device).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-.venv/bin}
TOK=$($BIN/python -c "from harnessfit.models.embedded import ensure_embedded; print(ensure_embedded())")
rm -rf .gpu && mkdir -p .gpu
$BIN/python bench/gpu/model_folder.py --shape qwen3-0.6b --tokenizer "$TOK" --out /tmp/hfbench/model
$BIN/harnessfit build --inputs ../shared/traces --out .gpu/ds > .gpu/build.log
$BIN/harnessfit audit .gpu/ds --model /tmp/hfbench/model --out .gpu/audit > .gpu/audit.log
# the GPU run reads the audit and the train/validation decision points; the rest stays here (64 MiB travel limit)
rm -rf .gpu/ds/sft .gpu/ds/conversations .gpu/ds/parquet .gpu/ds/ledger.jsonl .gpu/ds/decision_points/test.jsonl
du -sh .gpu

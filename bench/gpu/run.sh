#!/usr/bin/env bash
# The prepared GPU run (issue 30): install the carried wheels, then bench/gpu/measure.py; results under $OUT.
#   device: bash bench/gpu/run.sh                       (carry .whl and .gpu; see bench/gpu/README.md)
#   CPU dry run: PY=/path/python SHAPES="tiny tiny" bash bench/gpu/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/hfbench/out}
mkdir -p "$OUT"
PY=${PY:-python3}
if [ -d .whl ] && [ -z "${NO_WHEELS:-}" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    > "$OUT/pip.log" 2>&1 || { echo "wheel install failed"; tail -5 "$OUT/pip.log"; exit 1; }
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD/src PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1 || true
$PY bench/gpu/measure.py --audit .gpu/audit --dataset .gpu/ds --out "$OUT" --shapes ${SHAPES:-qwen3-0.6b qwen3-8b} \
  --budget-s "${BUDGET_S:-470}" ${MEASURE_ARGS:-} 2>&1 | tee "$OUT/measure.log"

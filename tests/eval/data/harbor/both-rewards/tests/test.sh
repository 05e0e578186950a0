#!/bin/bash
# Writes both reward files: Harbor reads reward.json first, so reward.txt (always 0 here) must not decide.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
if python -m pytest -q -p no:cacheprovider /tests/test_total.py; then r=1.0; else r=0.0; fi
echo "{\"reward\": $r, \"style\": 0.5}" > /logs/verifier/reward.json

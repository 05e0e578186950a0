#!/bin/bash
# Harbor verifier: run the checks against /app and write the reward Harbor reads (1 all passed, 0 otherwise).
mkdir -p /logs/verifier
if python3 -I /tests/test_wordfreq.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi

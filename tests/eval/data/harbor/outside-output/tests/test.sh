#!/bin/bash
# the answer lives outside the working folder: the verifier must see what the agent left in /output
mkdir -p /logs/verifier
if [ "$(cat /output/count.txt 2>/dev/null)" = "4" ]; then echo 1 > /logs/verifier/reward.txt; echo "ok /output/count.txt"
else echo 0 > /logs/verifier/reward.txt; echo "FAIL /output/count.txt"; fi

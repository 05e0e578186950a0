#!/bin/bash
# Reference solution: count letter runs case-insensitively, break ties alphabetically.
cat > /app/wordfreq.py <<'PY'
import re
import sys
from collections import Counter


def top_words(text, n=3):
    counts = Counter(re.findall(r"[a-z]+", text.lower()))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        for word, count in top_words(fh.read()):
            print(word, count)
PY

"""The held-apart recall bench runs and says which set it measured (issue 27 item 4); the build's own set is still
fully removed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "redaction_recall.py"


def test_held_apart_recall_is_printed_as_such() -> None:
    proc = subprocess.run([sys.executable, str(BENCH), "--per-kind", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    held, own = out["held_apart"], out["own_set"]
    assert held["set"].startswith("held-apart") and held["planted"] == len(held["by_kind"]) >= 20
    assert 0 <= held["caught"] <= held["planted"] and sorted(held["missed_kinds"]) == held["missed_kinds"]
    assert own["caught"] == own["planted"] > 0

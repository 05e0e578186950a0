"""The report's synth section shows sessions per family and, for --from-eval, which failures drove which data."""

from __future__ import annotations

from pathlib import Path

import orjson

from harnessfit.report.sections.synth import section


def test_section_shows_families_and_targeting(tmp_path: Path) -> None:
    (tmp_path / "synth").mkdir()
    manifest = {
        "stage": "synth",
        "suite": "gen",
        "seeds": 1,
        "pi_version": "1.6.0",
        "files": [{"path": "sessions/golden/a.jsonl", "kind": "golden", "task": "a", "seed": 0, "family": "js_edit"}],
        "skipped": [],
        "sessions_per_family": {"js_edit": 1},
        "notes": {
            "targeting": {
                "run": "<b>eval</b>",
                "episodes": 3,
                "failures": {"turn_cap": 2},
                "weights": {"js_edit": 1.0, "create_module": 2.0},
                "reasons": {"turn_cap": "short loops"},
                "drove": {"turn_cap": ["create_module"]},
                "chosen": {"create_module": 1},
            }
        },
    }
    (tmp_path / "synth" / "manifest.json").write_bytes(orjson.dumps(manifest))
    body = section(tmp_path).body
    assert "Sessions per task family" in body and "js_edit" in body
    assert "turn_cap" in body and "create_module" in body and "short loops" in body
    assert "&lt;b&gt;eval&lt;/b&gt;" in body and "<b>eval</b>" not in body  # escaped
    manifest.pop("notes"), manifest.pop("sessions_per_family")
    (tmp_path / "synth" / "manifest.json").write_bytes(orjson.dumps(manifest))
    assert "Sessions per task family" not in section(tmp_path).body

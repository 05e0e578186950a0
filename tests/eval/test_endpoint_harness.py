"""`harnessfit serve` publishes the harness its model was trained for in /v1/models, and `eval agent --endpoint`
runs that Pi: a conflicting --harness is refused in one line, as it is for --model/--adapter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest

from harnessfit.harness.versions import NEWEST_PI_VERSION
from harnessfit.models.embedded import ensure_embedded
from harnessfit.serve.launcher import start_server

OLD, NEW = "pi@0.73.1", f"pi@{NEWEST_PI_VERSION}"


def _merged_model(tmp_path: Path, harness: str) -> Path:
    """A merged-model folder as `harnessfit export merge` leaves it: the embedded weights (linked) and the record of
    the harness it was trained for."""
    folder = tmp_path / "merged"
    folder.mkdir()
    for f in ensure_embedded().iterdir():
        if f.is_file() and f.name != "harnessfit-model.json":
            (folder / f.name).symlink_to(f)
    (folder / "harnessfit_merged.json").write_bytes(orjson.dumps({"harness": harness}))
    return folder


@pytest.mark.slow
def test_eval_on_an_endpoint_runs_the_pi_its_model_was_trained_for(tmp_path: Path) -> None:
    from harnessfit.eval.run import endpoint_harness

    model = _merged_model(tmp_path, OLD)
    with start_server(str(model), backend="builtin", log_path=tmp_path / "serve.log") as server:
        entry = httpx.get(server.base_url + "/models", timeout=10).json()["data"][0]
        assert entry["harnessfit"]["harness"] == OLD and entry["harnessfit"]["card_sha256"]
        assert endpoint_harness(server.base_url) == OLD
        exe = str(Path(sys.executable).parent / "harnessfit")
        refused = subprocess.run(
            [exe, "eval", "agent", "--endpoint", server.base_url, "--harness", NEW, "--out", str(tmp_path / "e1")],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "400"},
        )
        lines = [ln for ln in refused.stderr.splitlines() if ln.strip()]
        assert refused.returncode == 2 and len(lines) == 1, refused.stderr
        assert f"the model served at {server.base_url} is for {OLD}, but eval agent targets {NEW}" in lines[0]
        assert not (tmp_path / "e1" / "results.json").exists()
        # without --harness the endpoint's own is taken: it runs under 0.73.1 or stops because that Pi is missing
        chosen = subprocess.run(
            [
                exe,
                "eval",
                "agent",
                "--endpoint",
                server.base_url,
                "--task",
                "edit_constant",
                "--max-turns",
                "1",
                "--max-seconds",
                "60",
                "--out",
                str(tmp_path / "e2"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "COLUMNS": "400"},
        )
        from harnessfit.eval.run import served_label

        assert served_label(entry, entry["id"]) == "merged"  # tables name the model, not the URL
        assert served_label({"id": "x"}, "x") == "x"
        if chosen.returncode == 0:
            assert orjson.loads((tmp_path / "e2" / "results.json").read_bytes())["pi_version"] == "0.73.1"
        else:
            assert "Pi 0.73.1 is not installed" in chosen.stderr, chosen.stderr


@pytest.mark.slow
def test_an_endpoint_that_does_not_say_gets_the_default_stated(tmp_path: Path, capfd) -> None:
    from harnessfit.eval.run import _eval_harness

    with start_server("smollm2-135m", backend="builtin", log_path=tmp_path / "serve.log") as server:
        entry = httpx.get(server.base_url + "/models", timeout=10).json()["data"][0]
        assert entry["harnessfit"]["harness"] is None  # a base model: trained for no harness
        capfd.readouterr()
        assert _eval_harness(None, server.base_url, None) == f"pi@{NEWEST_PI_VERSION}"
        assert f"does not say which harness its model was trained for: running {NEW}" in capfd.readouterr().err

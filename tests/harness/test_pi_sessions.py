"""Newer Pi in the loop: the golden solver scores every default task under the newest committed Pi (`eval agent
--harness`), and sessions written by it read back and convert: the golden solver and the contrast model record real
sessions through ``synth`` under the newest committed Pi; the Pi reader turns each into one trajectory (1.x keeps
the system prompt in the session as a ``system`` message), and every trajectory converts against that version's
card with no rejection (contrast sessions, whose first call is double-encoded, are refused for that reason as under
0.73.1). (The default version's sessions are covered by tests/eval and tests/traces.)"""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import orjson
import pytest

from harnessfit.convert.conversation import Conversation
from harnessfit.convert.rejection import Reason, Rejection
from harnessfit.convert.wire import to_conversation
from harnessfit.eval.synth import synth
from harnessfit.harness.card import load_card
from harnessfit.harness.pi import install_pi, installed_package
from harnessfit.harness.versions import NEWEST_PI_VERSION, harness_spec
from harnessfit.traces.readers.pi import PiReader
from harnessfit.traces.trajectory import Trajectory

pytestmark = [pytest.mark.pi, pytest.mark.slow]

SUITE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "default"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    install_pi(NEWEST_PI_VERSION)
    root = tmp_path_factory.mktemp("sessions")
    suite = root / "suite"
    for name in ("create_hello_script", "recover_missing_config"):
        shutil.copytree(SUITE / name, suite / name)
    out = root / "synth"
    manifest = synth(suite, out, seeds=1, workers=2, contrast=True, pi_version=NEWEST_PI_VERSION, progress=False)
    return out, manifest


def test_synth_records_the_version_it_ran(recorded: tuple[Path, dict]) -> None:
    out, manifest = recorded
    assert manifest["skipped"] == [] and len(manifest["files"]) == 4
    assert manifest["pi_version"] == NEWEST_PI_VERSION and manifest["harness"] == harness_spec(NEWEST_PI_VERSION)
    assert manifest["pi_package"] == installed_package(NEWEST_PI_VERSION)
    card = load_card("pi", NEWEST_PI_VERSION)
    for row in manifest["files"]:
        lines = [orjson.loads(x) for x in (out / row["path"]).read_bytes().splitlines() if x.strip()]
        assert lines[0]["type"] == "session" and lines[0]["version"] == card.session["version"]
        seen = {x["type"] for x in lines[1:]}
        assert seen <= set(card.session["entries"]), seen  # the layout the capture recorded, nothing unforeseen


def test_reader_and_converter_handle_every_session(recorded: tuple[Path, dict]) -> None:
    out, manifest = recorded
    card = load_card("pi", NEWEST_PI_VERSION)
    reader = PiReader()
    day = datetime.date.today().isoformat()
    for row in manifest["files"]:
        path = out / row["path"]
        assert reader.detect(path)
        items = list(reader.read(path))
        assert len(items) == 1 and isinstance(items[0], Trajectory), items
        traj = items[0]
        roles = [s.role for s in traj.steps]
        assert "system" not in roles[1:] and all(s.meta.get("unknown_role") is None for s in traj.steps)
        if "system" in card.session["message_roles"]:
            # the system message Pi kept is exactly the prompt the card renders for the session's folder
            assert roles[0] == "system"
            assert traj.steps[0].text == card.render_system_prompt(traj.cwd, day)
        assert roles.count("user") >= 1 and roles[-1] == "assistant"
        conv = to_conversation(traj, card)
        if row["kind"] == "contrast":
            # the first call was a JSON string: 1.x stores {} plus argumentsError, the reader gives back the text
            # as sent, and the call is kept out of SFT data for the same reason as under 0.73.1
            bad = next(c for s in traj.steps for c in s.tool_calls if isinstance(c.arguments, str))
            assert isinstance(orjson.loads(bad.arguments), str)
            assert isinstance(conv, Rejection) and conv.reason == Reason.arguments_double_encoded, conv
            continue
        assert isinstance(conv, Conversation), (row["path"], conv)
        assert conv.messages[0] == {"role": "system", "content": card.render_system_prompt(traj.cwd, traj.date or day)}
        assert sum(1 for m in conv.messages if m["role"] == "system") == 1


def test_golden_solver_scores_every_task_under_the_newest_pi(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from harnessfit.cli import app
    from harnessfit.eval.results import load_results

    install_pi(NEWEST_PI_VERSION)
    out = tmp_path / "golden"
    res = CliRunner().invoke(app, ["eval", "agent", "--model", "scripted:golden", "--suite", str(SUITE), "--out",
                                   str(out), "--workers", "2", "--harness", f"pi@{NEWEST_PI_VERSION}"])
    assert res.exit_code == 0, res.output
    results = load_results(out)
    agg = results.aggregates
    assert results.pi_version == NEWEST_PI_VERSION and agg["scored"] == len(results.episodes) >= 9
    assert agg["rates"]["complete_loop"]["successes"] == agg["scored"], [
        (e.facts.task_id, e.metrics and e.metrics.failure, e.facts.error) for e in results.episodes]
    assert agg["tool_calls"]["invalid"] == 0
    assert f"in Pi {NEWEST_PI_VERSION}: complete loop {agg['scored']}/{agg['scored']}" in res.stdout

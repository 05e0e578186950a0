"""Newer Pi in the loop: the golden solver scores every default task under the newest committed Pi (`eval agent
--harness`), sessions `synth --harness pi@V` records with every committed version convert under their own card
with no rejection, a build for the newest card from 0.73.1 sessions rejects exactly the calls the card diff says
differ, and sessions written by the newest read back and convert: the golden solver and the contrast model record real
sessions through ``synth`` under the newest committed Pi; the Pi reader turns each into one trajectory (1.x keeps
the system prompt in the session as a ``system`` message), and every trajectory converts against that version's
card with no rejection (contrast sessions, whose first call is double-encoded, keep that call as context only: the
newest Pi's refusal is in its card's words). Under every committed version, a session converts to exactly the request
Pi sent (the oracle tests, one with a refused call)."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import orjson
import pytest

from harnessfit.convert.wire import to_conversation
from harnessfit.core.conversation import Conversation
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import load_card
from harnessfit.harness.pi import install_pi, installed_package
from harnessfit.harness.versions import NEWEST_PI_VERSION, PI_CARD_VERSIONS, harness_spec
from harnessfit.synth import synth

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
            # as sent; the newest card writes that refusal, so the call stays in the context (as Pi replays it, {})
            # and is no label, and the recovery after it is
            bad = next(c for s in traj.steps for c in s.tool_calls if isinstance(c.arguments, str))
            assert isinstance(orjson.loads(bad.arguments), str)
            assert isinstance(conv, Conversation), (row["path"], conv)
            assert conv.meta.context_only == [2]
            assert conv.messages[2]["tool_calls"][0]["function"]["arguments"] == "{}"
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
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "agent",
            "--model",
            "scripted:golden",
            "--suite",
            str(SUITE),
            "--out",
            str(out),
            "--workers",
            "2",
            "--harness",
            f"pi@{NEWEST_PI_VERSION}",
        ],
    )
    assert res.exit_code == 0, res.output
    results = load_results(out)
    agg = results.aggregates
    assert results.pi_version == NEWEST_PI_VERSION and agg["scored"] == len(results.episodes) >= 9
    assert agg["rates"]["complete_loop"]["successes"] == agg["scored"], [
        (e.facts.task_id, e.metrics and e.metrics.failure, e.facts.error) for e in results.episodes
    ]
    assert agg["tool_calls"]["invalid"] == 0
    assert f"in Pi {NEWEST_PI_VERSION}: complete loop {agg['scored']}/{agg['scored']}" in res.stdout


def _round_trip(version: str, tmp_path: Path, text: str, script: list, prompt: str) -> tuple[object, list[dict]]:
    """Pi ``version`` runs ``script`` (scripted replies) on a folder holding ``a.txt`` = ``text``; its session file is
    read back and converted against its card. The conversion and every request Pi sent."""
    from harnessfit.harness.pi import pi_command, pi_env, run_pi, write_pi_agent_config
    from harnessfit.harness.scripted import ScriptedEndpoint

    install_pi(version)
    card = load_card("pi", version)
    cwd = tmp_path / "w"
    cwd.mkdir()
    (cwd / "a.txt").write_text(text)
    with ScriptedEndpoint(script, model_id="m") as ep:
        write_pi_agent_config(tmp_path / "h" / ".pi" / "agent", ep.base_url, "m")
        run = run_pi(pi_command(version, "m", prompt, session_dir=tmp_path / "s"), cwd=cwd, env=pi_env(tmp_path / "h"))
    assert run.stop_reason() == "stop" and len(ep.requests) == len(script)
    (session,) = sorted((tmp_path / "s").glob("*.jsonl"))
    (traj,) = list(PiReader().read(session))
    return to_conversation(traj, card), ep.requests


@pytest.mark.parametrize("version", PI_CARD_VERSIONS)
def test_a_session_converts_to_exactly_what_pi_sent(version: str, tmp_path: Path) -> None:
    """The oracle: Pi ``version`` runs a scripted round trip (text, parallel calls, an edit), its session file is read
    back and converted against its card, and the conversation equals the last request Pi sent (plus the final
    answer) — for every session layout the committed versions write."""
    from harnessfit.harness.scripted import Reply

    script = [
        Reply(text="Looking.", tool_calls=[("read", '{"path":"a.txt"}')]),
        Reply(tool_calls=[("bash", '{"command":"wc -l a.txt"}'), ("write", '{"path":"b.txt","content":"hi\\n"}')]),
        Reply(tool_calls=[("edit", '{"path":"b.txt","edits":[{"oldText":"hi","newText":"ho"}]}')]),
        Reply(text="Done."),
    ]
    conv, requests = _round_trip(version, tmp_path, "one\ntwo\n", script, "Do it.")
    assert isinstance(conv, Conversation), conv
    last = requests[-1]
    assert conv.messages[:-1] == last["messages"] and conv.tools == last["tools"]
    assert conv.messages[-1] == {"role": "assistant", "content": "Done."}


@pytest.mark.parametrize("version", PI_CARD_VERSIONS)
def test_a_refused_call_converts_to_exactly_what_pi_sent_after_it(version: str, tmp_path: Path) -> None:
    """The oracle for a refused call: the model's first call is a JSON string of its arguments. Under a Pi whose card
    writes the parse refusal, the session converts to exactly the request Pi sent after the refusal and after the
    retry (the refused turn is context only); under one that does not, the trajectory is cut at that call."""
    from harnessfit.harness.scripted import Reply

    script = [
        Reply(text="Reading.", tool_calls=[("read", orjson.dumps('{"path":"a.txt"}').decode())]),
        Reply(tool_calls=[("read", '{"path":"a.txt"}')]),
        Reply(text="It says one."),
    ]
    conv, requests = _round_trip(version, tmp_path, "one\n", script, "Read a.txt.")
    if "invalid_arguments" not in load_card("pi", version).errors:
        assert isinstance(conv, Rejection) and conv.reason == Reason.arguments_double_encoded, conv
        return
    assert isinstance(conv, Conversation), conv
    assert conv.meta.context_only == [2]
    assert conv.messages[:4] == requests[1]["messages"]  # the context of the retry: what Pi sent
    assert conv.messages[:-1] == requests[-1]["messages"] and conv.tools == requests[-1]["tools"]


SYNTH_TASKS = ("create_hello_script", "edit_constant")  # a write, and a read + edit + bash


@pytest.fixture(scope="module")
def synthesised(tmp_path_factory: pytest.TempPathFactory):
    """``synthesised(version)``: the golden solver's sessions of ``SYNTH_TASKS`` recorded by the real Pi ``version``
    through ``harnessfit synth --harness pi@version`` (recorded once per version and module)."""
    done: dict[str, Path] = {}

    def get(version: str) -> Path:
        if version not in done:
            from typer.testing import CliRunner

            from harnessfit.cli import app

            install_pi(version)
            root = tmp_path_factory.mktemp(f"synth-{version}")
            for name in SYNTH_TASKS:
                shutil.copytree(SUITE / name, root / "suite" / name)
            res = CliRunner().invoke(
                app,
                [
                    "synth",
                    "--suite",
                    str(root / "suite"),
                    "--out",
                    str(root / "out"),
                    "--no-contrast",
                    "--harness",
                    harness_spec(version),
                ],
            )
            assert res.exit_code == 0, res.output
            manifest = orjson.loads((root / "out" / "manifest.json").read_bytes())
            assert manifest["harness"] == harness_spec(version) and manifest["skipped"] == []
            done[version] = root / "out" / "sessions"
        return done[version]

    return get


def _trajectories(sessions: Path) -> list[Trajectory]:
    out = []
    for path in sorted(sessions.rglob("*.jsonl")):
        items = list(PiReader().read(path))
        assert all(isinstance(t, Trajectory) for t in items), items
        out += items
    return out


@pytest.mark.parametrize("version", PI_CARD_VERSIONS)
def test_sessions_of_every_version_convert_under_their_own_card(version: str, synthesised) -> None:
    from harnessfit.harness.pi.recorded import recorded_pi_versions

    card = load_card("pi", version)
    trajectories = _trajectories(synthesised(version))
    assert len(trajectories) == len(SYNTH_TASKS)
    for traj in trajectories:
        assert version in recorded_pi_versions(traj).versions  # the version that wrote it is a candidate
        conv = to_conversation(traj, card)
        assert isinstance(conv, Conversation), conv


def test_a_build_for_the_newest_from_old_sessions_rejects_exactly_the_differing_calls(
    synthesised, tmp_path: Path
) -> None:
    """Sessions recorded by Pi 0.73.1, built for the newest card: the rejected trajectories are exactly those holding
    a call that ``card_diff(0.73.1, newest)`` says differs — its tool answers it differently (the two cards'
    verdicts on the recorded arguments differ where the tool changed) or its recorded result was made from a
    template that changed and cannot be written in the newest's words (``pi_texts.in_target_words``: a variable
    the newest needs is unknown). A changed template whose variables are all known is re-rendered, not rejected:
    0.73.1's write result names the byte count, the newest's does not."""
    from harnessfit.convert.builder import build_draft
    from harnessfit.dataset.build import build_dataset
    from harnessfit.dataset.config import config_from_values
    from harnessfit.harness.diff import card_diff
    from harnessfit.harness.pi_texts import in_target_words

    old, new = load_card("pi", "0.73.1"), load_card("pi", NEWEST_PI_VERSION)
    diff = card_diff(old, new)
    sessions = synthesised("0.73.1")

    def differs(name: str, arguments, result: str) -> str | None:
        verdicts = [[(v.code, v.severity) for v in card.validate_call(name, arguments)] for card in (old, new)]
        if not diff.tool_identical(name) and verdicts[0] != verdicts[1]:
            return "tools"
        key = old.result_key(name, result)
        if key is None or diff.result_identical(key):
            return None
        return diff.texts[key].kind if not isinstance(in_target_words(new, name, result, arguments), str) else None

    expected: dict[str, str] = {}
    for traj in _trajectories(sessions):
        results = {s.tool_call_id: s.text or "" for s in traj.steps if s.role == "tool"}
        calls = [(i, c) for i, s in enumerate(traj.steps) if s.role == "assistant" for c in s.tool_calls]
        differing = [
            (i, c.name, section)
            for i, c in calls
            if (section := differs(c.name, c.arguments, results[c.id])) is not None
        ]
        # call by call: the converter notes exactly these calls (the gate then rejects the trajectory for the first)
        noted = [(n.step, n.name, n.section) for n in build_draft(traj, new).version_mismatches]
        assert noted == differing, (traj.id, noted, differing)
        if differing:
            expected[traj.id] = f"{differing[0][2]} differ: {differing[0][1]}: "
    assert len(expected) < len(SYNTH_TASKS)

    out = tmp_path / "ds"
    report = build_dataset(
        config_from_values(inputs=[str(sessions)], harness=harness_spec(NEWEST_PI_VERSION), parquet=False),
        tmp_path,
        out=out,
    )
    ledger = [orjson.loads(x) for x in (out / "ledger.jsonl").read_bytes().splitlines() if x.strip()]
    assert {r["record_id"] for r in ledger} == set(expected)
    for row in ledger:
        assert row["reason"] == "harness_version_mismatch" and row["detail"].startswith(expected[row["record_id"]])
    assert report.manifest["counts"]["kept"] == len(SYNTH_TASKS) - len(expected)
    # the write results were recorded in 0.73.1's words and are kept in the newest's
    recorded = b"".join(p.read_bytes() for p in sessions.rglob("*.jsonl"))
    built = b"".join(p.read_bytes() for p in (out / "conversations").glob("*.jsonl"))
    assert b" bytes to " in recorded and b"Successfully wrote to " in built and b" bytes to " not in built

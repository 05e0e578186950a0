"""Against the real Pi CLIs: every committed card re-captures byte-equal from its version, and the validator agrees
with what Pi did (the default version and the newest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.harness.card import card_path, load_card
from harnessfit.harness.pi import install_pi
from harnessfit.harness.pi.capture import PROBES, CaptureProbe, run_probes
from harnessfit.harness.versions import NEWEST_PI_VERSION, PI_CARD_VERSIONS

pytestmark = [pytest.mark.pi, pytest.mark.slow]


@pytest.mark.parametrize("version", PI_CARD_VERSIONS)
def test_recapture_equals_committed_card(version: str, tmp_path: Path) -> None:
    install_pi(version)  # kept when present; a fresh machine installs it (and a private node where needed)
    out = tmp_path / "card.json"
    res = CliRunner().invoke(app, ["harness", "capture", "pi", "--version", version, "--out", str(out), "--check"])
    assert res.exit_code == 0, res.output
    assert "capture equals the committed card" in res.stdout
    assert out.read_bytes() == card_path("pi", version).read_bytes()


@pytest.mark.parametrize("version", sorted({"0.73.1", NEWEST_PI_VERSION}))
def test_recapture_of_the_tools_profile_equals_committed_card(version: str, tmp_path: Path) -> None:
    """Pi with grep/find/ls on (ripgrep and fd from `make setup`): the profile's card re-captures byte-equal."""
    install_pi(version)
    out = tmp_path / "card.json"
    res = CliRunner().invoke(
        app, ["harness", "capture", "pi", "--version", version, "--profile", "tools", "--out", str(out), "--check"]
    )
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == card_path("pi", version, "tools").read_bytes()
    card = load_card("pi", version, "tools")
    assert card.format_result("grep_match", path="a.txt", line=2, text="needle one") == "a.txt:2: needle one"


# beyond the capture's own probes: more valid calls and more ways to get a call wrong
EXTRA = [
    CaptureProbe("x_read_offset", "read", '{"path":"hello.txt","offset":2}', True),
    CaptureProbe("x_write_subdir", "write", '{"path":"sub/new.md","content":"# t\\n"}', True),
    CaptureProbe("x_bash_ls", "bash", '{"command":"ls"}', True),
    CaptureProbe(
        "x_edit_extra", "edit", '{"path":"note.txt","edits":[{"oldText":"alpha","newText":"a"}],"extra":true}', False
    ),
    CaptureProbe("x_bash_cmd", "bash", '{"cmd":"ls"}', False),
    CaptureProbe("x_write_list", "write", '{"path":"x.txt","content":["a"]}', False),
    CaptureProbe("x_ls_disabled", "ls", '{"path":"."}', False),
    CaptureProbe("x_command_null", "bash", '{"command":null}', True),
    CaptureProbe("x_limit_empty", "read", '{"path":"hello.txt","limit":""}', True),
    CaptureProbe("x_limit_true", "read", '{"path":"hello.txt","limit":"TRUE"}', True),
    CaptureProbe("x_limit_underscore", "read", '{"path":"hello.txt","limit":"1_0"}', False),
    CaptureProbe("x_limit_list", "read", '{"path":"hello.txt","limit":[1]}', False),
    CaptureProbe("x_limit_word", "read", '{"path":"hello.txt","limit":"ten"}', False),
    CaptureProbe(
        "x_edits_object", "edit", '{"path":"note.txt","edits":{"oldText":"a","newText":"b"}}', True
    ),  # Pi wraps it in a list
]


@pytest.mark.parametrize("version", ["0.73.1", NEWEST_PI_VERSION])  # the oldest card and the newest (the default)
def test_validator_agrees_with_real_pi(version: str, tmp_path: Path) -> None:
    install_pi(version)
    card = load_card("pi", version)
    probes = [*PROBES.values(), *EXTRA]
    # one call per round keeps edits of the same file in order; every round goes through one Pi run
    log = run_probes(version, tmp_path, [[p] for p in probes])
    disagreements = []
    for probe in probes:
        text = log.results[probe.label]
        pi_refused = card.refused(text) is not None
        verdict = card.validate_call(probe.name, probe.arguments)
        expected = probe.runs if version == "0.73.1" else not pi_refused  # `runs` was written for 0.73.1
        if any(v.severity == "error" for v in verdict) != pi_refused or pi_refused == expected:
            disagreements.append((probe.label, [v.code.value for v in verdict], text[:160]))
    assert disagreements == []
    assert len(probes) >= 12
    assert sum(not p.runs for p in probes) >= 6 and sum(p.runs for p in probes) >= 6

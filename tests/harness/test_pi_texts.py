"""The catalogue of Pi-authored texts (``harness.pi_texts``): it agrees with every committed card, each template is
in the source file it cites (for every installed Pi that writes it), and re-rendering puts a recorded text in the
target's words or says why it cannot."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from harnessfit.core.rejection import Failure, Reason
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import card_from_json, load_card
from harnessfit.harness.pi.texts import (
    WORDINGS,
    card_wordings,
    in_target_words,
    parse_text,
    parse_text_fast,
    text_violations,
)

CARDS_DIR = Path(__file__).resolve().parents[2] / "src" / "harnessfit" / "harness" / "cards"
CARDS = sorted(CARDS_DIR.glob("pi-*.json"))
NEW, OLD = load_card("pi", "1.6.0"), load_card("pi", "0.73.1")


@pytest.mark.parametrize("path", CARDS, ids=lambda p: p.stem)
def test_the_catalogue_agrees_with_every_committed_card(path: Path) -> None:
    """Where a card captured a text the catalogue also lists for that release, the two templates are equal."""
    card = card_from_json(path.read_bytes(), str(path))
    captured = {**card.results, **card.errors}
    listed = [w for w in WORDINGS if w.written_by(card.version) and w.key in captured]
    assert listed, card.id
    for w in listed:
        assert w.template == captured[w.key], (card.id, w.key)


def _fragments(template: str) -> list[str]:
    """The template's fixed pieces as its JavaScript source writes them (``\\n`` escaped; the size limits are
    computed there, so they split pieces too)."""
    out = []
    for literal, _, _, _ in string.Formatter().parse(template):
        for piece in re.split(r"50\.0KB|51200", literal):
            if len(piece.strip()) >= 6:
                out.append(piece.replace("\n", "\\n"))
    return out


def _source(version: str, source: str) -> list[Path]:
    card = load_card("pi", version)
    package = Path(card.default_install_dir())
    if not package.is_dir():
        pytest.skip(f"Pi {version} is not installed ({package})")
    sibling, _, rel = source.rpartition(":")
    root = package.parent / sibling if sibling else package
    return sorted(root.glob(rel.split(" ")[0]))


@pytest.mark.parametrize("version", ["0.73.1", "0.79.10", "0.82.0", "1.6.0"])
def test_each_template_is_in_the_source_it_cites(version: str) -> None:
    """For every installed committed Pi: each catalogue wording that release writes is in the file it cites, and
    each one it does not write (an older wording) is not there."""
    checked = 0
    for w in WORDINGS:
        files = _source(version, w.source)
        if not files:
            assert not w.written_by(version), (w.key, w.source)
            continue
        text = "".join(f.read_text(errors="replace") for f in files)
        found = all(piece in text for piece in _fragments(w.template))
        assert found == w.written_by(version), (version, w.key, w.template, [str(f) for f in files])
        checked += found
    assert checked >= 15


def test_an_old_write_text_is_re_rendered_in_the_targets_words() -> None:
    old = "Successfully wrote 12 bytes to src/a.py"
    assert (
        in_target_words(NEW, "write", old, {"path": "src/a.py", "content": "x" * 12})
        == "Successfully wrote to src/a.py"
    )
    assert in_target_words(OLD, "write", old, {"path": "src/a.py"}) is old  # the same wording: kept as it is


def test_a_variable_the_target_needs_comes_from_the_arguments_or_cuts() -> None:
    new = "Successfully wrote to a.txt"
    assert (
        in_target_words(OLD, "write", new, {"path": "a.txt", "content": "héllo😀"})
        == "Successfully wrote 7 bytes to a.txt"
    )  # content.length: UTF-16 code units
    cut = in_target_words(OLD, "write", new, {"path": "a.txt"})
    assert isinstance(cut, Failure) and cut.reason == Reason.harness_version_mismatch
    assert "'Successfully wrote {bytes} bytes to {path}'" in cut.detail and "needs bytes" in cut.detail


@pytest.mark.parametrize(
    "old",
    [
        "Successfully replaced text in p/q.ts. Changed 3 characters to 40 characters.",
        "Successfully replaced text in p/q.ts.",
    ],
)
def test_old_edit_texts_become_block_counts(old: str) -> None:
    args = {"path": "p/q.ts", "oldText": "abc", "newText": "d" * 40}
    assert in_target_words(NEW, "edit", old, args) == "Successfully replaced 1 block(s) in p/q.ts."


def test_read_notices_of_older_pis_are_parsed_not_passed_as_content() -> None:
    body = "one\ntwo"
    old = body + "\n\n[5 more lines in file. Use offset=3 to continue]"
    parsed = parse_text(NEW, "read", old)
    assert parsed is not None and parsed.wording.key == "read_more_lines" and parsed.wording.until == "0.49.3"
    assert (
        in_target_words(NEW, "read", old, {"path": "f", "limit": 2})
        == body + "\n\n[5 more lines in file. Use offset=3 to continue.]"
    )
    # 0.7.x's notice: a read with a limit stopped early; one without stopped at the 2000-line cap
    v07 = body + "\n\n... (5 more lines not shown. Use offset=3 to continue reading)"
    assert (
        in_target_words(NEW, "read", v07, {"path": "f", "limit": 2})
        == body + "\n\n[5 more lines in file. Use offset=3 to continue.]"
    )
    assert (
        in_target_words(NEW, "read", v07, {"path": "f"})
        == body + "\n\n[Showing lines 1-2 of 7. Use offset=3 to continue.]"
    )
    cut = body + "\n\n... (Some lines were truncated to 2000 characters for display)"
    failure = in_target_words(NEW, "read", cut, {"path": "f"})
    assert isinstance(failure, Failure) and "read_lines_cut" in failure.detail
    assert in_target_words(NEW, "read", "plain text]", {"path": "f"}) == "plain text]"


def test_a_read_over_the_targets_limits_is_not_passed() -> None:
    big = "x" * 60_000  # 0.7.x read had no 50 KB cap: Pi 1.6.0 would cut this and add a notice
    failure = in_target_words(NEW, "read", big, {"path": "f"})
    assert isinstance(failure, Failure) and failure.reason == Reason.harness_version_mismatch


def test_an_edit_text_no_release_writes_is_its_own_reason() -> None:
    failure = in_target_words(NEW, "edit", "Edited it, trust me.", {"path": "a", "edits": []})
    assert isinstance(failure, Failure) and failure.reason == Reason.unknown_pi_text
    # bash output is the environment's: any text is a bash result
    assert in_target_words(NEW, "bash", "Edited it, trust me.", {"command": "x"}) == "Edited it, trust me."


def test_texts_the_card_does_not_capture_are_the_releases_own() -> None:
    keys = {w.key for w in card_wordings(NEW)}
    assert {"edit_no_match_multi", "operation_aborted", "tool_blocked", "edit_access_error"} <= keys
    assert "edit_file_not_found" not in keys  # 0.7.6–0.70.6 only
    failure = in_target_words(NEW, "edit", "File not found: a.py", {"path": "a.py", "edits": []})
    assert isinstance(failure, Failure) and "Pi 1.6.0 writes no edit_file_not_found text" in failure.detail


def test_the_verifier_names_each_text_the_target_does_not_write() -> None:
    messages = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "write", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                {"id": "c", "type": "function", "function": {"name": "edit", "arguments": "{}"}},
                {"id": "d", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "Successfully wrote 3 bytes to x"},
        {"role": "tool", "tool_call_id": "b", "content": "x\n\n[1 more lines in file. Use offset=2 to continue]"},
        {"role": "tool", "tool_call_id": "c", "content": "done"},
        {"role": "tool", "tool_call_id": "d", "content": "x\n\n[1 more lines in file. Use offset=2 to continue]"},
    ]
    found = text_violations(NEW, messages)
    assert [v.split(":")[0] for v in found] == ["message 1 (write)", "message 2 (read)", "message 3 (edit)"]
    assert text_violations(OLD, messages[:2]) == []


def _result_texts() -> list[tuple[str, str]]:
    """(tool, result text) of every answered call in the shared Pi sessions, plus every catalogue and card template
    rendered with sample values (so each wording is met at least once)."""
    shared = Path(__file__).resolve().parents[2].parent / "shared"
    out: list[tuple[str, str]] = []
    for path in sorted((shared / "traces" / "pi").glob("*.jsonl")) + sorted(
        (shared / "traces-extra" / "pi").glob("*.jsonl")
    ):
        for traj in PiReader().read(path):
            if not hasattr(traj, "steps"):
                continue
            names = {c.id: c.name for s in traj.steps for c in s.tool_calls}
            out += [(names.get(s.tool_call_id or "", ""), s.text or "") for s in traj.steps if s.role == "tool"]
    samples = {"path": "a.py", "bytes": "12", "content": "x = 1\n", "output": "ok", "n": "2"}
    for w in (*WORDINGS, *card_wordings(NEW), *card_wordings(OLD)):
        names = [n for _, n, _, _ in string.Formatter().parse(w.template) if n]
        text = w.template.format(**{n: samples.get(n, "7") for n in names})
        out += [(tool, text) for tool in ("read", "bash", "edit", "write", w.tool or "read")]
    assert len(out) > 500, len(out)
    return out


def test_the_fast_parse_is_the_definition() -> None:
    """``parse_text_fast`` (candidates ranked once per card and tool) answers as ``parse_text`` on every result of
    the shared Pi sessions and every template, for the newest and an older card."""
    for tool, text in _result_texts():
        for card in (NEW, OLD):
            assert parse_text_fast(card, tool, text) == parse_text(card, tool, text), (card.id, tool, text[:80])

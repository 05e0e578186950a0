"""Which Pi recorded a session, and converting it to another card (``harness.recorded``, the
``harness_version_mismatch`` gate) — on session files written here in each committed version's layout and wording
(the real CLIs' sessions are covered by ``test_pi_sessions``).

A session is treated as recorded by the target when the target is one of the cards that could have written it;
otherwise a call is kept only where ``card_diff`` says what it uses is identical. The expected verdicts below are
computed from ``card_diff`` and the cards alone, never from the gate."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from _helpers.pi_sessions import Call
from _helpers.pi_sessions import keeps_system as _keeps_system
from _helpers.pi_sessions import ordinary_calls as _ordinary_calls
from _helpers.pi_sessions import write_session as _write_session
from harnessfit.convert.wire import to_conversation
from harnessfit.core.conversation import Conversation
from harnessfit.core.rejection import Failure, Reason, Rejection
from harnessfit.formats.pi.reader import PiReader
from harnessfit.formats.registry import detect_format, iter_units
from harnessfit.harness.card import HarnessCard, load_card
from harnessfit.harness.diff import card_diff
from harnessfit.harness.pi.recorded import Recorded, recorded_pi_versions
from harnessfit.harness.pi.texts import in_target_words, text_violations
from harnessfit.harness.versions import PI_CARD_VERSIONS


def _read(path: Path):
    (traj,) = list(PiReader().read(path))
    return traj


def _expected_difference(x: HarnessCard, y: HarnessCard, call: Call) -> str | None:
    """What ``harness diff x y`` says about one recorded call: the section that differs for it, or None."""
    name, arguments, result = call
    diff = card_diff(x, y)
    if not diff.tool_identical(name):
        verdict = [[(v.code, v.severity) for v in c.validate_call(name, arguments)] for c in (x, y)]
        if verdict[0] != verdict[1]:
            return "tools"
    key = x.result_key(name, result)
    # a Pi-authored text that differs is re-rendered in y's words (harness.pi_texts) unless that cannot be done
    if (
        key is not None
        and not diff.result_identical(key)
        and isinstance(in_target_words(y, name, result, arguments), Failure)
    ):
        return diff.texts[key].kind
    return None


def test_a_1x_session_is_pinned_by_its_system_message(tmp_path: Path) -> None:
    newest = PI_CARD_VERSIONS[-1]
    traj = _read(_write_session(tmp_path / "s.jsonl", newest, _ordinary_calls(newest)))
    assert traj.steps[0].meta["tool_parameters"]["edit"] == load_card("pi", newest).schema("edit")
    assert recorded_pi_versions(traj) == Recorded((newest,), "system message")
    # a prompt no committed card renders (say, extra instructions): only the layout family is known
    other = _read(_write_session(tmp_path / "o.jsonl", newest, _ordinary_calls(newest), prompt_suffix="\nBe terse."))
    family = tuple(v for v in PI_CARD_VERSIONS if _keeps_system(load_card("pi", v)))
    assert recorded_pi_versions(other) == Recorded(family, "session layout")


def test_a_0x_session_is_its_layout_family_narrowed_by_what_pi_refused(tmp_path: Path) -> None:
    family = tuple(v for v in PI_CARD_VERSIONS if not _keeps_system(load_card("pi", v)))
    assert len(family) >= 3  # 0.73.1, 0.79.10 and 0.82.0 write the same keys
    traj = _read(_write_session(tmp_path / "s.jsonl", family[0], _ordinary_calls(family[0])))
    assert recorded_pi_versions(traj) == Recorded(family, "session layout")
    # an edit with a property the schema does not name: the versions whose edit schema forbids extra properties
    # refuse it, the others ignore the property and run the edit — the recorded answer tells them apart
    extra = {"path": "a.txt", "edits": [{"oldText": "one", "newText": "1"}], "note": "x"}
    refusing = tuple(
        v for v in family if any(x.severity == "error" for x in load_card("pi", v).validate_call("edit", extra))
    )
    assert refusing and refusing != family
    first = load_card("pi", refusing[0])
    refused = first.validation_failed_text("edit", [("note", "schema is false")], extra)
    ran = first.format_result("edit", count=1, path="a.txt")
    for answer, expected in ((refused, refusing), (ran, tuple(v for v in family if v not in refusing))):
        t = _read(_write_session(tmp_path / "e.jsonl", family[0], [("edit", extra, answer)]))
        assert recorded_pi_versions(t) == Recorded(expected, "session layout and refusals")


def test_a_result_only_one_candidate_words_that_way_pins_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # two releases of one layout family that differ only in the wording of a write result (a release after 0.82.0
    # that rewords it, as 1.6.0 did, is made here from the 0.82.0 card): the recorded text tells them apart
    from harnessfit.harness.pi import recorded

    real = recorded.committed_card
    base = real("0.82.0")
    reworded = base.model_copy(
        update={"version": "0.82.99", "results": {**base.results, "write": "Wrote {bytes} bytes to {path}"}}
    )
    monkeypatch.setattr(recorded, "committed_card", lambda v: reworded if v == "0.82.99" else real(v))
    family = ("0.82.0", "0.82.99")
    traj = _read(_write_session(tmp_path / "s.jsonl", "0.82.0", _ordinary_calls("0.82.0")))
    assert recorded_pi_versions(traj, family) == Recorded(("0.82.0",), "session layout and results")
    calls = [
        c if c[0] != "write" else ("write", c[1], reworded.format_result("write", bytes=3, path="b.txt"))
        for c in _ordinary_calls("0.82.0")
    ]
    traj = _read(_write_session(tmp_path / "r.jsonl", "0.82.0", calls))
    assert recorded_pi_versions(traj, family) == Recorded(("0.82.99",), "session layout and results")
    # without a write, nothing tells them apart
    traj = _read(_write_session(tmp_path / "n.jsonl", "0.82.0", [c for c in calls if c[0] != "write"]))
    assert recorded_pi_versions(traj, family) == Recorded(family, "session layout")


@pytest.mark.parametrize(("source", "target"), list(itertools.product(PI_CARD_VERSIONS, repeat=2)))
def test_converting_across_versions_rejects_exactly_what_the_diff_names(
    tmp_path: Path, source: str, target: str
) -> None:
    calls = _ordinary_calls(source)
    traj = _read(_write_session(tmp_path / "s.jsonl", source, calls))
    x, y = load_card("pi", source), load_card("pi", target)
    # the cards that could have written this session: its layout family (the system message pins a 1.x one)
    family = [v for v in PI_CARD_VERSIONS if _keeps_system(load_card("pi", v)) == _keeps_system(x)]
    if _keeps_system(x):
        family = [source]
    expected = (
        []
        if target in family
        else [
            (call[0], section)
            for call in calls
            for v in family
            if (section := _expected_difference(load_card("pi", v), y, call)) is not None
        ]
    )
    conv = to_conversation(traj, y)
    if not expected:
        assert isinstance(conv, Conversation), conv
        assert f"pi.recorded:{'|'.join(family)}" in conv.meta.transformations
        assert text_violations(y, conv.messages) == []  # every Pi-authored text is y's
        return
    assert isinstance(conv, Rejection) and conv.reason == Reason.harness_version_mismatch, conv
    name, section = expected[0]  # the first call that differs decides, with the diff section it differs in
    assert conv.detail.startswith(f"{section} differ: {name}: ") and f"pi@{target}" in conv.detail, conv.detail
    assert "--harness" in conv.repair_hint


def test_every_version_pair_either_keeps_or_rewords_the_texts() -> None:
    # the matrix above is not vacuous: across the committed cards some conversions re-render a Pi-authored text
    # (0.x's write result in 1.x's words and back) and some keep every text as recorded
    outcomes = set()
    for source, target in itertools.product(PI_CARD_VERSIONS, repeat=2):
        y = load_card("pi", target)
        outcomes.add(any(in_target_words(y, n, r, a) != r for n, a, r in _ordinary_calls(source)))
    assert outcomes == {True, False}


def test_a_reworded_schema_keeps_the_calls_it_does_not_change(tmp_path: Path) -> None:
    # bash's parameter description changed after 0.82.0; a call is answered the same, so it converts
    family = [v for v in PI_CARD_VERSIONS if not _keeps_system(load_card("pi", v))]
    newest = load_card("pi", PI_CARD_VERSIONS[-1])
    assert not card_diff(load_card("pi", family[-1]), newest).tool_schema_identical("bash")
    calls = [c for c in _ordinary_calls(family[0]) if c[0] in ("read", "bash")]
    conv = to_conversation(_read(_write_session(tmp_path / "s.jsonl", family[0], calls)), newest)
    assert isinstance(conv, Conversation), conv


def test_other_agents_traces_have_no_pi_version(traces_dir: Path) -> None:
    from harnessfit.convert.builder import build_draft
    from harnessfit.formats.registry import detect_format, get_reader

    newest = load_card("pi", PI_CARD_VERSIONS[-1])
    seen = 0
    for unit in iter_units([traces_dir / "claude_code", traces_dir / "codex"]):
        for traj in get_reader(detect_format(unit.path) or "").read(unit.path):
            if isinstance(traj, Rejection):
                continue
            draft = build_draft(traj, newest)
            assert draft.version_mismatches == [] and not any(
                t.startswith("pi.recorded") for t in draft.transformations
            )
            seen += 1
    assert seen >= 3


def test_the_shared_verdict_memo_gives_the_plain_answers(traces_dir: Path) -> None:
    """``call_difference`` with one call's memo shared across every candidate version (what the converter does)
    equals the plain definition (``card.validate_call`` / ``result_key`` per card, no memo) for every call of the
    real Pi sessions, against every committed target; and ``_agrees``/``_templated`` with the memo pick the same
    recording versions as without it."""
    from harnessfit.harness.pi import recorded as rec

    checked = 0
    for path in sorted((traces_dir / "pi").glob("*.jsonl")):
        for traj in (t for t in PiReader().read(path) if not isinstance(t, Rejection)):
            calls = rec._answered_calls(traj)
            memo = [{} for _ in calls]
            for v in PI_CARD_VERSIONS:
                assert rec._agrees(v, calls, memo) == rec._agrees(v, calls)
                assert rec._templated(v, calls, memo) == rec._templated(v, calls)
            for target in (load_card("pi", v) for v in PI_CARD_VERSIONS):
                for name, arguments, result in calls[:60]:
                    shared: dict = {}
                    for v in PI_CARD_VERSIONS:
                        plain = rec.call_difference(v, target, name, arguments, result)
                        assert rec.call_difference(v, target, name, arguments, result, shared) == plain
                        checked += 1
    assert checked > 500


def test_shared_candidate_checks_pick_the_plain_definitions_versions(traces_dir: Path) -> None:
    """``recorded_pi_versions`` with its shared answers (one verdict per call and card class, one ``_agrees`` /
    ``_templated`` per candidate class) names the same versions, decided the same way, as the plain definition on
    every Pi session of both trace sets and for every subset of the committed versions."""
    from harnessfit.harness.pi import recorded as rec

    subsets = [PI_CARD_VERSIONS] + [tuple(c) for n in (2, 3) for c in itertools.combinations(PI_CARD_VERSIONS, n)]
    seen = 0
    for folder in (traces_dir, traces_dir.parent / "traces-extra"):
        for path in sorted(folder.rglob("*.jsonl")):
            if detect_format(path) != "pi":
                continue
            for traj in (t for t in PiReader().read(path) if not isinstance(t, Rejection)):
                for versions in subsets:
                    assert rec.recorded_pi_versions(traj, versions) == rec.recorded_pi_versions(
                        traj, versions, shared=False
                    ), (path.name, versions)
                seen += 1
    assert seen >= 5


def test_descriptions_change_no_verdict_key_but_a_property_named_description_does() -> None:
    from harnessfit.harness.pi.recorded import _validation_schema

    schema = {
        "type": "object",
        "description": "d",
        "required": ["description"],
        "properties": {
            "description": {"type": "string", "description": "the text"},
            "items": {"type": "array", "items": {"type": "integer", "description": "n"}},
        },
    }
    assert _validation_schema(schema) == {
        "type": "object",
        "required": ["description"],
        "properties": {"description": {"type": "string"}, "items": {"type": "array", "items": {"type": "integer"}}},
    }

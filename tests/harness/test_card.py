"""The committed HarnessCard: identity, exact prompt rendering, result texts, and the validator's verdicts."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.harness.card import HarnessCard, ViolationCode, card_path, load_card
from harnessfit.harness.versions import PI_CARD_VERSIONS


@pytest.fixture(scope="module")
def card() -> HarnessCard:
    return load_card("pi", "0.73.1")


def test_card_identity_and_round_trip(card: HarnessCard) -> None:
    assert card.id == "pi-0.73.1"
    assert card.to_json_bytes() == card_path("pi", "0.73.1").read_bytes()  # stored bytes are the canonical form
    assert len(card.sha256) == 64 and card.sha256 == load_card("pi", "0.73.1").sha256
    assert card.default_tools == ["read", "bash", "edit", "write"]
    assert card.request["keys"] == ["model", "messages", "stream", "stream_options", "max_tokens", "tools"]
    edit = next(t for t in card.tools if t["function"]["name"] == "edit")
    assert list(edit) == ["type", "function"] and edit["function"]["strict"] is False
    assert edit["function"]["parameters"]["additionalProperties"] is False


def test_render_system_prompt_places_variables(card: HarnessCard) -> None:
    prompt = card.render_system_prompt("/srv/project", "2025-03-04", install_dir="/opt/pi")
    assert prompt.startswith("You are an expert coding assistant operating inside pi")
    assert prompt.endswith("Current date: 2025-03-04\nCurrent working directory: /srv/project")
    assert prompt.count("/opt/pi/") == 3 and "{" + "install_dir" not in prompt
    default = card.render_system_prompt("/srv/project", "2025-03-04")
    assert card.default_install_dir() in default and card.default_install_dir().endswith(
        "@mariozechner/pi-coding-agent"
    )
    with_ctx = card.render_system_prompt(
        "/srv/project",
        "2025-03-04",
        [("/srv/project/AGENTS.md", "Use {braces}.\n"), ("/srv/x/AGENTS.md", "b\n")],
        install_dir="/opt/pi",
    )
    assert "# Project Context" in with_ctx and "## /srv/project/AGENTS.md\n\nUse {braces}.\n" in with_ctx
    assert (
        with_ctx.index("/srv/project/AGENTS.md") < with_ctx.index("/srv/x/AGENTS.md") < with_ctx.index("Current date")
    )
    assert "# Project Context" not in prompt


def test_format_result_templates(card: HarnessCard) -> None:
    assert card.format_result("bash_exit_code", output="boom\n", code=2) == "boom\n\n\nCommand exited with code 2"
    assert card.format_result("bash_no_output") == "(no output)"
    assert card.format_result("read_more_lines", content="a\nb", remaining=5, next_offset=3) == (
        "a\nb\n\n[5 more lines in file. Use offset=3 to continue.]"
    )
    assert card.format_result("file_not_found", abs_path="/w/x") == "ENOENT: no such file or directory, access '/w/x'"
    assert card.format_result("tool_not_found", name="grep") == "Tool grep not found"
    assert card.format_result("write", bytes=3, path="a") == "Successfully wrote 3 bytes to a"
    assert card.format_result("edit", count=1, path="f.py") == "Successfully replaced 1 block(s) in f.py."
    assert card.format_result("no_result") == "No result provided"
    assert card.validation_failed_text("read", [("root", "must be object")], "x") == (
        'Validation failed for tool "read":\n  - root: must be object\n\nReceived arguments:\n"x"'
    )
    for key in ("read", "read_truncated_lines", "read_truncated_bytes", "bash", "edit_no_match", "validation_failed"):
        assert key in card.results or key in card.errors
    with pytest.raises(KeyError, match="no result/error text"):
        card.format_result("nope")


def _codes(found) -> list[tuple[str, str]]:
    return [(v.code.value, v.severity) for v in found]


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("read", '{"path":"a"}', []),
        ("read", {"path": "a", "offset": 2, "limit": 3}, []),
        ("grep", '{"pattern":"x"}', [("unknown_tool", "error")]),
        ("read", json.dumps('{"path":"a"}'), [("arguments_double_encoded", "error")]),
        ("read", '"just text"', [("arguments_not_object", "error")]),
        ("read", "[1]", [("arguments_not_object", "error")]),
        ("read", "nope", [("invalid_json", "error"), ("missing_required", "error")]),
        ("write", '{"path":"a"}', [("missing_required", "error")]),
        ("read", '{"path":"a","limit":"x"}', [("wrong_type", "error")]),
        ("edit", '{"path":"a","edits":[]}', [("invalid_value", "error")]),
        ("edit", '{"path":"a","edits":[{"oldText":"x","newText":"y"}],"mode":1}', [("unexpected_property", "error")]),
        ("edit", '{"path":"a","oldText":"x","newText":"y"}', [("legacy_edit_arguments", "warning")]),
        (
            "edit",
            '{"path":"a","edits":"[{\\"oldText\\":\\"x\\",\\"newText\\":\\"y\\"}]"}',
            [("edits_json_string", "warning")],
        ),
        ("read", '{"path":"a","limit":"10"}', [("coerced_type", "warning")]),
        ("bash", '{"command":"ls","timeout":"5"}', [("coerced_type", "warning")]),
        ("read", '{"path":"a"', [("repaired_truncated_json", "warning")]),
        ("read", '{"path":"a\nb"}', [("repaired_json_string", "warning")]),
        ("bash", '{"command":"ls","cwd":"/"}', [("ignored_property", "warning")]),
        ("edit", '{"path":"a","edits":{"oldText":"x","newText":"y"}}', [("coerced_type", "warning")]),
        ("bash", '{"command":null}', [("coerced_type", "warning")]),
        ("read", '{"path":"a","limit":"1_0"}', [("wrong_type", "error")]),
        ("read", '{"path":"a","limit":""}', [("coerced_type", "warning")]),
        ("read", '{"path":"a","limit":"TRUE"}', [("coerced_type", "warning")]),
        ("read", '{"path":"a","limit":[1]}', [("wrong_type", "error")]),
    ],
)
def test_validate_call_codes(card: HarnessCard, name: str, arguments, expected) -> None:
    found = card.validate_call(name, arguments)
    assert _codes(found) == expected
    assert all(v.code in ViolationCode for v in found)


def test_validate_call_respects_active_tools(card: HarnessCard) -> None:
    assert _codes(card.validate_call("bash", '{"command":"ls"}', active_tools=["read"])) == [("unknown_tool", "error")]


def test_cli_render_and_card_and_validate(card: HarnessCard, tmp_path) -> None:
    runner = CliRunner()
    ctx = tmp_path / "AGENTS.md"
    ctx.write_text("Be nice.\n")
    res = runner.invoke(
        app,
        [
            "harness",
            "render",
            "--version",
            "0.73.1",
            "--cwd",
            "/w",
            "--date",
            "2024-02-29",
            "--json",
            "--context-file",
            str(ctx),
        ],
    )
    assert res.exit_code == 0, res.output
    out = orjson.loads(res.stdout)
    assert out["tools"] == card.tools
    assert out["system"] == card.render_system_prompt("/w", "2024-02-29", [(str(ctx), "Be nice.\n")])
    plain = runner.invoke(app, ["harness", "render", "--version", "0.73.1", "--cwd", "/w", "--date", "2024-02-29"])
    assert plain.exit_code == 0 and plain.stdout.startswith(card.render_system_prompt("/w", "2024-02-29"))
    bad = runner.invoke(app, ["harness", "render", "--date", "29.02.2024"])
    assert bad.exit_code != 0
    summary = runner.invoke(app, ["harness", "card", "--version", "0.73.1"])
    assert summary.exit_code == 0 and card.sha256 in summary.stdout
    assert runner.invoke(app, ["harness", "validate", "read", '{"path":"a"}']).exit_code == 0
    refused = runner.invoke(app, ["harness", "validate", "read", json.dumps('{"path":"a"}')])
    assert refused.exit_code == 1 and "arguments_double_encoded" in refused.stdout


@pytest.mark.parametrize("sub", ["install", "capture", "render", "card", "validate", "diff"])
def test_every_subcommand_has_help(sub: str) -> None:
    res = CliRunner().invoke(app, ["harness", sub, "--help"])
    assert res.exit_code == 0 and len(res.stdout.split("Usage:")[1]) > 80


def test_refused_agrees_with_every_captured_example(card: HarnessCard) -> None:
    # the committed examples record whether real Pi ran the tool: a refusal text is exactly a call it did not run
    assert len(card.examples) >= 12
    for ex in card.examples:
        assert (card.refused(ex["result"]) is not None) == (not ex["ran"]), ex["label"]
    assert card.refused("Tool grep not found") == "tool_not_found"
    assert card.refused("Edit tool input is invalid. edits must contain at least one replacement.") == "edit_empty"
    problems = card.validation_failed_text("read", [("path", "must be string")], {"path": [1]})
    assert card.refused(problems) == "validation_failed"
    # texts of tools that ran (and failed) are not refusals, nor is a refusal text with something appended
    assert card.refused(card.format_result("edit_no_match", path="a.py")) is None
    assert card.refused(card.format_result("file_not_found", abs_path="/w/a")) is None
    assert card.refused("Tool grep not found\nbut then some output") is None


# -- the clean-call shortcut agrees with the full validator ---------------------------------------------------

_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-3, 3, allow_nan=False),
    st.text(max_size=4),
    st.sampled_from(["1", "true", "0", " 2 ", "[]"]),
)
_edit_entry = st.dictionaries(st.sampled_from(["oldText", "newText", "extra"]), _json_scalars, max_size=3)
_json_values = st.one_of(_json_scalars, st.lists(st.one_of(_edit_entry, _json_scalars), max_size=3), _edit_entry)
_arguments = st.dictionaries(
    st.sampled_from(["path", "offset", "limit", "command", "timeout", "edits", "content", "oldText", "newText", "x"]),
    _json_values,
    max_size=4,
)


def _full_only(card):
    import copy

    import jsonschema

    full = copy.deepcopy(card)
    full._validators = {
        n: (card.schema(n), jsonschema.Draft7Validator(card.schema(n)), None) for n in card.tool_names()
    }
    return full


_FULL_ONLY: dict = {}


@settings(max_examples=600, deadline=None)
@given(
    version=st.sampled_from(PI_CARD_VERSIONS),
    name=st.sampled_from(["read", "bash", "edit", "write"]),
    arguments=_arguments,
)
@pytest.mark.slow
def test_clean_shortcut_matches_full_validation(version, name, arguments):
    # the shortcuts (a clean call returns at once; a repaired call of the schema's shape skips coercion and the
    # schema validator) give the full validator's answer, and leave the caller's arguments as they were
    card = load_card("pi", version)
    full = _FULL_ONLY.setdefault(version, _full_only(card))
    before = json.dumps(arguments)
    assert card.validate_call(name, arguments) == full.validate_call(name, arguments)
    if name in card.tool_names() and isinstance(arguments, dict):
        assert card.repair_arguments(name, arguments) == full.repair_arguments(name, arguments)
    assert json.dumps(arguments) == before


def test_clean_shortcut_covers_well_formed_calls_and_skips_odd_schemas():
    from harnessfit.harness.card import _clean_checker

    card = load_card("pi", "0.73.1")
    edit = _clean_checker(card.schema("edit"))
    assert edit({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})
    assert not edit({"path": "a", "edits": [{"oldText": "x", "newText": "y", "z": 1}]})
    assert not edit({"path": "a", "edits": "[]"}) and not edit({"path": "a"})
    read = _clean_checker(card.schema("read"))
    assert read({"path": "a", "offset": 3, "limit": 2.5}) and not read({"path": "a", "offset": True})
    assert _clean_checker({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}) is None
    assert card.validate_call("edit", {"path": "a", "edits": []})[0].code == "invalid_value"


# -- result_key's faster search gives the reference search's answer ---------------------------------------------


def _texts_for(card: HarnessCard) -> list[str]:
    """Texts every template of ``card`` can make (each variable empty, short, or holding another template's fixed
    text), the captured examples' results, and texts that almost match (a character added or removed)."""
    import string

    fills = ["", "x", "\n", "a.py", "12"] + [
        lit
        for t in [*card.results.values(), *card.errors.values()]
        for lit, _, _, _ in string.Formatter().parse(t)
        if lit
    ][:20]
    texts = [ex["result"] for ex in card.examples]
    for template in [*card.results.values(), *card.errors.values()]:
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
        for fill in fills:
            try:
                text = template.format(**{n: fill for n in names})
            except (KeyError, IndexError, ValueError):
                continue
            texts += [text, text + " ", text[1:], text[:-1]]
    return texts


@pytest.mark.parametrize("version", PI_CARD_VERSIONS)
def test_result_key_matches_its_reference_search(version: str, traces_dir) -> None:
    from harnessfit.formats.registry import iter_units, read_unit

    card = load_card("pi", version)
    texts = _texts_for(card)
    for unit in iter_units([traces_dir]):  # and every tool result recorded in the real traces
        for item in read_unit(unit):
            for step in getattr(item, "steps", []):
                if step.role == "tool" and step.text:
                    texts.append(step.text)
    assert len(texts) > 500
    tools = [*card.tool_names(), "grep", "unknown"]
    found = 0
    for text in texts:
        for tool in tools:
            key = card.result_key(tool, text)
            assert key == card.result_key_reference(tool, text), (tool, text[:200])
            found += key is not None
    assert found > len(texts)  # most texts are made by some template

"""``card_diff`` and ``harnessfit harness diff`` on the committed cards: identical cards compare identical, and the
differences the captures found between 0.73.1 and 1.6.0 are named in the right sections and queryable per tool and
per result text."""

from __future__ import annotations

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.errors import UserError
from harnessfit.harness.card import HarnessCard, load_card
from harnessfit.harness.diff import SECTIONS, card_diff, prompt_template_text
from harnessfit.harness.versions import PI_CARD_VERSIONS


@pytest.fixture(scope="module")
def old() -> HarnessCard:
    return load_card("pi", "0.73.1")


@pytest.fixture(scope="module")
def new() -> HarnessCard:
    return load_card("pi", "1.6.0")


@pytest.mark.parametrize("version", PI_CARD_VERSIONS)
def test_a_card_equals_itself(version: str) -> None:
    card = load_card("pi", version)
    diff = card_diff(card, card)
    assert diff.identical and diff.differing() == [] and tuple(diff.sections) == SECTIONS
    assert all(diff.tool_identical(n) and diff.tool_schema_identical(n) for n in card.tool_names())
    assert all(diff.result_identical(k) for k in [*card.results, *card.errors])
    assert "identical" in diff.render().splitlines()[0]


def test_old_to_new_names_the_real_differences(old: HarnessCard, new: HarnessCard) -> None:
    diff = card_diff(old, new)
    assert not diff.identical
    assert {"runtime", "prompt", "tools", "results", "errors", "behaviour", "session"} <= set(diff.differing())
    assert any("@earendil-works" in line for line in diff.sections["runtime"].changes)
    prompt = diff.sections["prompt"]
    assert "prompt variables removed: date" in prompt.changes
    assert "-You are an expert coding assistant" in prompt.unified and "{cwd}" in prompt.unified
    # per tool: edit's schema lost additionalProperties:false, read's schema is the same JSON
    assert diff.tool_schema_identical("read") and not diff.tool_identical("read")
    assert not diff.tool_schema_identical("edit")
    assert any("additionalProperties" in c for c in diff.tools["edit"].changes)
    assert not diff.tool_schema_identical("no_such_tool")
    # per text: bash's exit-code text is unchanged, write's lost the byte count, invalid_arguments is new
    assert diff.result_identical("bash_exit_code") and diff.result_identical("no_result")
    assert not diff.result_identical("write") and diff.texts["write"].status == "changed"
    assert diff.texts["invalid_arguments"].status == "added"
    behaviour = "\n".join(diff.sections["behaviour"].changes)
    assert "truncated_json" in behaviour and "pi-0.73.1 runs it, pi-1.6.0 refuses it" in behaviour
    assert "message roles added: system" in diff.sections["session"].changes
    assert card_diff(new, old).texts["invalid_arguments"].status == "removed"


def test_prompt_template_text_shows_variables(old: HarnessCard) -> None:
    text = prompt_template_text(old)
    assert "{cwd}" in text and "{date}" in text and "{install_dir}" in text and "{context}" in text
    assert text.replace("{cwd}", "/w").replace("{date}", "2025-01-02").replace("{install_dir}", "/p").replace(
        "{context}", ""
    ) == old.render_system_prompt("/w", "2025-01-02", install_dir="/p")


def test_cli_diff_text_and_json(old: HarnessCard, new: HarnessCard) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["harness", "diff", "pi@0.73.1", "pi@1.6.0"])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0].startswith("pi-0.73.1 → pi-1.6.0:") and "== tools: differs" in res.stdout
    js = runner.invoke(app, ["harness", "diff", "pi@0.73.1", "pi@1.6.0", "--json"])
    data = orjson.loads(js.stdout)
    assert data["a"] == "pi-0.73.1" and data["differing_sections"] == card_diff(old, new).differing()
    assert data["tools"]["read"]["schema_identical"] is True and data["texts"]["write"]["status"] == "changed"
    missing = runner.invoke(app, ["harness", "diff", "pi@0.73.1", "pi@9.9.9"])
    assert isinstance(missing.exception, UserError) and "no harness card for pi 9.9.9" in str(missing.exception)
    bare = runner.invoke(app, ["harness", "diff", "pi", "pi@1.6.0"])
    assert isinstance(bare.exception, UserError) and "pi@VERSION" in str(bare.exception)


def test_key_order_and_wording_are_told_apart(old: HarnessCard) -> None:
    # Pi 0.69 reordered schema keys ({description, type} → {type, description}): same JSON value, other text
    tools = orjson.loads(orjson.dumps(old.tools))
    path = tools[0]["function"]["parameters"]["properties"]["path"]
    tools[0]["function"]["parameters"]["properties"]["path"] = dict(reversed(list(path.items())))
    tools[1]["function"]["description"] = "Run a command."
    other = old.model_copy(update={"tools": tools, "version": "0.0.1"})
    diff = card_diff(old, other)
    read, bash = old.tools[0]["function"]["name"], old.tools[1]["function"]["name"]
    assert not diff.tool_schema_identical(read) and any("another order" in c for c in diff.tools[read].changes)
    assert diff.tool_schema_identical(bash) and not diff.tool_identical(bash)
    assert diff.tools[bash].changes == ["description reworded"]
    assert diff.differing() == ["tools"]

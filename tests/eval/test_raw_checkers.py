"""Raw checkers on planted answers: each answer that breaks one rule is caught by exactly that rule, clean ones pass.

The checkers are the real toolchains (the pinned svelte compiler and @sveltejs/mcp autofixer under Node, py_compile
and the pinned ruff), so these tests also prove the toolchain installs and runs offline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.errors import UserError
from harnessfit.eval.raw import checker_for, extract
from harnessfit.eval.raw.extract import Block, find_blocks
from harnessfit.eval.raw.svelte_rules import POLICY_RULES
from harnessfit.eval.raw.toolchain import install_svelte, svelte_toolchain, svelte_toolchain_dir

SV_TAGS = ("svelte", "html")

# -- extraction and output shape ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "codes", "code", "source"),
    [
        ("```svelte\n<p>hi</p>\n```", [], "<p>hi</p>", "tagged_block"),
        ("\n```\n<p>hi</p>\n```\n\n", [], "<p>hi</p>", "first_block"),
        ("<p>hi</p>", ["no_code_block"], "<p>hi</p>", "whole_answer"),
        ("Here it is:\n```svelte\n<p>hi</p>\n```", ["text_outside_block"], "<p>hi</p>", "tagged_block"),
        ("<think>easy</think>\n```svelte\n<p>hi</p>\n```", ["text_outside_block"], "<p>hi</p>", "tagged_block"),
        ("```js\nlet a;\n```\n```svelte\n<p>hi</p>\n```", ["several_code_blocks"], "<p>hi</p>", "tagged_block"),
        ("```svelte\n<p>hi</p>", ["unterminated_block"], "<p>hi</p>", "tagged_block"),
        ("```jsx\n<p>hi</p>\n```", ["wrong_language_tag"], "<p>hi</p>", "first_block"),
        ("```svelte\n\n```", ["empty_block"], "", "tagged_block"),
        ("```svelte\r\n<p>hi</p>\r\n```\r\n", [], "<p>hi</p>", "tagged_block"),
    ],
)
def test_shape_findings_and_extraction_rule(answer: str, codes: list[str], code: str, source: str) -> None:
    ex = extract(answer, SV_TAGS)
    assert [f.code for f in ex.shape.findings] == codes
    assert ex.shape.clean is (not codes)
    assert ex.code == code and ex.source == source


@pytest.mark.parametrize("fence", ["```", "````", "~~~", "~~~~~"])
@pytest.mark.parametrize("indent", ["", " ", "   "])
@pytest.mark.parametrize("info", ["svelte", "Svelte title=App.svelte", " svelte "])
def test_fence_layouts_extract_the_same_code(fence: str, indent: str, info: str) -> None:
    body = "<script>\n  let a = $state(1);\n</script>\n```not a fence close``` text\n<p>{a}</p>"
    if fence[0] == "`":
        body = body.replace("```not a fence close```", "~~~ inner tildes")
    answer = f"{indent}{fence}{info}\n{body}\n{indent}{fence}{fence[0]}\n"
    ex = extract(answer, SV_TAGS)
    assert ex.code == body and ex.shape.clean, ex.shape.findings
    assert len(find_blocks(answer)) == 1


def test_backtick_fence_info_with_backtick_is_not_a_fence() -> None:
    # line 1 is text (an info string after backticks may not hold one), so line 3 opens a block never closed
    assert find_blocks("```a`b\ncode\n```") == [Block(tag="", content="", start_line=3, end_line=3, closed=False)]


# -- Svelte -----------------------------------------------------------------------------------------------------

CLEAN_SVELTE = """<script>
  let { title = 'Count', onchange } = $props();
  let count = $state(0);
  let doubled = $derived(count * 2);
  function add() {
    count += 1;
    onchange?.(count);
  }
</script>

<h2>{title}</h2>
<button onclick={add}>{count} (doubled {doubled})</button>
"""

# (policy rule, component) — each breaks exactly that rule, and otherwise follows the policy
PLANTED_POLICY = {
    "legacy_export_let": "<script>\n  export let name = 'x';\n</script>\n<p>{name}</p>",
    "legacy_reactive_statement": "<script>\n  let n = $state(1);\n  $: console.log(n);\n</script>\n<p>{n}</p>",
    "legacy_event_directive": "<script>\n  let n = $state(0);\n</script>\n<button on:click={() => n++}>{n}</button>",
    "legacy_slot": '<div class="card"><slot /></div>',
    "legacy_event_dispatcher": "<script>\n  import { createEventDispatcher } from 'svelte';\n"
    "  const dispatch = createEventDispatcher();\n</script>\n"
    "<button onclick={() => dispatch('go')}>go</button>",
    "legacy_lifecycle": "<script>\n  import { afterUpdate } from 'svelte';\n  afterUpdate(() => console.log('x'));\n"
    "</script>\n<p>x</p>",
    "legacy_store": "<script>\n  import { writable } from 'svelte/store';\n  const n = writable(0);\n</script>\n"
    "<p>{$n}</p>",
    "legacy_dollar_props": "<p class={$$props.class}>x</p>",
    "legacy_svelte_component": "<script>\n  let { Inner } = $props();\n</script>\n<svelte:component this={Inner} />",
    "legacy_svelte_self": "<script>\n  let { depth = 0 } = $props();\n</script>\n"
    "{#if depth < 2}<svelte:self depth={depth + 1} />{/if}",
    "state_without_rune": "<script>\n  let n = 0;\n</script>\n<button onclick={() => n++}>{n}</button>",
}


@pytest.fixture(scope="module")
def svelte_results() -> dict[str, object]:
    install_svelte()
    answers = {
        "clean": CLEAN_SVELTE,
        **PLANTED_POLICY,
        "compile_error": "<script>\n  let a = $state(0);\n</script>\n<div>{a</div>",
        "compile_warning": "<script>\n  let src = $state('a.png');\n</script>\n<img {src}>",
        "autofixer_issue": "<script>\n  let count = $state(0);\n</script>\n<p>{$count}</p>",
    }
    results = checker_for("svelte").check(list(answers.values()))
    return dict(zip(answers, results, strict=True))


def test_every_policy_rule_is_planted() -> None:
    assert set(PLANTED_POLICY) == set(POLICY_RULES)


def test_clean_svelte_passes_every_check(svelte_results: dict) -> None:
    r = svelte_results["clean"]
    assert r.compiles and r.compile.clean and r.policy.clean, (r.compile.findings, r.policy.findings)


@pytest.mark.parametrize("rule", sorted(PLANTED_POLICY))
def test_each_planted_policy_break_is_caught_by_its_rule(svelte_results: dict, rule: str) -> None:
    r = svelte_results[rule]
    assert not r.policy.clean
    codes = {f.code for f in r.policy.counted() if f.source == "rules"}
    assert codes == {rule}, r.policy.findings
    assert all(f.line is not None for f in r.policy.counted() if f.source == "rules")


def test_compiler_errors_and_warnings_are_caught_with_their_codes(svelte_results: dict) -> None:
    err = svelte_results["compile_error"]
    assert not err.compiles and not err.compile.clean
    assert [f.code for f in err.compile.findings] == ["js_parse_error"] and err.compile.findings[0].line == 4
    assert [f.code for f in err.policy.counted()] == ["unparseable"]  # nothing to judge the policy on
    warn = svelte_results["compile_warning"]
    assert warn.compiles and not warn.compile.clean
    assert [(f.code, f.severity) for f in warn.compile.findings] == [("a11y_missing_attribute", "warning")]
    assert warn.policy.clean  # a compiler warning is counted once, in the compile check
    # runes-mode compile rejects legacy props: both checks fail, each for its own reason
    legacy = svelte_results["legacy_export_let"]
    assert [f.code for f in legacy.compile.findings] == ["legacy_export_invalid"]


def test_autofixer_issue_counts_and_its_suggestions_are_notes(svelte_results: dict) -> None:
    r = svelte_results["autofixer_issue"]
    assert r.compile.clean and not r.policy.clean
    assert [f.code for f in r.policy.counted()] == ["autofixer_issue"] and "$count" in r.policy.counted()[0].message
    store = svelte_results["legacy_store"]
    notes = [f for f in store.policy.findings if f.severity == "note"]
    assert notes and all(f.code == "autofixer_suggestion" for f in notes)


# -- Python -----------------------------------------------------------------------------------------------------

CLEAN_PY = '''def add(a: int, b: int) -> int:
    """Sum of a and b."""
    return a + b
'''

PLANTED_PY = {
    "clean": (CLEAN_PY, [], []),
    "syntax_error": ("def f(:\n    pass\n", ["SyntaxError"], ["invalid-syntax"]),
    "indentation_error": ("def f() -> None:\nreturn None\n", ["IndentationError"], ["invalid-syntax"]),
    "compiler_warning": ("def f() -> bool:\n    return 1 is 1\n", ["SyntaxWarning"], ["F632"]),
    "unused_import": ("import os\n\n\ndef f() -> int:\n    return 1\n", [], ["F401"]),
    "missing_hints": ("def f(x):\n    return x\n", [], ["ANN001", "ANN201"]),
    "old_typing": (
        "from typing import List\n\n\ndef f(x: List[int]) -> List[int]:\n    return x\n",
        [],
        ["UP035", "UP006"],
    ),
}


def test_python_planted_answers_are_each_caught() -> None:
    answers = list(PLANTED_PY.values())
    results = checker_for("python").check([a[0] for a in answers])
    for (name, (_, compile_codes, ruff_codes)), r in zip(PLANTED_PY.items(), results, strict=True):
        assert [f.code for f in r.compile.counted()] == compile_codes, name
        assert {f.code for f in r.policy.counted()} == set(ruff_codes), (name, r.policy.findings)
        assert r.compile.clean is (not compile_codes) and r.policy.clean is (not ruff_codes)
        assert r.compiles is (name not in ("syntax_error", "indentation_error"))


def test_missing_toolchain_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESSFIT_HOME", str(tmp_path))
    assert str(svelte_toolchain_dir()).startswith(str(tmp_path))
    with pytest.raises(UserError, match="harnessfit eval toolchain"):
        svelte_toolchain(install=False)

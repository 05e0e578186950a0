"""`eval raw` end to end: planned answers from a scripted endpoint give exactly the planned counts and intervals,
an endpoint failure is unscored (never unclean), the CLI writes both files; one slow run on the embedded model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from harnessfit.errors import UserError
from harnessfit.eval.raw import load_raw_results, load_raw_suite, run_raw
from harnessfit.eval.stats import rate
from harnessfit.harness.scripted import Reply, ScriptedEndpoint

HARNESSFIT = Path(sys.executable).parent / "harnessfit"


def fenced(code: str) -> str:
    return f"```python\n{code}```"


GOOD = 'def ok(n: int) -> int:\n    """Twice n."""\n    return 2 * n\n'

# prompt id -> planned reply; counts below follow from these
PLAN = {
    "slugify": Reply(text=fenced(GOOD)),
    "merge-intervals": Reply(text="Sure! Here is the code:\n" + fenced(GOOD)),  # shape fails only
    "parse-duration": Reply(text=fenced("def f(:\n    pass\n")),  # compile and policy fail
    "top-words": Reply(text=fenced("import os\n\n\n" + GOOD)),  # policy fails only
    "lru-cache": Reply(error="model crashed", status=500),  # unscored
}


@pytest.fixture(scope="module")
def suite_dir(repo_root: Path) -> Path:
    return repo_root / "examples" / "raw" / "python-functions"


def planned(suite_dir: Path):
    suite = load_raw_suite(suite_dir)
    by_text = {p.prompt: p.id for p in suite.prompts}

    def respond(body: dict, index: int) -> Reply:
        assert "tools" not in body  # raw answers are asked without tools
        assert body["messages"][0] == {"role": "system", "content": suite.system}
        pid = by_text[body["messages"][-1]["content"]]
        return PLAN.get(pid, Reply(text=fenced(GOOD)))

    return respond


def test_planned_answers_give_planned_counts(tmp_path: Path, suite_dir: Path) -> None:
    res = run_raw("planned", suite_dir, tmp_path / "out", responder=planned(suite_dir), progress=False)
    agg = res.aggregates
    assert res.status == "success" and res.kind == "raw"
    assert (agg["answers"], agg["scored"], agg["unscored"]) == (10, 9, 1)
    expected = {"output_shape": 8, "compiles": 8, "compile_clean": 8, "policy_clean": 7, "fully_clean": 6}
    for field, successes in expected.items():
        assert agg["rates"][field] == rate(successes, 9).as_dict(), field
    assert agg["answers_with_finding"]["shape"] == {"text_outside_block": 1}
    assert agg["answers_with_finding"]["policy"] == {"F401": 1, "invalid-syntax": 1}
    by_id = {a.prompt_id: a for a in res.answers}
    assert by_id["lru-cache"].status == "error" and "HTTP 500" in by_id["lru-cache"].error
    assert by_id["slugify"].fully_clean and by_id["slugify"].code == GOOD.rstrip("\n")
    assert res.checker["ruff"] == "0.17.6" and res.suite["sha256"] == load_raw_suite(suite_dir).sha256
    # the files: versioned JSON that loads back, Markdown with the table and the unscored row
    again = load_raw_results(tmp_path / "out")
    assert again.aggregates == agg
    md = (tmp_path / "out" / "results.md").read_text()
    assert "| Fully clean (shape + compile + policy) | 67% [" in md and "(6/9)" in md
    assert "| lru-cache | 0 | unscored |" in md


def test_model_output_in_markdown_is_escaped(tmp_path: Path, suite_dir: Path) -> None:
    def respond(body: dict, index: int) -> Reply:
        return Reply(error="<script>alert(1)</script> | x", status=500)

    res = run_raw("x", suite_dir, tmp_path / "o", responder=respond, prompt_ids=["ipv4"], progress=False)
    assert res.aggregates["unscored"] == 1 and res.aggregates["rates"]["fully_clean"]["rate"] is None
    md = (tmp_path / "o" / "results.md").read_text()
    assert "<script>" not in md and "\\<script\\>" in md


@pytest.mark.slow  # 6 s in the fast tier
def test_cli_against_a_running_endpoint(tmp_path: Path, suite_dir: Path) -> None:
    with ScriptedEndpoint(planned(suite_dir), model_id="planned") as ep:
        proc = subprocess.run(
            [
                str(HARNESSFIT),
                "eval",
                "raw",
                "--endpoint",
                ep.base_url,
                "--suite",
                str(suite_dir),
                "--prompt",
                "slugify",
                "--prompt",
                "merge-intervals",
                "--out",
                str(tmp_path / "cli"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert "fully clean 1/2" in proc.stdout
    data = orjson.loads((tmp_path / "cli" / "results.json").read_bytes())
    assert data["model"] == {"name": "planned", "model_id": "planned"} and data["version"] == 1  # named, not by URL


@pytest.mark.slow  # 4 s in the fast tier
def test_user_errors(tmp_path: Path, suite_dir: Path) -> None:
    with pytest.raises(UserError, match="raw suite not found"):
        run_raw("x", tmp_path / "nope", tmp_path / "o", responder=planned(suite_dir))
    with pytest.raises(UserError, match="unknown prompt id"):
        run_raw("x", suite_dir, tmp_path / "o", responder=planned(suite_dir), prompt_ids=["nope"])
    with pytest.raises(UserError, match="scripted models play agent tasks"):
        run_raw("scripted:golden", suite_dir, tmp_path / "o")
    with pytest.raises(UserError, match="raise the temperature"):
        run_raw("x", suite_dir, tmp_path / "o", responder=planned(suite_dir), seeds=2, temperature=0.0)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "suite.yaml").write_text("language: cobol\nprompts: [{id: a, prompt: b}]\n")
    with pytest.raises(UserError, match="language must be one of"):
        load_raw_suite(bad)
    proc = subprocess.run(
        [str(HARNESSFIT), "eval", "raw", "--suite", str(suite_dir)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "exactly one of --model" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_embedded_model_answers_both_suites(tmp_path: Path, repo_root: Path) -> None:
    for name in ("svelte-components", "python-functions"):
        suite = repo_root / "examples" / "raw" / name
        first = load_raw_suite(suite).prompts[0].id
        res = run_raw(
            "smollm2-135m", suite, tmp_path / name, max_tokens=24, prompt_ids=[first], progress=False, threads=1
        )
        assert res.status == "success" and res.aggregates["scored"] == 1, res.answers
        answer = res.answers[0]
        assert answer.completion.completion_tokens and answer.completion.completion_tokens <= 24
        assert answer.shape is not None and answer.compile is not None and answer.policy is not None

"""`eval pairwise` with scripted judges: a fair judge reproduces the planted outcomes, a position-biased one shows
its flip rate, malformed verdicts are unparseable (counted, never a loss), the rubric means are the planted ones."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from harnessfit.errors import UserError
from harnessfit.eval.pairwise import load_pairwise_results, run_pairwise
from harnessfit.eval.pairwise.judge import RUBRIC_TEXT, parse_score, parse_verdict
from harnessfit.eval.raw import load_raw_suite, run_raw
from harnessfit.eval.stats import mean_interval, rate
from harnessfit.harness.scripted import Reply, ScriptedEndpoint

HARNESSFIT = Path(sys.executable).parent / "harnessfit"
PROMPTS = ["slugify", "merge-intervals", "parse-duration", "top-words", "chunked"]
QUALITY = {  # prompt -> (A's answer, B's answer); None = no completion came back
    "slugify": ("GOOD", "BAD"),
    "merge-intervals": ("GOOD", "GOOD"),
    "parse-duration": ("BAD", "GOOD"),
    "top-words": ("GOOD", "BAD"),
    "chunked": ("GOOD", None),
}


def answer(pid: str, quality: str, side: str) -> str:
    return f"```python\n# {quality} answer {side} to {pid}\ndef f() -> int:\n    return 1\n```"


@pytest.fixture(scope="module")
def raw_pair(tmp_path_factory, repo_root: Path) -> tuple[Path, Path]:
    suite_dir = repo_root / "examples" / "raw" / "python-functions"
    by_text = {p.prompt: p.id for p in load_raw_suite(suite_dir).prompts}
    root = tmp_path_factory.mktemp("pairwise")
    paths = []
    for k, side in enumerate("ab"):

        def respond(body: dict, index: int, k: int = k, side: str = side) -> Reply:
            pid = by_text[body["messages"][-1]["content"]]
            quality = QUALITY[pid][k]
            return Reply(error="down", status=503) if quality is None else Reply(text=answer(pid, quality, side))

        run_raw(f"model-{side}", suite_dir, root / side, responder=respond, prompt_ids=PROMPTS, progress=False)
        paths.append(root / side / "results.json")
    return paths[0], paths[1]


def _responses(content: str) -> tuple[str, str] | str:
    pair = re.search(r"<response_1>(.*)</response_1>.*<response_2>(.*)</response_2>", content, re.S)
    if pair:
        return pair.group(1), pair.group(2)
    return re.search(r"<response>(.*)</response>", content, re.S).group(1)


def fair_judge(body: dict, index: int) -> Reply:
    content = body["messages"][-1]["content"]
    got = _responses(content)
    if isinstance(got, str):
        assert RUBRIC_TEXT in content
        return Reply(text=f"Looks {'fine' if 'GOOD' in got else 'poor'}.\nSCORE: {5 if 'GOOD' in got else 2}")
    first, second = ("GOOD" in r for r in got)
    verdict = "TIE" if first == second else ("1" if first else "2")
    return Reply(text=f"Reasoning...\nVERDICT: {verdict}")


def test_fair_judge_reproduces_planted_outcomes(tmp_path: Path, raw_pair) -> None:
    with ScriptedEndpoint(fair_judge, model_id="fair") as judge:
        res = run_pairwise(*raw_pair, judge.base_url, tmp_path / "fair", progress=False)
        bodies = judge.requests
    agg = res.aggregates
    assert res.status == "success" and res.kind == "pairwise"
    assert {p.prompt_id: p.outcome for p in res.pairs} == {
        "slugify": "a",
        "merge-intervals": "tie",
        "parse-duration": "b",
        "top-words": "a",
    }
    assert res.missing == [{"prompt_id": "chunked", "seed": 0, "side": "b"}] and agg["missing"] == 1
    assert agg["outcomes"] == {"a": 2, "b": 1, "tie": 1, "order_sensitive": 0, "unparseable": 0, "judge_error": 0}
    assert agg["a_win_rate"] == rate(2, 4).as_dict() and agg["flip_rate"] == rate(0, 4).as_dict()
    # blinded: the judge never saw a model name or which side is which
    for body in bodies:
        text = orjson.dumps(body).decode()
        assert "model-a" not in text and "model-b" not in text
    # each pair judged twice: once A first, once B first
    assert len(bodies) == 4 * 2 + 5 + 4
    # rubric: A [5, 5, 2, 5, 5], B [2, 5, 5, 2] (B has no completion for chunked)
    assert agg["rubric"]["a"] == {
        **mean_interval([5, 5, 2, 5, 5], 1, 5),
        "unparseable": 0,
        "judge_error": 0,
        "distribution": {"1": 0, "2": 1, "3": 0, "4": 0, "5": 4},
    }
    assert agg["rubric"]["b"]["mean"] == 3.5 and agg["rubric"]["b"]["n"] == 4
    assert res.questions["rubric_text"] == RUBRIC_TEXT and len(res.questions["rubric_sha256"]) == 64
    again = load_pairwise_results(tmp_path / "fair")
    assert again.aggregates == agg
    md = (tmp_path / "fair" / "results.md").read_text()
    assert "| A wins (stable) | 2 |" in md and "| Order-sensitive (excluded) | 0 |" in md


def test_position_biased_judge_is_caught_by_the_flip_rate(tmp_path: Path, raw_pair) -> None:
    def biased(body: dict, index: int) -> Reply:
        content = body["messages"][-1]["content"]
        return Reply(text="SCORE: 3" if "<response>" in content else "The first one.\nVERDICT: 1")

    with ScriptedEndpoint(biased, model_id="biased") as judge:
        res = run_pairwise(*raw_pair, judge.base_url, tmp_path / "biased", progress=False, rubric=False)
    agg = res.aggregates
    assert agg["outcomes"]["order_sensitive"] == 4 and agg["stable"] == 0
    assert agg["flip_rate"] == rate(4, 4).as_dict()
    assert agg["first_position_rate"] == rate(8, 8).as_dict()
    assert agg["a_win_rate"]["rate"] is None  # no stable verdict: no win rate, rather than a made-up one
    assert agg["rubric"] == {} and res.rubric == []


@pytest.mark.slow  # 3 s in the fast tier
def test_malformed_verdicts_are_unparseable_never_a_loss(tmp_path: Path, raw_pair) -> None:
    def sloppy(body: dict, index: int) -> Reply:
        content = body["messages"][-1]["content"]
        if "to parse-duration" in content:  # every question about the parse-duration answers
            return Reply(text="I prefer the second one, clearly." if "<response_1>" in content else "Score: high")
        return fair_judge(body, index)

    with ScriptedEndpoint(sloppy, model_id="sloppy") as judge:
        res = run_pairwise(*raw_pair, judge.base_url, tmp_path / "sloppy", progress=False)
    agg = res.aggregates
    assert agg["outcomes"] == {"a": 2, "b": 0, "tie": 1, "order_sensitive": 0, "unparseable": 1, "judge_error": 0}
    assert agg["unparseable_rate"] == rate(1, 4).as_dict()
    assert agg["a_win_rate"] == rate(2, 3).as_dict()  # the unparseable pair counts for neither side
    assert agg["rubric"]["b"]["unparseable"] == 1 and agg["rubric"]["b"]["n"] == 3
    assert agg["rubric"]["a"]["unparseable"] == 1  # A's parse-duration answer got the same unreadable score


@pytest.mark.slow  # 6 s in the fast tier
def test_cli_with_key_from_environment(tmp_path: Path, raw_pair, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "HFTEST_JUDGE_KEY": "sekret-value-123"}
    with ScriptedEndpoint(fair_judge, model_id="fair") as judge:
        proc = subprocess.run(
            [
                str(HARNESSFIT),
                "eval",
                "pairwise",
                str(raw_pair[0]),
                str(raw_pair[1].parent),
                "--judge",
                judge.base_url,
                "--judge-key-env",
                "HFTEST_JUDGE_KEY",
                "--no-rubric",
                "--out",
                str(tmp_path / "cli"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert "A 2 / B 1 / tie 1 stable; order-sensitive 0 (flip rate 0/4)" in proc.stdout
    data = (tmp_path / "cli" / "results.json").read_text()
    assert "sekret-value-123" not in data and '"api_key_env": "HFTEST_JUDGE_KEY"' in data
    monkeypatch.delenv("HFTEST_JUDGE_KEY", raising=False)
    with pytest.raises(UserError, match="HFTEST_JUDGE_KEY: that environment variable is not set"):
        run_pairwise(
            *raw_pair, "http://127.0.0.1:9/v1", tmp_path / "x", api_key_env="HFTEST_JUDGE_KEY", judge_model="m"
        )


def test_results_of_different_suites_are_refused(tmp_path: Path, raw_pair) -> None:
    other = orjson.loads(raw_pair[1].read_bytes())
    other["suite"]["sha256"] = "0" * 64
    (tmp_path / "other.json").write_bytes(orjson.dumps(other))
    with pytest.raises(UserError, match="different suites"):
        run_pairwise(raw_pair[0], tmp_path / "other.json", "http://127.0.0.1:9/v1", tmp_path / "x", judge_model="m")
    other["kind"] = "pairwise"
    (tmp_path / "wrong-kind.json").write_bytes(orjson.dumps(other))
    with pytest.raises(UserError, match="not a harnessfit raw results file"):
        run_pairwise(
            raw_pair[0], tmp_path / "wrong-kind.json", "http://127.0.0.1:9/v1", tmp_path / "x", judge_model="m"
        )


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("VERDICT: 1", "1"),
        ("verdict: **2**", "2"),
        ("Verdict: tie", "tie"),
        ("VERDICT: 1\n...\nVERDICT: 2", "2"),
        ("I pick response 1", None),
        ("", None),
    ],
)
def test_parse_verdict(text: str, verdict: str | None) -> None:
    assert parse_verdict(text) == verdict


@pytest.mark.parametrize(
    ("text", "score"), [("SCORE: 4", 4), ("score: **5**", 5), ("SCORE: 7", None), ("SCORE: 0", None), ("four", None)]
)
def test_parse_score(text: str, score: int | None) -> None:
    assert parse_score(text) == score

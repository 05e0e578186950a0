"""A Harbor episode's page shows the backend that ran it, the image it stood in for, and the verifier's own output
(exit code, stdout and stderr tails, each reward file's text), everything escaped (issue 29)."""

from __future__ import annotations

from pathlib import Path

from harnessfit.eval.episode import (
    Episode,
    EpisodeFacts,
    EpisodeMetrics,
    VerifierOutput,
)
from harnessfit.eval.results import EvalResults, aggregate, write_results
from harnessfit.report.build import build_report

MARKUP = "<script>window.__pwned=1</script>"
ESCAPED = "&lt;script&gt;window.__pwned=1&lt;/script&gt;"


def _facts(folder: Path, task: str, **kw) -> EpisodeFacts:
    rel = f"episodes/{task}/seed-0"
    (folder / rel).mkdir(parents=True, exist_ok=True)
    for name in ("events.jsonl", "stderr.txt"):
        (folder / rel / name).write_text("")
    return EpisodeFacts(
        task_id=task,
        seed=0,
        sandbox="bwrap",
        max_turns=4,
        events_file=f"{rel}/events.jsonl",
        stderr_file=f"{rel}/stderr.txt",
        **kw,
    )


def _metrics() -> EpisodeMetrics:
    return EpisodeMetrics(
        complete_loop=False,
        expected_change=True,
        validation_used=False,
        finished_with_response=True,
        checker_passed=False,
        tool_calls_total=0,
        tool_calls_valid=0,
        tool_calls_invalid=0,
        double_encoded_arguments=0,
        runaway=False,
        timed_out=False,
        turn_cap_hit=False,
        endpoint_error=False,
        turns=1,
        tokens_input=1,
        tokens_output=1,
        tokens_total=2,
        wall_seconds=1.0,
        stop_reason="stop",
        failure="checker_failed",
    )


def test_harbor_episode_page_shows_backend_image_and_verifier_output(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "eval" / "base"
    ran = _facts(
        folder,
        "both-rewards",
        backend="host",
        image=f"python:3-slim{MARKUP}",
        checker_exit_code=1,
        reward=0.0,
        rewards={"reward": 0.0, "tests_passed": 2.0},
        checker_output="FAIL",
        verifier=VerifierOutput(
            exit_code=0,
            stdout=f"checking {MARKUP}\n",
            stderr=f"warn {MARKUP}\n",
            reward_files={"reward.json": f'{{"reward": 0.0, "{MARKUP}": 2}}\n', "reward.txt": "1\n"},
        ),
    )
    waiting = _facts(
        folder,
        "prebuilt",
        status="needs_container",
        image="ghcr.io/example/app:1",
        error="needs the container image ghcr.io/example/app:1",
    )
    episodes = [Episode(facts=ran, metrics=_metrics()), Episode(facts=waiting)]
    write_results(
        EvalResults(
            model={"name": "base"},
            suite={"name": "h", "format": "harbor", "sha256": "x", "tasks": ["both-rewards", "prebuilt"]},
            config={"seeds": 1},
            sandbox="bwrap",
            pi_version="0.0.0-not-installed",
            episodes=episodes,
            aggregates=aggregate(episodes, 1),
            status="success",
        ),
        folder,
    )
    out = build_report(tmp_path / "run").index.parent
    page = (out / "episodes" / "base" / "both-rewards" / "seed-0.html").read_text()
    assert "<script" not in page  # text from the task and its verifier is shown as text
    assert "<dt>backend</dt><dd>host</dd>" in page
    assert f"<dt>image</dt><dd><code>python:3-slim{ESCAPED}</code></dd>" in page
    assert "<h2>Verifier</h2>" in page and "exit code 0" in page
    assert f"checking {ESCAPED}" in page and f"warn {ESCAPED}" in page
    assert "reward 0 (reward 0, tests_passed 2)" in page
    assert f"{{&#34;reward&#34;: 0.0, &#34;{ESCAPED}&#34;: 2}}" in page and "<code>reward.txt</code>" in page
    other = (out / "episodes" / "base" / "prebuilt" / "seed-0.html").read_text()
    assert "<dt>image</dt><dd><code>ghcr.io/example/app:1</code></dd>" in other
    assert "<dt>backend</dt><dd>none (not run)</dd>" in other and "<h2>Verifier</h2>" not in other

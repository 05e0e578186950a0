"""The HTML report from hand-made stage folders (no Pi, no browser): sections present only for the stages a run has,
links from table cells to the episodes behind them, escaping, rebuilds, the training and generic results sections,
and ``view`` on 127.0.0.1. The browser test (test_report_browser.py) runs the same code on a real run."""

from __future__ import annotations

import html
import posixpath
import re
import threading
from pathlib import Path

import httpx
import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.errors import UserError
from harnessfit.eval.episode import Episode, EpisodeFacts, EpisodeMetrics
from harnessfit.eval.results import EvalResults, aggregate, write_results
from harnessfit.report.build import build_report
from harnessfit.report.figures import Curve, curve_keys, curve_svg
from harnessfit.report.sections import GRPO_CURVES, SECTIONS, SFT_CURVES, results_table_section, training_section
from harnessfit.report.view import serve_folder

MARKUP = "<script>window.__pwned=1</script><b>bold?</b>"
MISSING_PI = "0.0.0-not-installed"  # Pi's export then writes a page saying why, without running anything


def _session(path: Path, task: str, *, double: bool, answer: str) -> None:
    args = {"path": "a.py", "content": "print(1)\n"}
    stored = orjson.dumps(args).decode() if double else args  # Pi stores a JSON string when the model sent one
    rows = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"},
        {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": f"Do {task}. {MARKUP}"}],
                "timestamp": 1000,
            },
        },
        {
            "type": "message",
            "id": "m2",
            "parentId": "m1",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c1", "name": "write", "arguments": stored}],
                "usage": {"input": 10, "output": 5, "totalTokens": 15},
                "stopReason": "toolUse",
                "timestamp": 1500,
            },
        },
        {
            "type": "message",
            "id": "m3",
            "parentId": "m2",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "write",
                "isError": double,
                "content": [{"type": "text", "text": "Validation failed" if double else "Successfully wrote"}],
                "timestamp": 1600,
            },
        },
        {
            "type": "message",
            "id": "m4",
            "parentId": "m3",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": answer}],
                "usage": {"input": 20, "output": 7, "totalTokens": 27},
                "stopReason": "stop",
                "timestamp": 2500,
            },
        },
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def _episode(folder: Path, task: str, seed: int, ok: bool, *, error: str | None = None) -> Episode:
    rel = f"episodes/{task}/seed-{seed}"
    facts = EpisodeFacts(
        task_id=task,
        seed=seed,
        sandbox="bwrap",
        max_turns=4,
        events_file=f"{rel}/events.jsonl",
        stderr_file=f"{rel}/stderr.txt",
        status="error" if error else "success",
        error=error,
        checker_exit_code=None if error else (0 if ok else 1),
        checker_output="" if error else ("OK" if ok else "FAIL: <missing a.py>"),
    )
    (folder / rel).mkdir(parents=True, exist_ok=True)
    (folder / rel / "events.jsonl").write_text("")
    (folder / rel / "stderr.txt").write_text("")
    if error:
        return Episode(facts=facts)
    facts.session_file = f"{rel}/sessions/s.jsonl"
    _session(folder / facts.session_file, task, double=not ok, answer=f"finished {MARKUP}")
    metrics = EpisodeMetrics(
        complete_loop=ok,
        expected_change=ok,
        validation_used=ok,
        finished_with_response=True,
        checker_passed=ok,
        tool_calls_total=1,
        tool_calls_valid=int(ok),
        tool_calls_invalid=int(not ok),
        invalid_by_reason={} if ok else {"arguments_double_encoded": 1},
        double_encoded_arguments=int(not ok),
        runaway=False,
        timed_out=False,
        turn_cap_hit=False,
        endpoint_error=False,
        turns=2,
        tokens_input=30,
        tokens_output=12,
        tokens_total=42,
        wall_seconds=1.5,
        stop_reason="stop",
        failure=None if ok else "double_encoded_arguments",
    )
    return Episode(facts=facts, metrics=metrics)


def _eval_run(folder: Path, name: str, outcomes: dict[str, list[bool | None]]) -> Path:
    eps = [
        _episode(folder, task, seed, bool(ok), error=None if ok is not None else "pi exited with code 1")
        for task, seeds in outcomes.items()
        for seed, ok in enumerate(seeds)
    ]
    res = EvalResults(
        model={"name": name},
        suite={"name": "default", "tasks": list(outcomes), "sha256": "x"},
        config={"seeds": 2},
        sandbox="bwrap",
        pi_version=MISSING_PI,
        episodes=eps,
        aggregates=aggregate(eps, 2),
        status="success",
    )
    return write_results(res, folder)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    _eval_run(run / "eval" / "base", "base", {"t_one": [False, False], "t_two": [True, None]})
    _eval_run(run / "eval" / "tuned", "tuned", {"t_one": [True, True], "t_two": [True, False]})
    return run


def _hrefs(fragment: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]+)"', fragment)]


def _table(page: str, element_id: str) -> str:
    return re.search(rf'<(table|tbody)[^>]*id="{element_id}".*?</\1>', page, re.S).group(0)


def test_eval_cells_and_tasks_link_every_episode(run: Path) -> None:
    res = build_report(run)
    out = res.index.parent
    assert res.sections == ["eval"] and res.skipped == {}  # only the stage this run has
    index = res.index.read_text()
    pages = {
        p.relative_to(out).as_posix()
        for p in (out / "episodes").rglob("seed-*.html")
        if not p.name.endswith(".pi.html")
    }
    assert len(pages) == 8
    # one click from the before/after table (its per-task rows) reaches every episode
    assert set(_hrefs(_table(index, "per-task"))) == pages
    assert _table(index, "per-task") in _table(index, "before-after")
    # a rate cell links to a page listing exactly the episodes behind it (its n scored episodes)
    row = re.search(r'<tr data-key="complete_loop">.*?</tr>', _table(index, "before-after"), re.S).group(0)
    assert ">33% [6–79] (1/3)<" in row and ">75% [30–95] (3/4)<" in row
    assert _hrefs(row)[0] == "eval/base/complete_loop.html"
    base_list = (out / "eval" / "base" / "complete_loop.html").read_text()
    episodes_table = re.search(r'<table class="episodes">.*?</table>', base_list, re.S).group(0)
    listed = {posixpath.normpath(posixpath.join("eval/base", h)) for h in _hrefs(episodes_table)}
    assert listed == {
        "episodes/base/t_one/seed-0.html",
        "episodes/base/t_one/seed-1.html",
        "episodes/base/t_two/seed-0.html",
    }
    # the failures cell links per failure name; the unscored count to the unscored episodes
    fails = re.search(r'<tr data-key="failures">.*?</tr>', index, re.S).group(0)
    assert "eval/base/failure-double_encoded_arguments.html" in _hrefs(fails)
    unscored = (out / "eval" / "base" / "unscored.html").read_text()
    assert "episodes/base/t_two/seed-1.html" in unscored.replace("../../", "")
    # every link on every page resolves inside the report folder
    for page in out.rglob("*.html"):
        if page.name.endswith(".pi.html"):
            continue
        for href in _hrefs(page.read_text()):
            target = href.split("#")[0]
            if target:
                assert (page.parent / target).resolve().is_file(), (page, href)


def test_episode_page_shows_calls_as_sent_and_escapes_model_output(run: Path) -> None:
    out = build_report(run).index.parent
    page = (out / "episodes" / "base" / "t_one" / "seed-0.html").read_text()
    assert "<script" not in page and "<b>bold?</b>" not in page  # markup from the model is text
    assert "finished &lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;b&gt;bold?&lt;/b&gt;" in page
    raw = html.unescape(re.search(r'<pre class="args">(.*?)</pre>', page, re.S).group(1))
    assert raw == orjson.dumps(orjson.dumps({"path": "a.py", "content": "print(1)\n"}).decode()).decode()
    assert "double-encoded: the arguments are a JSON string" in page
    assert "fail: double_encoded_arguments" in page and "FAIL: &lt;missing a.py&gt;" in page
    assert "tokens 10 in / 5 out" in page and "+0.50 s" in page
    good = (out / "episodes" / "tuned" / "t_one" / "seed-0.html").read_text()
    assert (
        html.unescape(re.search(r'<pre class="args">(.*?)</pre>', good, re.S).group(1))
        == '{"path":"a.py","content":"print(1)\\n"}'
    )
    assert "double-encoded:" not in good
    # Pi's own export is linked; with that Pi version missing the linked page says why instead
    assert 'href="seed-0.pi.html"' in page
    export = (out / "episodes" / "base" / "t_one" / "seed-0.pi.html").read_text()
    assert "could not be made" in export and MISSING_PI in export
    unscored = (out / "episodes" / "base" / "t_two" / "seed-1.html").read_text()
    assert "unscored: runner or harness error" in unscored and "pi exited with code 1" in unscored


def test_rebuild_replaces_its_own_files_and_refuses_other_folders(run: Path, tmp_path: Path) -> None:
    out = build_report(run).index.parent
    stale = out / "episodes" / "old" / "gone.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("x")
    build_report(run)
    assert not stale.exists() and not stale.parent.exists()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(UserError, match="not empty"):
        build_report(run, foreign)
    with pytest.raises(UserError, match="no stage folder"):
        build_report(tmp_path / "mine" / "..", tmp_path / "elsewhere")
    with pytest.raises(UserError, match="run folder not found"):
        build_report(tmp_path / "nope")


def test_broken_stage_is_named_not_fatal(run: Path) -> None:
    (run / "audit").mkdir()
    (run / "audit" / "audit.json").write_text("{ not json")
    res = build_report(run)
    assert res.sections == ["eval"] and "audit" in res.skipped
    assert "Left out because their files could not be read" in res.index.read_text()


def _training_folder(d: Path, rows: list[dict], samples: list[dict], guard: dict | None = None) -> None:
    d.mkdir(parents=True)
    (d / "metrics.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows) + b'{"step": 9, "lo')
    (d / "guard.jsonl").write_bytes(b"".join(orjson.dumps(s) + b"\n" for s in samples))
    (d / "recipe.json").write_bytes(orjson.dumps({"model": "m", "guard": guard or {}}))
    (d / "result.json").write_bytes(
        orjson.dumps(
            {
                "status": "completed",
                "global_step": 2,
                "initial_val_loss": 2.0,
                "final_val_loss": 1.5,
                "best_val_loss": 1.5,
                "best_step": 2,
                "adapter_dir": "/x",
            }
        )
    )


def test_training_section_draws_curves_and_marks_the_closest_stop_rule(tmp_path: Path) -> None:
    rows = [
        {"step": 0, "eval_loss": 2.0, "eval_mean_token_accuracy": 0.4},
        {"step": 1, "loss": 2.2, "learning_rate": 1e-4, "mean_token_accuracy": 0.41},
        {"step": 2, "loss": 1.7, "learning_rate": 5e-5, "eval_loss": 1.5, "eval_mean_token_accuracy": 0.5},
    ]
    samples = [
        {"host_mem_avail_gib": 9.0, "disk_free_gib": 100.0},
        {"host_mem_avail_gib": 5.0, "disk_free_gib": 90.0},
        {"error": "nvml failed"},
    ]
    _training_folder(tmp_path / "train", rows, samples, {"min_host_mem_gib": 4.0, "min_free_disk_gib": 20.0})
    sec = training_section("train", "SFT training", curves=SFT_CURVES)(tmp_path)
    assert sorted(sec.files) == [
        "figures/train-learning_rate.svg",
        "figures/train-loss.svg",
        "figures/train-token_accuracy.svg",
        "files/train/guard.jsonl",
        "files/train/metrics.jsonl",
        "files/train/recipe.json",
        "files/train/result.json",
    ]
    assert all(sec.files[f].startswith(b"<?xml") for f in sec.files if f.endswith(".svg"))
    body = str(sec.body)
    # host memory: 1 GiB of headroom over 4 GiB (25%) is closer than disk: 70 over 20
    closest = re.search(r'<tr class="closest">.*?</tr>', body, re.S).group(0)
    assert "host memory available" in closest and "min 5.00 GiB" in closest and "1.00 GiB" in closest
    assert "2 → 1.5" in sec.summary and "closest stop rule: host memory available" in sec.summary
    assert training_section("grpo", "GRPO")(tmp_path) is None  # no such folder: no section


def test_grpo_curves_pick_reward_components() -> None:
    rows = [
        {
            "step": s,
            "reward": 0.1 * s,
            "rewards/format/mean": 0.2,
            "rewards/checker/mean": 0.05 * s,
            "rewards/format/std": 0.01,
            "kl": 0.01 * s,
            "loss": 0.0 if s == 0 else 0.5 / s,
            "learning_rate": 1e-6,
        }
        for s in range(3)
    ]
    reward = next(c for c in GRPO_CURVES if c.name == "reward")
    assert curve_keys(rows, reward) == ["reward", "rewards/format/mean", "rewards/checker/mean"]
    assert curve_svg(rows, reward) is not None
    loss = next(c for c in GRPO_CURVES if c.name == "loss")
    assert curve_svg(rows, loss) is not None  # a log scale drops the zero loss instead of failing
    assert curve_svg([{"step": 0, "loss": 0.0}], loss) is None  # nothing left to draw: no figure
    assert curve_svg(rows, Curve("x", "x", "x", ("absent/*",))) is None
    assert curve_svg(rows, reward) == curve_svg(rows, reward)  # no date or random id in the SVG


def test_generic_results_table(tmp_path: Path) -> None:
    d = tmp_path / "eval" / "raw" / "m1"
    d.mkdir(parents=True)
    rate = {"successes": 3, "n": 4, "rate": 0.75, "ci95_low": 0.3, "ci95_high": 0.954}
    (d / "results.json").write_bytes(
        orjson.dumps(
            {
                "version": 1,
                "status": "success",
                "model": {"name": f"m1 {MARKUP}"},
                "suite": {"name": "humaneval-mini"},
                "aggregates": {"rates": {"pass_at_1": rate}, "means": {"tokens": 12.5}, "items": 4, "notes": ["x"]},
            }
        )
    )
    sec = results_table_section("eval/raw/*/results.json", "Raw one-shot suites", key="raw")(tmp_path)
    body = str(sec.body)
    assert "75% [30–95] (3/4)" in body and "means.tokens" in body and "12.5" in body and "<script" not in body
    assert results_table_section("eval/none/*.json", "x", key="x")(tmp_path) is None


def test_raw_direct_pairwise_and_probe_sections_read_their_own_kind(tmp_path: Path) -> None:
    rate = {"successes": 1, "n": 10, "rate": 0.1, "ci95_low": 0.02, "ci95_high": 0.4}
    for rel, kind, agg in (
        ("raw/python-functions/base", "raw", {"rates": {"fully_clean": rate}}),
        ("raw/python-functions/pairwise", "pairwise", {"flip_rate": rate}),
        ("probe/base", "probe", {"rates": {"tool_call": rate}}),
        ("direct/base/heldout", "direct", {"rates": {"checker_passed": rate}}),
    ):
        (tmp_path / rel).mkdir(parents=True)
        (tmp_path / rel / "results.json").write_bytes(
            orjson.dumps({"kind": kind, "version": 1, "status": "success", "aggregates": agg})
        )
    got = {name: SECTIONS[name](tmp_path) for name in ("raw", "direct", "pairwise", "probe")}
    assert "fully_clean" in str(got["raw"].body) and "flip_rate" not in str(got["raw"].body)  # the glob also matches
    assert "flip_rate" in str(got["pairwise"].body)  # pairwise/: kind decides
    assert "tool_call" in str(got["probe"].body)
    assert "checker_passed" in str(got["direct"].body) and "fully_clean" not in str(got["direct"].body)


def test_view_serves_on_loopback_only(run: Path) -> None:
    out = build_report(run).index.parent
    server = serve_folder(out, 0)
    host, port = server.server_address[:2]
    assert host == "127.0.0.1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        index = httpx.get(f"http://127.0.0.1:{port}/index.html", timeout=10)
        assert index.status_code == 200 and 'id="before-after"' in index.text
        page = httpx.get(f"http://127.0.0.1:{port}/episodes/base/t_one/seed-0.html", timeout=10)
        assert page.status_code == 200
        for host in (f"localhost:{port}", f"[::1]:{port}", "127.0.0.1"):
            assert httpx.get(f"http://127.0.0.1:{port}/index.html", headers={"Host": host}).status_code == 200
        # a DNS-rebinding page reaches the server under its own name: refused (issue 27 item 6)
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
            rebound = httpx.get(f"http://127.0.0.1:{port}/index.html", headers={"Host": host}, timeout=10)
            assert rebound.status_code == 421 and 'id="before-after"' not in rebound.text
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(UserError, match=r"no index\.html"):
        serve_folder(run, 0)


def test_report_cli(run: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["report", str(run), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    assert "sections: eval" in res.output and (tmp_path / "rep" / "index.html").is_file()
    res = CliRunner().invoke(app, ["report", str(tmp_path / "missing")])
    assert res.exit_code != 0 and isinstance(res.exception, UserError)


def test_numbers_in_tables() -> None:
    from harnessfit.report.site import fmt_num

    assert [fmt_num(x) for x in (187500.0, 21340.4, 2.0, 1.5, 0.000123, 12345, None, False)] == [
        "187,500",
        "21,340",
        "2",
        "1.5",
        "0.000123",
        "12,345",
        "–",
        "no",
    ]

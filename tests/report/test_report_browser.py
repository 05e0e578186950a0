"""The HTML report of a small real run, opened in headless Chromium (Debian's, driven by Playwright).

The run: two tasks evaluated in the real Pi with the scripted golden solver and the double-encoding model, one
episode of a hostile model whose answer and tool call carry markup, and a tiny dataset build + token audit of the
golden sessions. The test reads the rendered DOM (not the HTML text) for the numbers the stages wrote, checks that
no page logs a console error or fetches anything from outside the folder, clicks from the before/after table to an
episode, and screenshots the index.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.eval.results import fmt_rate

pytestmark = [pytest.mark.slow, pytest.mark.pi]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TASKS = ["create_fizzbuzz", "edit_constant"]
HOSTILE = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'


def _need_browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None or not Path(CHROMIUM).exists():
        why = "needs the playwright package and Debian's chromium (`make setup` installs both)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return sync_playwright


def _hostile(tasks):
    from harnessfit.core.jsonio import dumps_compact_str
    from harnessfit.harness.scripted import Reply

    def respond(body: dict, index: int) -> Reply:
        if sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant") == 0:
            return Reply(tool_calls=[("bash", dumps_compact_str({"command": f"echo '{HOSTILE}'"}))])
        return Reply(text=f"Done. {HOSTILE}")

    return respond


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, repo_root: Path) -> Path:
    from harnessfit.dataset.build import build_dataset
    from harnessfit.dataset.config import config_from_values
    from harnessfit.eval.run import run_eval
    from harnessfit.eval.task import load_suite
    from harnessfit.harness.pi import install_pi
    from harnessfit.tokens import audit

    install_pi()
    run = tmp_path_factory.mktemp("run")
    suite = repo_root / "examples" / "tasks" / "default"
    for model in ("golden", "double-encode"):
        res = CliRunner().invoke(
            app,
            [
                "eval",
                "agent",
                "--model",
                f"scripted:{model}",
                "--suite",
                str(suite),
                "--workers",
                "2",
                "--out",
                str(run / "eval" / model),
                *[a for t in TASKS for a in ("--task", t)],
            ],
        )
        assert res.exit_code == 0, res.output
    run_eval(
        "hostile",
        suite,
        run / "eval" / "hostile",
        task_ids=TASKS[:1],
        progress=False,
        responder=_hostile(load_suite(suite)),
    )
    sessions = sorted(str(p) for p in (run / "eval" / "golden" / "episodes").glob("*/seed-0/sessions"))
    config = config_from_values(inputs=sessions, out=str(run / "dataset"), workers=1)
    build_dataset(config, Path.cwd(), out=run / "dataset", progress=False)
    audit(run / "dataset", "smollm2-135m", run / "audit")
    res = CliRunner().invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert "left out" not in res.output, res.output
    return run


def _blank(png: Path) -> bool:
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(png)[..., :3]
    colours = np.unique((img * 255).astype("uint8").reshape(-1, 3), axis=0)
    return float(img.std()) < 0.02 or len(colours) < 16


def test_report_in_chromium(small_run: Path, tmp_path: Path) -> None:
    sync_playwright = _need_browser()
    report = small_run / "report"
    golden = orjson.loads((small_run / "eval" / "golden" / "results.json").read_bytes())
    double = orjson.loads((small_run / "eval" / "double-encode" / "results.json").read_bytes())
    manifest = orjson.loads((small_run / "dataset" / "manifest.json").read_bytes())
    audited = orjson.loads((small_run / "audit" / "audit.json").read_bytes())
    problems: list[str] = []
    outside: list[str] = []

    with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="hf-chromium-") as profile:
        ctx = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS, viewport={"width": 1280, "height": 900}
        )
        ctx.on("request", lambda r: None if r.url.startswith(("file://", "data:")) else outside.append(r.url))
        page = ctx.new_page()
        page.on("console", lambda m: problems.append(f"{page.url}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"{page.url}: {e}"))
        page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))

        page.goto((report / "index.html").as_uri())
        # every stage of the run is on the page, with the numbers its files hold
        for key in ("dataset", "audit", "eval"):
            assert page.locator(f"section#{key}").count() == 1, key
        for key in ("train", "synth", "harness"):  # stages this run does not have are simply absent
            assert page.locator(f"section#{key}").count() == 0, key
        yield_rows = page.locator("section#dataset table").first.inner_text()
        assert f"kept\t{manifest['counts']['kept']}" in yield_rows
        assert f"trajectories read\t{manifest['counts']['read']}" in yield_rows
        assert f"clean {audited['records_clean']}" in page.locator("section#audit").inner_text()
        table = page.locator("table#before-after")
        header = table.locator("thead tr").inner_text().split("\t")
        assert header[1:] == ["scripted:double-encode", "scripted:golden", "scripted:hostile"]
        loop = table.locator('tr[data-key="complete_loop"] td')
        assert loop.nth(2).inner_text() == fmt_rate(golden["aggregates"]["rates"]["complete_loop"])
        assert loop.nth(1).inner_text() == fmt_rate(double["aggregates"]["rates"]["complete_loop"])
        assert table.locator('tr[data-key="double_encoded_arguments"] td').nth(1).inner_text() == str(
            double["aggregates"]["tool_calls"]["double_encoded_arguments"]
        )

        # a cell leads to the episodes behind it, and each of those to its page
        loop.nth(1).locator("a").click()
        assert page.locator("table.episodes tr").count() == 1 + len(TASKS)
        page.go_back()
        # one click from the before/after table to an episode
        page.locator("table#before-after tbody#per-task a", has_text="seed 0").nth(0).click()
        assert page.url.endswith("episodes/double-encode/create_fizzbuzz/seed-0.html")
        assert "fail: double_encoded_arguments" in page.inner_text("main")
        raw = page.locator("pre.args").first.inner_text()
        assert raw.startswith('"{\\"path\\":\\"fizzbuzz.py\\"'), raw  # the JSON string, as the model sent it
        assert page.locator("pre.checker").count() == 1
        export = page.locator("a.pi-export")
        export.click()
        assert page.url.endswith("seed-0.pi.html")
        # Pi's own export of the same session shows Pi's refusal (0.x: "Validation failed …", from 1.x: "Invalid
        # arguments for tool …")
        assert any(t in page.inner_text("body") for t in ("Validation failed", "Invalid arguments for tool"))

        # model output with markup is shown as text and never runs
        page.goto((report / "episodes" / "hostile" / "create_fizzbuzz" / "seed-0.html").as_uri())
        text = page.inner_text("main")
        assert f"Done. {HOSTILE}" in text
        assert "<script>window.__pwned = 1</script>" in page.locator("pre.args").first.inner_text()
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator('main img[src="x"]').count() == 0 and page.locator("main script").count() == 0

        page.goto((report / "index.html").as_uri())
        shot = tmp_path / "index.png"
        page.screenshot(path=str(shot), full_page=True)
        ctx.close()
    assert shot.stat().st_size > 10_000 and not _blank(shot)
    assert problems == [], problems
    assert outside == [], outside

"""`harnessfit probe`: a scripted endpoint with one planned behaviour per probe gives exactly the planned figures
(every figure of the issue), the request is the harness's real prompt and tools, --compare puts two runs side by
side; one slow run of the embedded model beside a LoRA adapter of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from harnessfit.convert.validate import card_wire_tools
from harnessfit.errors import UserError
from harnessfit.eval.probe import compare_probes, load_probe_results, load_probes, probe_with_compare, run_probe
from harnessfit.eval.stats import rate
from harnessfit.harness.card import load_card
from harnessfit.harness.scripted import Reply, ScriptedEndpoint

HARNESSFIT = Path(sys.executable).parent / "harnessfit"


@pytest.fixture(scope="module")
def probes_dir(repo_root: Path) -> Path:
    return repo_root / "examples" / "probes" / "default"


PLAN = {
    "list-files": Reply(tool_calls=[("bash", '{"command":"ls"}')]),
    "read-file": Reply(tool_calls=[("read", json.dumps(json.dumps({"path": "config.json"})))]),  # double-encoded
    "create-file": Reply(tool_calls=[("write", '{"path":"hello.py"}')]),  # content missing
    "run-tests": Reply(text='<tool_call>{"name": "bash", "arguments": {"command": </tool_call>'),  # malformed
    "fix-after-read": Reply(text="Change `a - b` to `a + b`."),  # answers without the tool it needs
    "find-todo": Reply(text='{"name": "bash", "arguments": {"command": "grep -rl TODO src"}}'),  # untagged call
    "explain-concept": Reply(text="<think>easy</think>It means the page was not found, and", finish_reason="length"),
    "greeting": Reply(tool_calls=[("bash", '{"command":"echo hello"}')]),  # a call it does not need
}


def which_probe(body: dict) -> str:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return "fix-after-read"
    text = last["content"][0]["text"]
    return next(
        p.id
        for p in load_probes(Path(__file__).resolve().parents[2] / "examples/probes/default").probes
        if p.user == text
    )


def planned(body: dict, index: int) -> Reply:
    pid = which_probe(body)
    if pid == "greeting" and body.get("seed") == 1:
        return Reply(error="overloaded", status=503)
    return PLAN[pid]


@pytest.mark.slow  # 3 s in the fast tier
def test_planned_behaviours_give_every_figure(tmp_path: Path, probes_dir: Path) -> None:
    card = load_card()
    with ScriptedEndpoint(planned, model_id="planned") as ep:
        res = run_probe(ep.base_url, probes_dir, tmp_path / "p", samples=2, progress=False)
        bodies = ep.requests
    # the request is what Pi sends: its system prompt for the probe set's cwd/date, its active tools, text parts
    probes = load_probes(probes_dir)
    assert all(
        b["messages"][0] == {"role": "system", "content": card.render_system_prompt(probes.cwd, probes.date)}
        for b in bodies
    )
    assert all(b["tools"] == card_wire_tools(card) for b in bodies)
    assert sorted({b["seed"] for b in bodies}) == [0, 1]
    agg = res.aggregates
    assert (agg["samples"], agg["scored"], agg["unscored"]) == (16, 15, 1)
    r = agg["rates"]
    # 12 samples need a tool (6 probes x 2), 3 scored samples need none (explain x2, greeting x1)
    assert r["tool_call"] == rate(7, 15).as_dict()  # list, read, create (x2 each) + greeting once
    assert r["tool_call_when_needed"] == rate(6, 12).as_dict()
    assert r["answered_without_tool"] == rate(2, 12).as_dict()  # fix-after-read; the malformed/untagged tried
    assert r["unneeded_tool_call"] == rate(1, 3).as_dict()
    assert r["right_tool"] == rate(6, 12).as_dict()  # list, read and create call the expected tool (valid or not)
    assert r["malformed_tool_call"] == rate(2, 15).as_dict()
    assert r["untagged_tool_call"] == rate(2, 15).as_dict()
    assert r["think"] == rate(2, 15).as_dict()
    assert r["hit_token_cap"] == rate(2, 15).as_dict() and r["stopped"] == rate(13, 15).as_dict()
    assert r["double_encoded"] == rate(2, 7).as_dict() and r["valid_call"] == rate(3, 7).as_dict()
    assert agg["calls"]["invalid_by_reason"] == {"arguments_double_encoded": 2, "missing_required": 2}
    assert agg["per_probe"]["greeting"]["n"] == 1
    md = (tmp_path / "p" / "results.md").read_text()
    assert "| Double-encoded arguments (calls) | 29% [" in md and "greeting#1" in md
    assert load_probe_results(tmp_path / "p").aggregates == agg


@pytest.mark.slow  # 3 s in the fast tier
def test_compare_puts_runs_side_by_side(tmp_path: Path, probes_dir: Path) -> None:
    def good(body: dict, index: int) -> Reply:
        return Reply(tool_calls=[("bash", '{"command":"ls"}')])

    with ScriptedEndpoint(planned, model_id="base") as a, ScriptedEndpoint(good, model_id="tuned") as b:
        run_probe(b.base_url, probes_dir, tmp_path / "tuned", samples=1, progress=False)
        proc = subprocess.run(
            [
                str(HARNESSFIT),
                "probe",
                a.base_url,
                "--samples",
                "1",
                "--out",
                str(tmp_path / "cmp"),
                "--compare",
                str(tmp_path / "tuned"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    table = (tmp_path / "cmp" / "compare.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| Turns with a tool call"))
    assert "(4/8)" in row and "(8/8)" in row  # base: list, read, create and greeting call; tuned: every turn
    data = orjson.loads((tmp_path / "cmp" / "compare.json").read_bytes())
    assert data["metrics"]["tool_call"][1] == rate(8, 8).as_dict()
    with pytest.raises(UserError, match="at least two"):
        compare_probes([tmp_path / "tuned"], tmp_path / "x.md")
    with pytest.raises(UserError, match="neither a LoRA adapter folder"):
        probe_with_compare(
            "http://127.0.0.1:9/v1",
            probes_dir,
            tmp_path / "y",
            compare=tmp_path / "nothing",
            model_id="m",
            samples=1,
            progress=False,
        )


def test_bad_probe_sets_are_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "probes.yaml").write_text("probes:\n  - id: a\n    needs_tool: true\n")
    with pytest.raises(UserError, match="without `user`"):
        load_probes(tmp_path)
    with pytest.raises(UserError, match="probe set not found"):
        load_probes(tmp_path / "missing")


@pytest.mark.slow
def test_embedded_model_beside_an_adapter_of_it(tmp_path: Path, probes_dir: Path) -> None:
    from peft import LoraConfig, get_peft_model

    from harnessfit.models import load_model

    adapter = tmp_path / "adapter"
    net = get_peft_model(load_model("smollm2-135m"), LoraConfig(r=2, target_modules=["q_proj"]))
    net.save_pretrained(str(adapter))
    subset = tmp_path / "probes"
    subset.mkdir()
    full = load_probes(probes_dir)
    keep = [p.model_dump(mode="json", exclude_defaults=True) for p in full.probes if p.id in ("list-files", "greeting")]
    (subset / "probes.yaml").write_text(json.dumps({"name": "subset", "probes": keep}))
    base, tuned, table = probe_with_compare(
        "smollm2-135m", subset, tmp_path / "out", compare=adapter, samples=1, max_tokens=16, progress=False, threads=1
    )
    for res in (base, tuned):
        assert res.status == "success" and res.aggregates["scored"] == 2, res.samples
        assert all(s.finish_reason in ("stop", "length", "tool_calls") for s in res.samples)
    assert tuned.model["adapter"] == str(adapter)
    assert "Turns with a tool call" in table.read_text()

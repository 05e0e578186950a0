"""Every stage takes the target harness and records it; downstream stages take it from their input and refuse another
with one line that names both versions and both fixes (``harness.versions.stage_harness``) — build, audit, train,
``serve --pi-config`` and ``eval agent``, through their CLIs. The refusals happen before any model loads or Pi runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from _helpers.pi_sessions import ordinary_calls, write_session
from harnessfit.cli import app
from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.errors import UserError
from harnessfit.harness.card import load_card
from harnessfit.harness.versions import (
    NEWEST_PI_VERSION,
    check_same_harness,
    harness_recorded_in,
    recorded_harness,
    stage_harness,
    trained_harness,
)

OLD, NEW = "pi@0.73.1", f"pi@{NEWEST_PI_VERSION}"
RECIPE = Path(__file__).resolve().parents[2] / "examples" / "recipes" / "smollm2-cpu-demo.yaml"


def _one_line_refusal(res, *needles: str) -> str:
    """The CLI stopped with a UserError (``harnessfit.cli.main`` prints it as one line, exit 2) naming ``needles``."""
    assert isinstance(res.exception, UserError), res.output
    line = str(res.exception)
    assert "\n" not in line and line.startswith("harness mismatch: "), line
    for needle in needles:
        assert needle in line, (needle, line)
    return line


def test_the_rule_inherits_then_refuses() -> None:
    assert stage_harness(None, None, what="x", stage="audit", redo="r") == NEW  # nothing recorded: the default
    assert stage_harness(None, OLD, what="x", stage="audit", redo="r") == OLD  # no --harness: the input's
    assert stage_harness("pi@0.73.1", OLD, what="x", stage="audit", redo="r") == OLD
    assert stage_harness("pi", None, what="x", stage="audit", redo="r") == NEW
    with pytest.raises(UserError) as err:
        check_same_harness("the dataset d", OLD, NEW, stage="audit", redo="rebuild the dataset")
    assert str(err.value) == (
        f"harness mismatch: the dataset d is for {OLD}, but audit targets {NEW}: run audit "
        f"with --harness {OLD}, or rebuild the dataset with --harness {NEW}"
    )
    check_same_harness("a base model", None, NEW, stage="eval agent", redo="retrain")  # nothing to disagree with


def test_recorded_harness_reads_every_artifact(tmp_path: Path) -> None:
    assert recorded_harness({"harness": "pi@0.82.0"}) == "pi@0.82.0"
    assert recorded_harness({"harness_card": {"id": "pi-0.73.1"}}) == OLD  # a dataset built before the field
    assert recorded_harness({"model": "x"}) is None and recorded_harness(None) is None
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "harnessfit_adapter.json").write_bytes(orjson.dumps({"harness": OLD}))
    assert harness_recorded_in(adapter) == (OLD, adapter / "harnessfit_adapter.json")
    assert trained_harness("smollm2-135m", adapter) == (OLD, adapter / "harnessfit_adapter.json")
    assert trained_harness("http://127.0.0.1:9/v1") is None and trained_harness(str(tmp_path)) is None


def test_build_config_takes_one_harness_spec() -> None:
    assert config_from_values(inputs=["x"]).harness == NEW
    assert config_from_values(inputs=["x"], harness="pi@0.82.0").card_name_version == ("pi", "0.82.0")
    legacy = config_from_values(inputs=["x"], harness="pi", harness_version="0.73.1")
    assert legacy.harness == OLD and "harness_version" not in legacy.semantic_dict()
    with pytest.raises(UserError, match="disagree"):
        config_from_values(inputs=["x"], harness="pi@1.6.0", harness_version="0.73.1")
    with pytest.raises(UserError, match="exact Pi version"):
        config_from_values(inputs=["x"], harness="pi@latest")


@pytest.fixture(scope="module")
def old_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset built for pi@0.73.1 from a session in 0.73.1's wording."""
    root = tmp_path_factory.mktemp("ds")
    write_session(root / "s.jsonl", "0.73.1", ordinary_calls("0.73.1"))
    out = root / "dataset"
    build_dataset(config_from_values(inputs=[str(root / "s.jsonl")], harness=OLD, parquet=False), root, out=out)
    return out


def test_the_dataset_manifest_records_the_target(old_dataset: Path) -> None:
    m = orjson.loads((old_dataset / "manifest.json").read_bytes())
    card = load_card("pi", "0.73.1")
    assert m["harness"] == OLD == m["config"]["harness"] and m["counts"]["kept"] == 1
    assert m["harness_card"] | {"install_dir": None} == {
        "id": card.id,
        "sha256": card.sha256,
        "package": card.package,
        "install_dir": None,
        "tools": list(card.default_tools),
    }
    assert f"Target harness `{OLD}`" in (old_dataset / "README.md").read_text()


def test_verify_rebuilds_for_the_recorded_harness(old_dataset: Path) -> None:
    from harnessfit.dataset.verify import verify_dataset

    assert verify_dataset(old_dataset).ok  # the manifest's harness, not the default, is what it rebuilds for


def test_building_old_sessions_for_the_newest_rewords_their_texts(old_dataset: Path, tmp_path: Path) -> None:
    # 0.73.1's write result names a byte count 1.6.0 does not: the build for the newest puts it in 1.6.0's words
    res = CliRunner().invoke(
        app, ["build", "--inputs", str(old_dataset.parent / "s.jsonl"), "--out", str(tmp_path / "n"), "--no-parquet"]
    )
    assert res.exit_code == 0, res.output
    m = orjson.loads((tmp_path / "n" / "manifest.json").read_bytes())
    assert m["harness"] == NEW and m["counts"]["rejected_by_reason"] == {} and m["counts"]["kept"] == 1
    texts = b"".join(p.read_bytes() for p in (tmp_path / "n").rglob("*.jsonl"))
    assert b"Successfully wrote to b.txt" in texts and b"Successfully wrote 3 bytes" not in texts


def test_audit_refuses_another_harness(old_dataset: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["audit", str(old_dataset), "--out", str(tmp_path / "a"), "--harness", NEW])
    _one_line_refusal(
        res,
        f"the dataset {old_dataset} is for {OLD}",
        f"audit targets {NEW}",
        f"--harness {OLD}",
        "rebuild the dataset",
    )
    assert not (tmp_path / "a").exists()


@pytest.mark.slow
def test_audit_inherits_and_records_the_harness(old_dataset: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["audit", str(old_dataset), "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert orjson.loads((tmp_path / "a" / "tokenized" / "meta.json").read_bytes())["harness"] == OLD
    assert orjson.loads((tmp_path / "a" / "audit.json").read_bytes())["harness"] == OLD
    assert orjson.loads((tmp_path / "a" / "manifest.json").read_bytes())["harness"] == OLD


def _audit_dir(tmp_path: Path, harness: str) -> Path:
    audit = tmp_path / "audit"
    (audit / "tokenized").mkdir(parents=True)
    (audit / "tokenized" / "meta.json").write_bytes(orjson.dumps({"harness": harness, "model": "smollm2-135m"}))
    return audit


@pytest.mark.slow  # importing the trainer (torch, TRL) is the slow part
def test_training_refuses_another_harness(tmp_path: Path) -> None:
    audit = _audit_dir(tmp_path, OLD)
    res = CliRunner().invoke(
        app, ["train", "sft", str(RECIPE), "--audit-dir", str(audit), "--out", str(tmp_path / "t"), "--harness", NEW]
    )
    _one_line_refusal(res, f"the audit {audit} is for {OLD}", f"train sft targets {NEW}")


def _adapter(tmp_path: Path, harness: str) -> Path:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_bytes(b"{}")
    (adapter / "harnessfit_adapter.json").write_bytes(orjson.dumps({"harness": harness}))
    return adapter


def test_serving_a_pi_config_refuses_another_harness(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path, OLD)
    res = CliRunner().invoke(
        app, ["serve", "smollm2-135m", "--adapter", str(adapter), "--pi-config", str(tmp_path / "pi"), "--harness", NEW]
    )
    _one_line_refusal(res, f"is for {OLD}", f"serve --pi-config targets {NEW}", "retrain")
    assert not (tmp_path / "pi").exists()
    res = CliRunner().invoke(app, ["serve", "smollm2-135m", "--adapter", str(adapter), "--harness", NEW])
    assert isinstance(res.exception, UserError) and "give --pi-config DIR too" in str(res.exception)  # never ignored


@pytest.mark.slow
def test_evaluating_a_model_trained_for_another_pi_says_so(tmp_path: Path) -> None:
    # the example: trained on a dataset built for pi@0.73.1, evaluated under pi@1.6.0 — one line, exit 2
    adapter = _adapter(tmp_path, OLD)
    res = subprocess.run(
        [
            str(Path(sys.executable).parent / "harnessfit"),
            "eval",
            "agent",
            "--model",
            "smollm2-135m",
            "--adapter",
            str(adapter),
            "--out",
            str(tmp_path / "e"),
            "--harness",
            NEW,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    for needle in (
        f"the model ({adapter / 'harnessfit_adapter.json'}) is for {OLD}",
        f"eval agent targets {NEW}",
        f"run eval agent with --harness {OLD}",
        f"retrain with --harness {NEW}",
    ):
        assert needle in lines[0], (needle, lines[0])
    assert not (tmp_path / "e" / "results.json").exists()  # refused before anything ran


def test_probing_a_model_trained_for_another_pi_refuses_another(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path, OLD)
    res = CliRunner().invoke(
        app, ["probe", "smollm2-135m", "--adapter", str(adapter), "--out", str(tmp_path / "p"), "--harness", NEW]
    )
    _one_line_refusal(res, f"is for {OLD}", f"probe targets {NEW}", f"run probe with --harness {OLD}")
    assert not (tmp_path / "p").exists()  # refused before a model loaded or a file was written


def test_a_probe_compare_asks_both_sides_under_one_pi(tmp_path: Path, repo_root: Path) -> None:
    from harnessfit.convert.validate import card_wire_tools
    from harnessfit.eval.probe import probe_with_compare, run_probe
    from harnessfit.harness.scripted import Reply, ScriptedEndpoint

    probes = repo_root / "examples" / "probes" / "default"
    with ScriptedEndpoint(lambda body, i: Reply(text="ok"), model_id="m") as ep:
        earlier = run_probe(ep.base_url, probes, tmp_path / "old", samples=1, pi_version="0.73.1", progress=False)
        assert earlier.harness == OLD and earlier.card["id"] == "pi-0.73.1"
        # no --harness: the base side is asked under the Pi the earlier results were probed under
        base, _, _ = probe_with_compare(
            ep.base_url, probes, tmp_path / "cmp", compare=tmp_path / "old", samples=1, progress=False
        )
        assert base.harness == OLD and ep.requests[-1]["tools"] == card_wire_tools(load_card("pi", "0.73.1"))
        sent = len(ep.requests)
        with pytest.raises(
            UserError, match=f"the probe results {tmp_path / 'old'} is for {OLD}, but probe --compare targets {NEW}"
        ):
            probe_with_compare(
                ep.base_url,
                probes,
                tmp_path / "x",
                compare=tmp_path / "old",
                samples=1,
                pi_version=NEWEST_PI_VERSION,
                progress=False,
            )
        assert len(ep.requests) == sent and not (tmp_path / "x").exists()  # refused before anything was asked


def test_a_before_after_table_never_names_one_pi_for_runs_of_two(tmp_path: Path) -> None:
    from harnessfit.eval.results import EvalResults, write_results
    from harnessfit.report import compare

    def results(name: str, version: str) -> Path:
        res = EvalResults(
            model={"name": name},
            suite={"name": "default", "tasks": [], "sha256": "x"},
            config={},
            sandbox="bwrap",
            pi_version=version,
            harness=f"pi@{version}",
            status="success",
        )
        return write_results(res, tmp_path / name)

    same = compare([results("a", "1.6.0"), results("b", "1.6.0")], tmp_path / "same.md").read_text()
    assert "Pi 1.6.0." in same and "different Pi versions" not in same
    mixed = compare([results("c", "0.73.1"), results("d", "1.6.0")], tmp_path / "mixed.md").read_text()
    assert "Pi 0.73.1 / 1.6.0." in mixed and "different Pi versions (per column: 0.73.1, 1.6.0)" in mixed

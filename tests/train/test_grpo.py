"""GRPO through the real GRPOTrainer on a tiny random Llama over the embedded model's tokenizer and template:
end-of-turn is not truncation, a run writes adapter / metrics / completions / held-out / report (with a scripted
judge among the rewards), prompts are the server's prompts, and the report's statistics are right."""

from __future__ import annotations

import json
import math
import statistics
from types import SimpleNamespace

import pytest
from grpo_fixtures import tiny_grpo_setup, tiny_recipe

from harnessfit.harness.scripted import Reply, ScriptedEndpoint
from harnessfit.train.config import load_grpo_config
from harnessfit.train.grpo import train_grpo


@pytest.fixture(scope="module")
def eot_audit(tmp_path_factory):
    """A tiny setup whose tokenizer eos and pad are <|endoftext|>: end-of-turn <|im_end|> is neither."""
    return tiny_grpo_setup(tmp_path_factory.mktemp("grpo-eot"), distinct_eot=True)


def _rows(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def _only_eot(tok) -> dict:
    eot = tok.convert_tokens_to_ids("<|im_end|>")
    return {"suppress_tokens": [i for i in range(len(tok)) if i != eot]}  # the model can only end its turn


@pytest.mark.slow
def test_end_of_turn_token_is_not_truncation(eot_audit, tmp_path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(eot_audit / "tokenizer")
    eot = tok.convert_tokens_to_ids("<|im_end|>")
    assert eot not in (tok.eos_token_id, tok.pad_token_id)
    cfg = load_grpo_config(
        None,
        **tiny_recipe(
            eot_audit,
            max_steps=1,
            heldout=False,
            max_completion_length=4,
            generation_kwargs=_only_eot(tok),
            rewards={"clean_end": 1.0},
        ),
    )
    res = train_grpo(cfg, tmp_path / "run")
    rows = _rows(res.completions_path)
    assert rows and all(r["length"] == 1 and r["truncated"] is False for r in rows)
    logged = [r for r in _rows(res.metrics_path) if "completions/clipped_ratio" in r]
    assert logged[0]["completions/clipped_ratio"] == 0.0  # TRL's own truncation check agrees

    # the same setup without writing the end-of-turn id into the generation config: TRL generates past it and
    # masks every completion as truncated
    from harnessfit.harness.card import load_card
    from harnessfit.models import load_model
    from harnessfit.rewards.reward_set import RewardSet
    from harnessfit.train.grpo import HarnessfitGRPOTrainer
    from harnessfit.train.grpo_data import load_decision_points

    plain = load_grpo_config(
        None,
        **tiny_recipe(
            eot_audit,
            max_steps=1,
            heldout=False,
            max_completion_length=4,
            generation_kwargs=_only_eot(tok),
            rewards={"clean_end": 1.0},
        ),
        output_dir=str(tmp_path / "plain"),
    )
    points = load_decision_points(eot_audit.parent / "dataset", "train", tok, max_records=2)
    model = load_model(str(eot_audit.parent / "model"))
    rewards = RewardSet({"clean_end": 1.0}, tokenizer=tok, stop_ids=[eot], card=load_card())
    trainer = HarnessfitGRPOTrainer(
        model=model,
        reward_funcs=[rewards],
        args=plain,
        train_dataset=points.dataset(),
        processing_class=tok,
        peft_config=None,
    )
    assert eot not in trainer.eos_token_ids
    trainer.train()
    clipped = [r["completions/clipped_ratio"] for r in trainer.state.log_history if "completions/clipped_ratio" in r]
    assert clipped == [1.0]


def _judge(body: dict, index: int) -> Reply:
    if index % 4 == 3:
        return Reply(text="I would rather not grade this.")  # unscorable: no verdict
    return Reply(text=json.dumps({"score": 2 + index % 7, "critique": f"verdict {index}"}))


@pytest.mark.slow
def test_grpo_run_writes_adapter_metrics_completions_heldout_and_report(tmp_path) -> None:
    audit = tiny_grpo_setup(tmp_path / "setup")
    with ScriptedEndpoint(_judge) as judge:
        cfg = load_grpo_config(
            None,
            **tiny_recipe(
                audit,
                rewards={"format": 1.0, "reference_match": 1.0, "clean_end": 0.5, "length": 1.0, "judge": 1.0},
                judge={"base_url": judge.base_url, "model": "judge", "api_key_env": None, "concurrency": 2},
                overlong_penalty=0.1,
            ),
        )
        res = train_grpo(cfg, tmp_path / "run" / "grpo")  # the folder the report's GRPO section reads
        n_requests = len(judge.requests)
    out = res.out_dir
    assert res.status == "completed" and res.global_step == 2
    assert (res.adapter_dir / "adapter_model.safetensors").is_file()
    meta = json.loads((res.adapter_dir / "harnessfit_adapter.json").read_text())
    assert meta["trainer"] == "grpo" and meta["stop_token_ids"] and meta["base_model_revision"].startswith("sha256:")
    assert not (res.adapter_dir / "ref").exists()  # only the trained adapter is saved
    rows = _rows(res.completions_path)
    assert sorted({r["step"] for r in rows}) == [1, 2] and len(rows) == 4  # one group of 2 per step
    assert all(set(r["components"]) == {"format", "reference_match", "clean_end", "length", "judge"} for r in rows)
    unscorable = [r for r in rows if r["reward"] is None]
    assert all(r["components"]["judge"] is None and r["judge_reason"] == "no_verdict" for r in unscorable)
    assert any(r["critique"] for r in rows)
    # 4 training completions + held-out before and after: 2 points x (greedy + 2 samples) each
    assert n_requests == 4 + 2 * 2 * 3
    metrics = _rows(res.metrics_path)
    assert [m["step"] for m in metrics if "reward" in m] == [1, 2]
    assert any("rewards/judge/mean" in m for m in metrics) and any("rewards/unscorable_frac" in m for m in metrics)
    for which in ("before", "after"):
        h = json.loads((out / f"heldout_{which}.json").read_text())
        assert h["points"] == 2 and h["generations"] == 2 and len(h["per_point"]) == 2
        assert len(h["per_point"][0]["samples"]) == 2 and "components" in h["per_point"][0]["greedy"]
    report = res.report_path.read_text()
    for label in (
        "Welch's t",
        "least-squares slope",
        "best-of-G",
        "mean-of-G",
        "median reward",
        "share < 0.25",
        "share > 0.70",
        "over-long share",
        "mean completion length",
        "policy KL",
        "within-group sd",
        "zero-variance groups",
        "token entropy",
        "unscorable share",
        "`judge`",
        "Held-out decision points",
        "valid-call rate, greedy",
    ):
        assert label in report, label
    for png in ("reward.png", "components.png", "length.png", "kl_entropy.png"):
        assert (out / "plots" / png).stat().st_size > 1000
    assert any((out / "tensorboard").iterdir())
    recipe = json.loads((out / "recipe.json").read_text())
    assert recipe["config_class"] == "HarnessfitGRPOConfig" and recipe["resolved"]["beta"] == 0.01
    assert recipe["guard"]["enabled"] is False  # the rules the report's resource envelope reads
    result = json.loads((out / "result.json").read_text())
    assert result["unscorable"] == len(unscorable) and result["heldout_after"]["points"] == 2

    # the HTML report of the run folder has the GRPO section with its curves, the analysis and the held-out table
    from harnessfit.report.build import build_report

    built = build_report(tmp_path / "run", tmp_path / "report", workers=1)
    assert "grpo" in built.sections and not built.skipped
    page = (tmp_path / "report" / "index.html").read_text()
    grpo = page[page.index('id="grpo"') :]
    stats = json.loads((out / "grpo_stats.json").read_text())
    for label in (
        "Reward analysis",
        "Welch's t",
        "best-of-G (mean over groups)",
        "zero-variance groups",
        "Held-out decision points: before / after",
        "valid-call rate, best of G (any valid)",
    ):
        assert label in grpo, label
    assert f"{100 * stats['all']['unscorable_share']:.1f}%" in grpo
    after = json.loads((out / "heldout_after.json").read_text())
    assert f"{100 * after['greedy_valid_call_rate']:.1f}%" in grpo
    assert (tmp_path / "report" / "figures" / "grpo-reward.svg").is_file()
    assert (tmp_path / "report" / "files" / "grpo" / "grpo_report.md").is_file()


def test_prompts_are_the_servers_prompts(tmp_path) -> None:
    from transformers import AutoTokenizer

    from harnessfit.serve.engine import render_prompt
    from harnessfit.serve.protocol import parse_chat_request
    from harnessfit.train.grpo import HarnessfitGRPOTrainer
    from harnessfit.train.grpo_data import load_decision_points

    audit = tiny_grpo_setup(tmp_path, distinct_eot=False)
    tok = AutoTokenizer.from_pretrained(audit / "tokenizer")
    points = load_decision_points(audit.parent / "dataset", "train", tok, max_records=3)
    for row in points.rows:
        body = {"model": "m", "messages": json.loads(row["state"]), "tools": json.loads(row["tools"])}
        served = render_prompt(tok, parse_chat_request(json.dumps(body).encode()))
        (trained,), _, _ = HarnessfitGRPOTrainer._tokenize_prompts(
            SimpleNamespace(processing_class=tok), [row["prompt"]]
        )
        assert trained == served
        assert row["prompt"].endswith("<|im_start|>assistant\n")


def _welch(a, b):
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    t = (statistics.fmean(b) - statistics.fmean(a)) / math.sqrt(va + vb)
    return t


def test_report_statistics_from_completions(tmp_path) -> None:
    from harnessfit.train.grpo_report import grpo_stats, write_grpo_report

    rows = []
    for step in range(1, 11):
        for group in range(2):
            for k in range(2):
                reward = None if (step, group, k) == (5, 0, 0) else 0.05 * step + 0.1 * k + (0.0 if group else 0.02)
                rows.append(
                    {
                        "step": step,
                        "group": group,
                        "reward": reward,
                        "length": 10 + step,
                        "truncated": step == 1 and k == 0,
                        "valid_call": k == 1,
                        "components": {"format": 1.0, "judge": reward},
                    }
                )
    rows[-1]["reward"] = rows[-2]["reward"]  # last group: zero variance
    metrics = [{"step": s, "kl": 0.001 * s, "entropy": 2.0 - 0.1 * s} for s in range(1, 11)]
    stats = grpo_stats(rows, metrics)
    first = [r["reward"] for r in rows if r["step"] == 1]
    last = [r["reward"] for r in rows if r["step"] == 10]
    assert stats["first_steps"] == [1, 1] and stats["last_steps"] == [10, 10]
    assert stats["first"]["mean_reward"] == pytest.approx(statistics.fmean(first))
    assert stats["welch_t"] == pytest.approx(_welch(first, last))
    assert 0 <= stats["welch_p"] < 0.05
    scored = [r for r in rows if r["reward"] is not None]
    xs, ys = [r["step"] for r in scored], [r["reward"] for r in scored]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    assert stats["slope_per_step"] == pytest.approx(slope)
    assert stats["last"]["best_of_g"] == pytest.approx(
        statistics.fmean([0.62, 0.5])
    )  # group 0: 0.52, 0.62; group 1: 0.5, 0.5
    assert stats["last"]["zero_variance_groups"] == 0.5 and stats["first"]["overlong_share"] == 0.5
    assert stats["all"]["unscorable_share"] == pytest.approx(1 / 40) and stats["first"]["kl"] == 0.001
    assert stats["first"]["share_below_025"] == 1.0 and stats["last"]["share_above_070"] == 0.0
    (tmp_path / "completions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    path, again = write_grpo_report(tmp_path)
    assert again["welch_t"] == stats["welch_t"] and "t = " in path.read_text()


@pytest.mark.slow
def test_health_guard_stops_grpo_with_a_checkpoint(tmp_path) -> None:
    from harnessfit.train.guard import ScriptedReadings

    ok = dict(host_mem_avail_gib=20.0, swap_used_gib=0.0, disk_free_gib=100.0)
    audit = tiny_grpo_setup(tmp_path / "setup")
    cfg = load_grpo_config(
        None,
        **tiny_recipe(
            audit,
            max_steps=200,
            save_steps=100,
            heldout=False,
            guard={"interval_s": 0.1, "min_host_mem_gib": 1.0, "min_free_disk_gib": 1.0},
        ),
    )
    res = train_grpo(
        cfg, tmp_path / "run", reading_source=ScriptedReadings([ok, ok, {**ok, "host_mem_avail_gib": 0.2}])
    )
    assert res.status == "stopped" and "host memory" in res.stop_reason and 0 < res.global_step < 200
    assert res.checkpoint_dir.name == f"checkpoint-{res.global_step}" and res.adapter_dir is None
    assert "Stopped by the health guard" in res.report_path.read_text()


def test_a_relative_dataset_in_audit_json_that_does_not_resolve_says_so(tmp_path, monkeypatch) -> None:
    from harnessfit.errors import UserError
    from harnessfit.train.grpo_data import dataset_dir_of

    (tmp_path / "runs" / "dataset" / "decision_points").mkdir(parents=True)
    (tmp_path / "runs" / "audit").mkdir()
    (tmp_path / "runs" / "audit" / "audit.json").write_text(json.dumps({"dataset": "dataset"}))
    monkeypatch.chdir(tmp_path / "runs")  # where the audit ran: the relative name resolves
    assert dataset_dir_of(tmp_path / "runs" / "audit", None) == (tmp_path / "runs" / "dataset").resolve()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="relative to the folder the audit ran in"):
        dataset_dir_of(tmp_path / "runs" / "audit", None)
    assert dataset_dir_of(tmp_path / "runs" / "audit", str(tmp_path / "runs" / "dataset")).name == "dataset"

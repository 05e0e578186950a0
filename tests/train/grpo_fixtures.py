"""Builders for the GRPO tests: a tiny random Llama over the embedded model's real tokenizer and template, an audit
folder in the audit's exact shape, and a build folder with decision points (Pi's read/bash tools from the card).

The tokenizer is SmolLM2's with the ChatML tool template (what `harnessfit audit --model smollm2-135m` saves);
``distinct_eot=True`` makes its eos and pad ``<|endoftext|>``, so the template's end-of-turn ``<|im_end|>`` is
neither — the case where TRL alone would treat every completion as truncated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def card_tools(names: tuple[str, ...] = ("read", "bash")) -> list[dict[str, Any]]:
    from harnessfit.harness.card import load_card

    card = load_card()
    return [t for t in card.tools if t["function"]["name"] in names]


def _point(i: int, split: str, tools: list[dict[str, Any]], *, call: bool) -> dict[str, Any]:
    path = f"notes{i}.txt"
    turn: dict[str, Any] = (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": {"path": path}}}
            ],
        }
        if call
        else {"role": "assistant", "content": "Done: the file says hello."}
    )
    return {
        "id": f"{split}-dp-{i:03d}",
        "conversation_id": f"{split}-c{i}",
        "split": split,
        "turn_index": 0,
        "state": [
            {"role": "system", "content": "You are a coding agent. Use the tools."},
            {"role": "user", "content": [{"type": "text", "text": f"What is in {path}? Read it."}]},
        ],
        "tools": tools,
        "next_turn": turn,
        "tool_results": [],
        "source": "pi",
        "group": f"g{i}",
    }


def write_dataset(folder: Path, *, n_train: int = 6, n_val: int = 2) -> Path:
    tools = card_tools()
    (folder / "decision_points").mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("validation", n_val)):
        rows = [_point(i, split, tools, call=(i % 3 != 2)) for i in range(n)]
        (folder / "decision_points" / f"{split}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    (folder / "manifest.json").write_bytes(orjson.dumps({"config": {"harness": "pi", "harness_version": "0.73.1"}}))
    return folder


def make_tiny_chat_model(folder: Path, *, distinct_eot: bool = False, seed: int = 0) -> Path:
    """A 1-layer random Llama whose vocabulary is the embedded tokenizer's, saved with that tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from harnessfit.models import load_tokenizer

    tok = load_tokenizer("smollm2-135m", template="auto")
    if distinct_eot:
        tok.eos_token = "<|endoftext|>"
        tok.pad_token = "<|endoftext|>"
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_audit(audit_dir: Path, model_dir: Path, dataset_dir: Path) -> Path:
    """``audit_dir/tokenizer`` + ``tokenized/meta.json`` + ``audit.json`` as `harnessfit audit` writes them."""
    from transformers import AutoTokenizer

    from harnessfit.models import template_info

    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.save_pretrained(audit_dir / "tokenizer")
    saved = AutoTokenizer.from_pretrained(audit_dir / "tokenizer")
    eot = saved.convert_tokens_to_ids("<|im_end|>")
    (audit_dir / "tokenized").mkdir(parents=True, exist_ok=True)
    (audit_dir / "tokenized" / "meta.json").write_bytes(
        orjson.dumps(
            {
                "model": str(model_dir),
                "resolved": str(Path(model_dir).resolve()),
                "revision": None,
                "template_name": "chatml-tools",
                "template_sha256": template_info(saved).sha256,
                "stop_token_ids": [eot],
            }
        )
    )
    (audit_dir / "audit.json").write_bytes(orjson.dumps({"dataset": str(dataset_dir)}))
    return audit_dir


def tiny_grpo_setup(root: Path, *, distinct_eot: bool = False) -> Path:
    """Model + dataset + audit under ``root``; returns the audit folder."""
    model = make_tiny_chat_model(root / "model", distinct_eot=distinct_eot)
    dataset = write_dataset(root / "dataset")
    return write_audit(root / "audit", model, dataset)


def tiny_recipe(audit: Path, **kw: Any) -> dict[str, Any]:
    base = dict(
        audit_dir=str(audit),
        num_generations=2,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=1,
        max_completion_length=6,
        max_steps=2,
        learning_rate=1e-3,
        warmup_steps=0,
        lora_r=4,
        lora_alpha=8,
        lora_dropout=0.0,
        lora_target_modules=["q_proj", "v_proj"],
        heldout_max_records=2,
        heldout_generations=2,
        save_steps=1,
        threads=1,
        seed=0,
        guard={"enabled": False},
    )
    base.update(kw)
    return base

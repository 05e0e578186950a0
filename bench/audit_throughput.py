"""Tokens per second of render + tokenize + mask (``render_many``, as ``audit`` runs it) against plain batch
``tokenizer(texts)`` on the same rendered texts, measured in the same run. Prints one JSON object.

    .venv/bin/python bench/audit_throughput.py                      # synthetic Pi-like conversations
    .venv/bin/python bench/audit_throughput.py --dataset DIR --limit 200   # SFT records of a built dataset
Target: ≥ 75,000 tokens/s on 2 cores (a 22.4 M-token set audited in under 5 minutes).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from pathlib import Path

TARGET = 75_000


def synthetic(n_convs: int, turns: int, seed: int = 0) -> list:
    from harnessfit.core.records import SFTRecord

    rnd = random.Random(seed)
    words = ("the of and to in file path def return import class self value error test run assert None "
             "for while if else print open read write json yield lambda").split()

    def para(n: int) -> str:
        return " ".join(rnd.choice(words) for _ in range(n))

    tools = [{"type": "function", "function": {"name": name, "description": para(30), "strict": False,
                                               "parameters": {"type": "object",
                                                              "properties": {"path": {"type": "string"}}}}}
             for name in ("read", "bash", "edit", "write")]
    out = []
    for c in range(n_convs):
        msgs = [{"role": "system", "content": para(600)},
                {"role": "user", "content": [{"type": "text", "text": para(60)}]}]
        for i in range(turns):
            act = {"role": "assistant", "content": para(15) if i % 2 else None,
                   "tool_calls": [{"id": f"c{c}-{i}", "type": "function",
                                   "function": {"name": "read", "arguments": json.dumps({"path": f"f{i}.py"},
                                                                                        separators=(",", ":"))}}]}
            out.append(SFTRecord(id=f"{c}-{i}", conversation_id=str(c), split="train", action_index=i,
                                 messages=list(msgs), tools=tools, action=act, source="bench", group=str(c)))
            msgs = msgs + [act, {"role": "tool", "content": para(rnd.randint(50, 400)), "tool_call_id": f"c{c}-{i}"}]
    return out


def from_dataset(path: Path, limit: int) -> list:
    from harnessfit.core.records import SFTRecord
    from harnessfit.core.jsonio import read_jsonl

    out = []
    for f in sorted((path / "sft").glob("*.jsonl")):
        for row in read_jsonl(f):
            out.append(SFTRecord.model_validate(row))
            if len(out) >= limit:
                return out
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--dataset", type=Path)
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--convs", type=int, default=8)
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()

    from harnessfit.models import load_tokenizer
    from harnessfit.tokens.render import RecordError, render_many, render_texts

    tok = load_tokenizer(args.model)
    records = from_dataset(args.dataset, args.limit) if args.dataset else synthetic(args.convs, args.turns)
    batches = [records[i:i + args.batch] for i in range(0, len(records), args.batch)]

    # baseline: the same full texts, rendered beforehand, batch-encoded with the plain tokenizer call
    texts = []
    for r in records:
        try:
            texts.append(render_texts(tok, r)[1])
        except RecordError:
            pass
    text_batches = [texts[i:i + args.batch] for i in range(0, len(texts), args.batch)]
    render_many(tok, batches[0])  # warm up template compilation and the tokenizer's thread pool

    t0 = time.perf_counter()
    n_plain = sum(len(ids) for b in text_batches for ids in tok(b, add_special_tokens=False)["input_ids"])
    plain_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    n_audit, violations = 0, 0
    for b in batches:
        for res in render_many(tok, b):
            if not isinstance(res, RecordError):
                n_audit += res.n_tokens
                violations += len(res.violations)
    audit_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    n_full = 0
    for b in batches[: max(1, len(batches) // 4)]:
        n_full += sum(r.n_tokens for r in render_many(tok, b, verify="full") if not isinstance(r, RecordError))
    full_s = time.perf_counter() - t0

    audit_tps = n_audit / audit_s
    print(json.dumps({
        "bench": "audit_throughput",
        "model": args.model,
        "input": str(args.dataset) if args.dataset else f"synthetic {args.convs}x{args.turns}",
        "records": len(records),
        "tokens": n_audit,
        "plain_tokenizer_tokens_per_s": round(n_plain / plain_s),
        "audit_tokens_per_s": round(audit_tps),
        "audit_full_prefix_verify_tokens_per_s": round(n_full / full_s),
        "audit_vs_plain": round(audit_tps / (n_plain / plain_s), 3),
        "violations": violations,
        "target_tokens_per_s": TARGET,
        "meets_target": audit_tps >= TARGET,
        "minutes_for_22_4M_tokens": round(22_400_000 / audit_tps / 60, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }, indent=1))


if __name__ == "__main__":
    main()

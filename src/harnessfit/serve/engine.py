"""The built-in CPU backend's engine: one transformers model, the training template, and a token stream.

Why not ``transformers serve``: we need the exact training template, tool-call arguments kept verbatim (its parser
re-serialises them), a stop on every generation_config stop id, and a server-side output cap. This engine does only
that: render → generate (greedy unless a temperature is asked for) → yield text deltas and a finish reason. One
request at a time (a lock): the CPU has no spare cores for a second one anyway.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.serve.protocol import ApiError, ChatRequest, template_messages, template_tools
from harnessfit.serve.sources import ServeSource, collect_stop_ids, resolve_source

__all__ = ["Engine", "GenerationResult", "load_engine", "render_prompt"]


@dataclass
class GenerationResult:
    """Filled in while a generation runs; final once its iterator is exhausted."""

    prompt_tokens: int
    completion_tokens: int = 0
    finish_reason: str = "stop"  # "stop" (a stop token) | "length" (the cap)
    text: str = ""


class _IdStreamer:
    """A generate() streamer that forwards new token ids (the first ``put`` is the prompt, skipped) to a queue."""

    def __init__(self, q: queue.Queue) -> None:
        self._q = q
        self._prompt_seen = False

    def put(self, value: Any) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        for tok in value.reshape(-1).tolist():
            self._q.put(int(tok))

    def end(self) -> None:
        self._q.put(None)


class Engine:
    """A loaded model + tokenizer + stop ids + output cap, producing text deltas for one request at a time."""

    def __init__(self, model: Any, tokenizer: Any, *, stop_ids: list[int], max_tokens: int, model_id: str) -> None:
        if max_tokens < 1:
            raise UserError("--max-tokens must be at least 1")
        self.model = model
        self.tokenizer = tokenizer
        self.stop_ids = list(stop_ids)
        self.max_tokens = max_tokens
        self.model_id = model_id
        self._lock = threading.Lock()
        self.context_window = int(getattr(model.config, "max_position_embeddings", 0) or 0) or None

    # -- rendering ---------------------------------------------------------------------------------------------
    def render(self, request: ChatRequest) -> list[int]:
        """Prompt token ids for a request (see ``render_prompt``)."""
        return render_prompt(self.tokenizer, request)

    def completion_budget(self, request: ChatRequest, prompt_len: int) -> int:
        """Output cap: the server's max, lowered by the request's max_(completion_)tokens and by the context left."""
        budget = self.max_tokens
        asked = request.requested_max_tokens()
        if asked is not None:
            budget = min(budget, asked)
        if self.context_window:
            room = self.context_window - prompt_len
            if room < 1:
                raise ApiError(
                    400,
                    f"the prompt is {prompt_len} tokens, the model's context is {self.context_window}",
                    code="context_length_exceeded",
                )
            budget = min(budget, room)
        return budget

    # -- generation --------------------------------------------------------------------------------------------
    def generate(
        self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float | None, top_p: float | None,
        seed: int | None, result: GenerationResult, cancel: threading.Event | None = None,
        request: ChatRequest | None = None,
    ) -> Iterator[str]:
        """Yield text deltas as tokens arrive; ``result`` gets the token count, finish reason and full text.

        Stop-token text is never part of the output. A delta that would end inside a multi-byte character is held
        until the character is complete. ``request`` is not read here; layers over the engine (``serve.bestof``)
        read its tools.
        """
        import torch
        from transformers import GenerationConfig, StoppingCriteria, StoppingCriteriaList

        cancel = cancel or threading.Event()

        class _Cancelled(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):  # noqa: ANN001
                return torch.full((input_ids.shape[0],), cancel.is_set(), dtype=torch.bool)

        sample = bool(temperature and temperature > 0)
        gen_config = GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=sample,
            temperature=temperature if sample else None,
            top_p=top_p if sample and top_p is not None else None,
            top_k=None,
            eos_token_id=self.stop_ids,
            pad_token_id=self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.stop_ids[0],
        )
        q: queue.Queue = queue.Queue()
        errors: list[BaseException] = []
        device = next(self.model.parameters()).device
        input_ids = torch.tensor([prompt_ids], dtype=torch.long, device=device)

        def run() -> None:
            try:
                if seed is not None:
                    torch.manual_seed(seed)
                with torch.inference_mode():
                    self.model.generate(
                        input_ids=input_ids,
                        attention_mask=torch.ones_like(input_ids),
                        generation_config=gen_config,
                        streamer=_IdStreamer(q),
                        stopping_criteria=StoppingCriteriaList([_Cancelled()]),
                    )
            except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
                errors.append(exc)
                q.put(None)

        with self._lock:
            worker = threading.Thread(target=run, name="harnessfit-generate", daemon=True)
            worker.start()
            ids: list[int] = []
            sent = ""
            stopped = False
            try:
                while True:
                    tok = q.get()
                    if tok is None:
                        break
                    if tok in self.stop_ids:
                        stopped = True
                        result.completion_tokens += 1
                        continue  # generate() ends after a stop id; the streamer may still flush
                    if stopped:
                        continue
                    ids.append(tok)
                    result.completion_tokens += 1
                    text = self.tokenizer.decode(ids, skip_special_tokens=False)
                    if text.endswith("\ufffd"):
                        continue
                    if text.startswith(sent) and len(text) > len(sent):
                        delta, sent = text[len(sent) :], text
                        result.text = sent
                        yield delta
            finally:
                cancel.set()
                worker.join()
            if errors:
                raise errors[0]
            text = self.tokenizer.decode(ids, skip_special_tokens=False)
            if text.startswith(sent) and len(text) > len(sent):
                result.text = text
                yield text[len(sent) :]
            result.text = text
            result.finish_reason = "stop" if stopped else "length"


def render_prompt(tokenizer: Any, request: ChatRequest) -> list[int]:
    """Prompt token ids: the tokenizer's (training) template with ``add_generation_prompt=True``, tokenized without
    extra special tokens (the template already writes them). A request the template cannot render → ApiError 400."""
    messages = template_messages(request)
    tools = template_tools(request)
    try:
        text = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    except Exception as exc:  # noqa: BLE001 - jinja errors: the request does not fit the template
        raise ApiError(400, f"the chat template cannot render these messages: {exc}") from None
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _model_id(source: ServeSource) -> str:
    if source.adapter is not None:
        return source.adapter.name
    return Path(source.model).name if Path(source.model).expanduser().is_dir() else source.model


def load_engine(
    model: str, *, adapter: Path | None = None, tokenizer: Path | None = None, max_tokens: int = 512,
    model_id: str | None = None, threads: int = 1,
) -> Engine:
    """Load everything the built-in backend needs (the slow part of start-up, ~seconds on the embedded model)."""
    import torch

    from harnessfit.models import load_model, load_tokenizer

    torch.set_num_threads(max(1, threads))
    source = resolve_source(model, adapter=adapter, tokenizer=tokenizer)
    tok = load_tokenizer(str(source.tokenizer_dir or model), template="auto")
    net = load_model(model)
    if source.adapter is not None:
        from harnessfit.models import apply_adapter

        net = apply_adapter(net, source.adapter, base_hint=model).merge_and_unload()
    net.eval()
    stop_ids = collect_stop_ids(tok, source)
    return Engine(net, tok, stop_ids=stop_ids, max_tokens=max_tokens, model_id=model_id or _model_id(source))

"""The built-in CPU backend's engine: one transformers model, the training template, and a token stream.

Why not ``transformers serve``: we need the exact training template, tool-call arguments kept verbatim (its parser
re-serialises them), a stop on every generation_config stop id, and a server-side output cap. This engine does only
that: render → generate (greedy unless a temperature is asked for) → yield text deltas and a finish reason. One
generation at a time (a lock): the CPU has no spare cores for a second one anyway.

The lock is held by the worker thread that runs ``model.generate`` and by nothing else — never by the consumer
across a ``yield`` — so a consumer that stops reading (a client that hung up) can never wedge the engine: its
generation ends at its token cap, or at the next token once ``cancel`` is set (the app sets it when the client
disconnects, and the consumer's ``finally`` sets it when the iterator is closed). ``health()`` reports a
generation that has made no progress for ``stall_seconds`` as stuck; ``/health`` answers 503 then.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.harness.card import load_harness
from harnessfit.harness.versions import trained_harness
from harnessfit.models import apply_adapter, load_model, load_tokenizer
from harnessfit.serve.protocol import ApiError, ChatRequest, template_messages, template_tools
from harnessfit.serve.sources import ServeSource, collect_stop_ids, resolve_source

__all__ = ["Engine", "GenerationResult", "load_engine", "render_prompt", "render_text", "tokenize_prompt"]


@dataclass
class GenerationResult:
    """Filled in while a generation runs; final once its iterator is exhausted."""

    prompt_tokens: int
    completion_tokens: int = 0
    finish_reason: str = "stop"  # "stop" (a stop token) | "length" (the cap)
    text: str = ""
    # filled only when the engine captures (``Engine.capture_logprobs``): every sampled id, the stop id included,
    # and its log-probability under the distribution it was sampled from (after temperature / top-p)
    sampled_ids: list[int] | None = None
    logprobs: list[float] | None = None
    # filled when a request asks for ``top_logprobs`` (vLLM's token API): per sampled token, the most likely
    # (id, log-probability) pairs of the same processed distribution, most likely first
    top_logprobs: list[list[tuple[int, float]]] | None = None


class _IdStreamer:
    """A generate() streamer that forwards new token ids (the first ``put`` is the prompt, skipped) to a queue and
    tells ``on_token`` that the generation made progress."""

    def __init__(self, q: queue.Queue, on_token: Any) -> None:
        self._q = q
        self._on_token = on_token
        self._prompt_seen = False

    def put(self, value: Any) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        for tok in value.reshape(-1).tolist():
            self._on_token()
            self._q.put(int(tok))

    def end(self) -> None:
        self._q.put(None)


class Engine:
    """A loaded model + tokenizer + stop ids + output cap, producing text deltas for one request at a time."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        stop_ids: list[int],
        max_tokens: int,
        model_id: str,
        stall_seconds: float = 120.0,
    ) -> None:
        if max_tokens < 1:
            raise UserError("--max-tokens must be at least 1")
        self.model = model
        self.tokenizer = tokenizer
        self.stop_ids = list(stop_ids)
        self.max_tokens = max_tokens
        self.model_id = model_id
        self.stall_seconds = stall_seconds
        self._lock = threading.Lock()
        self._state = threading.Lock()  # guards the counters below (never held while generating)
        self._busy_since: float | None = None
        self._last_progress: float | None = None
        self._waiting = 0
        self.cancelled = 0  # generations stopped early because their consumer went away
        self.published: dict[str, Any] = {}  # what /v1/models says of the model (``published_facts``)
        self.context_window = int(getattr(model.config, "max_position_embeddings", 0) or 0) or None
        self._max_token_bytes: int | None = None
        self.capture_logprobs = False  # set by `serve --capture-dir`: results carry sampled ids and logprobs
        self.default_temperature: float | None = None  # `serve --temperature`: for requests that name none (Pi)

    # -- rendering ---------------------------------------------------------------------------------------------
    @property
    def max_token_bytes(self) -> int:
        """An upper bound on the bytes of text one token can stand for: its vocabulary entry's UTF-8 length (a
        byte-level BPE entry has one character per byte, a SentencePiece "▁" is 3 bytes for one space)."""
        if self._max_token_bytes is None:
            vocab = self.tokenizer.get_vocab()
            self._max_token_bytes = max((len(str(t).encode("utf-8")) for t in vocab), default=1) or 1
        return self._max_token_bytes

    def render(self, request: ChatRequest) -> list[int]:
        """Prompt token ids for a request (see ``render_prompt``). A prompt whose size alone proves it cannot fit
        the context is refused before it is tokenised (tokenising megabytes takes seconds on a CPU)."""
        text = render_text(self.tokenizer, request)
        if self.context_window:
            size = len(text.encode("utf-8"))
            at_least = -(-size // (2 * self.max_token_bytes))  # a safety factor 2 over the per-token bound
            if at_least >= self.context_window:
                raise ApiError(
                    400,
                    f"the prompt is at least {at_least} tokens ({size} bytes), the model's context is "
                    f"{self.context_window}",
                    code="context_length_exceeded",
                )
        return tokenize_prompt(self.tokenizer, text)

    # -- health ------------------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """``status`` "ok" or "stuck" (a generation without a new token for ``stall_seconds``), plus how long the
        current generation has run, how many requests wait for the engine, and how many were cancelled."""
        now = time.monotonic()
        with self._state:
            busy, last, waiting = self._busy_since, self._last_progress, self._waiting
        stalled = None if last is None else round(now - last, 3)
        stuck = stalled is not None and stalled > self.stall_seconds
        return {
            "status": "stuck" if stuck else "ok",
            "model": self.model_id,
            "generating_seconds": None if busy is None else round(now - busy, 3),
            "seconds_since_progress": stalled,
            "waiting": waiting,
            "cancelled": self.cancelled,
        }

    def _progress(self) -> None:
        with self._state:
            self._last_progress = time.monotonic()

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
        self,
        prompt_ids: list[int],
        *,
        max_new_tokens: int,
        temperature: float | None,
        top_p: float | None,
        seed: int | None,
        result: GenerationResult,
        cancel: threading.Event | None = None,
        request: ChatRequest | None = None,
    ) -> Iterator[str]:
        """Yield text deltas as tokens arrive; ``result`` gets the token count, finish reason and full text.

        Stop-token text is never part of the output. A delta that would end inside a multi-byte character is held
        until the character is complete. ``request`` is not read here; layers over the engine (``serve.bestof``)
        read its tools.
        """
        import torch

        job = _Job(cancel or threading.Event())
        job.scores = self.capture_logprobs or (request is not None and request.wants_scores())
        job.n_top = (request.top_logprobs or 0) if request is not None and request.logprobs else 0
        gen_config = self._generation_config(max_new_tokens, temperature, top_p)
        device = next(self.model.parameters()).device
        input_ids = torch.tensor([prompt_ids], dtype=torch.long, device=device)
        worker = threading.Thread(
            target=self._run_generation,
            args=(job, input_ids, gen_config, seed, len(prompt_ids)),
            name="harnessfit-generate",
            daemon=True,
        )
        worker.start()
        yield from self._stream(job, worker, result)

    def _generation_config(self, max_new_tokens: int, temperature: float | None, top_p: float | None) -> Any:
        from transformers import GenerationConfig

        sample = bool(temperature and temperature > 0)
        return GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=sample,
            temperature=temperature if sample else None,
            top_p=top_p if sample and top_p is not None else None,
            top_k=0,  # no top-k: OpenAI sampling draws from the whole distribution (transformers adds 50)
            eos_token_id=self.stop_ids,
            pad_token_id=self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.stop_ids[0],
        )

    def _run_generation(self, job: _Job, input_ids: Any, gen_config: Any, seed: int | None, prompt_len: int) -> None:
        """The worker thread: wait for the engine lock, run ``model.generate`` with the token ids streamed into
        ``job.q``, and end the stream (None) whatever happens; an error is kept for the consumer to raise."""
        import torch
        from transformers import StoppingCriteriaList

        with self._state:
            self._waiting += 1
        try:
            with self._lock:  # the only holder of the engine lock: this worker, for one generate() call
                with self._state:
                    self._waiting -= 1
                    self._busy_since = self._last_progress = time.monotonic()
                try:
                    if job.cancel.is_set():
                        job.seen_cancel.append(True)
                        return
                    if seed is not None:
                        torch.manual_seed(seed)
                    with torch.inference_mode():
                        out = self.model.generate(
                            input_ids=input_ids,
                            attention_mask=torch.ones_like(input_ids),
                            generation_config=gen_config,
                            streamer=_IdStreamer(job.q, self._progress),
                            stopping_criteria=StoppingCriteriaList([_cancelled_criterion(job)]),
                            output_scores=job.scores,
                            return_dict_in_generate=job.scores,
                        )
                        if job.scores:
                            job.captured.extend(_sampled_logprobs(out, prompt_len))
                            job.top.extend(_top_logprobs(out, job.n_top))
                finally:
                    with self._state:
                        self._busy_since = self._last_progress = None
                        self.cancelled += 1 if job.seen_cancel else 0
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
            job.errors.append(exc)
        finally:
            job.q.put(None)

    def _stream(self, job: _Job, worker: threading.Thread, result: GenerationResult) -> Iterator[str]:
        """The consumer: decode the worker's token ids into text deltas (stop ids dropped, a split character held
        back), then fill ``result``; closing it early cancels the generation."""
        ids: list[int] = []
        sent = ""
        stopped = False
        try:
            while True:
                tok = job.q.get()
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
            job.cancel.set()  # closed early (or done): the worker stops at its next token and frees the engine
        worker.join()
        if job.errors:
            raise job.errors[0]
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        if text.startswith(sent) and len(text) > len(sent):
            result.text = text
            yield text[len(sent) :]
        result.text = text
        result.finish_reason = "stop" if stopped else "length"
        if job.scores:
            result.sampled_ids = [tok for tok, _ in job.captured]
            result.logprobs = [lp for _, lp in job.captured]
            result.top_logprobs = job.top[: len(job.captured)]


@dataclass
class _Job:
    """One ``generate`` call's state shared by its worker thread and its consumer."""

    cancel: threading.Event
    q: queue.Queue = field(default_factory=queue.Queue)
    errors: list[BaseException] = field(default_factory=list)
    captured: list[tuple[int, float]] = field(default_factory=list)  # (sampled id, log-probability)
    scores: bool = False  # keep the processed scores: capture on, or the request asks for logprobs / token ids
    n_top: int = 0  # top_logprobs the request asks for
    top: list[list[tuple[int, float]]] = field(default_factory=list)  # per sampled token, the most likely pairs
    seen_cancel: list[bool] = field(default_factory=list)  # the cancel was seen while generating


def _cancelled_criterion(job: _Job) -> Any:
    """A transformers stopping criterion that ends the generation once ``job.cancel`` is set (and notes it)."""
    import torch
    from transformers import StoppingCriteria

    class _Cancelled(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            hit = job.cancel.is_set()
            if hit:
                job.seen_cancel.append(True)
            return torch.full((input_ids.shape[0],), hit, dtype=torch.bool)

    return _Cancelled()


def _sampled_logprobs(out: Any, prompt_len: int) -> list[tuple[int, float]]:
    """(id, log-probability) of each sampled token from ``generate``'s processed scores: the logits after the
    logits processors and warpers that sampling applied (temperature, top-p), so the value is the log-probability
    of the distribution the token was drawn from — what TRL's harness contract calls processed logprobs."""
    import torch

    sampled = out.sequences[0, prompt_len:].tolist()
    found = []
    for tok, scores in zip(sampled, out.scores, strict=False):
        found.append((int(tok), float(torch.log_softmax(scores[0].float(), dim=-1)[tok])))
    return found


def _top_logprobs(out: Any, n: int) -> list[list[tuple[int, float]]]:
    """Per generated position, the ``n`` most likely (id, log-probability) pairs of the processed distribution the
    token was drawn from (empty lists when ``n`` is 0)."""
    import torch

    found: list[list[tuple[int, float]]] = []
    for scores in out.scores:
        if n <= 0:
            found.append([])
            continue
        values, ids = torch.log_softmax(scores[0].float(), dim=-1).topk(n)
        found.append([(int(i), float(v)) for i, v in zip(ids.tolist(), values.tolist(), strict=True)])
    return found


def render_text(tokenizer: Any, request: ChatRequest) -> str:
    """The prompt text: the tokenizer's (training) template with ``add_generation_prompt=True``. A request the
    template cannot render → ApiError 400."""
    messages = template_messages(request)
    tools = template_tools(request)
    try:
        return tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    except Exception as exc:  # noqa: BLE001 - jinja errors: the request does not fit the template
        raise ApiError(400, f"the chat template cannot render these messages: {exc}") from None


def tokenize_prompt(tokenizer: Any, text: str) -> list[int]:
    """Token ids of a rendered prompt, without extra special tokens (the template already writes them)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def render_prompt(tokenizer: Any, request: ChatRequest) -> list[int]:
    """Prompt token ids: ``render_text`` tokenised by ``tokenize_prompt`` (no size bound; ``Engine.render`` adds
    it)."""
    return tokenize_prompt(tokenizer, render_text(tokenizer, request))


def _model_id(source: ServeSource) -> str:
    if source.adapter is not None:
        return source.adapter.name
    return Path(source.model).name if Path(source.model).expanduser().is_dir() else source.model


def load_engine(
    model: str,
    *,
    adapter: Path | None = None,
    tokenizer: Path | None = None,
    max_tokens: int = 512,
    model_id: str | None = None,
    threads: int = 1,
) -> Engine:
    """Load everything the built-in backend needs (the slow part of start-up, ~seconds on the embedded model)."""
    import torch

    torch.set_num_threads(max(1, threads))
    source = resolve_source(model, adapter=adapter, tokenizer=tokenizer)
    tok = load_tokenizer(str(source.tokenizer_dir or model), template="auto")
    net = load_model(model)
    if source.adapter is not None:
        net = apply_adapter(net, source.adapter, base_hint=model).merge_and_unload()
    net.eval()
    stop_ids = collect_stop_ids(tok, source)
    engine = Engine(net, tok, stop_ids=stop_ids, max_tokens=max_tokens, model_id=model_id or _model_id(source))
    engine.published = published_facts(model, source.adapter)
    return engine


def published_facts(model: str, adapter: Path | None) -> dict[str, Any]:
    """What ``/v1/models`` tells a client about the served model (the ``harnessfit`` key of its entry): the model and
    adapter as given, and the harness they were trained for with that card's digest (None for a base model), so
    ``eval agent --endpoint`` runs the Pi the model learned instead of guessing."""
    found = trained_harness(model, adapter)
    facts: dict[str, Any] = {
        "model": str(model),
        "adapter": str(adapter) if adapter is not None else None,
        "harness": found[0] if found else None,
        "card_sha256": None,
    }
    if found:
        try:
            facts["card_sha256"] = load_harness(found[0]).sha256
        except Exception:  # noqa: BLE001 - a card not committed here: the harness name still says which Pi
            pass
    return facts

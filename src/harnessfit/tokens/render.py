"""Rendering one SFT record with the training chat template, and its loss mask by incremental prefix rendering.

The mask is never found by searching strings: the context is rendered with ``add_generation_prompt=True`` (the
prompt the model will see when serving), then context + action is rendered whole; the tokens after the shared
prefix are the action, and those up to and including the last end-of-turn token are supervised. Then five checks
run on the result, each named by a ``MaskViolation`` kind, so that a record the template mangles is caught, counted and
kept out of training instead of silently teaching the model the wrong thing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson

from harnessfit.core.records import SFTRecord
from harnessfit.models import stop_token_ids
from harnessfit.models.messages import MessageError, content_text, to_template_message
from harnessfit.models.templates import has_generation_markers

__all__ = [
    "MaskViolation",
    "Problem",
    "Rendered",
    "RecordError",
    "prepare_action",
    "prepare_messages",
    "prepare_record",
    "render_prepared",
    "label_checks",
    "double_encoded_input",
    "render_record",
    "render_many",
    "special_texts",
    "prefix_tail_start",
]

_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")
_LEADING_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
# thinking with content; an empty <think></think> pair (Qwen3-style "no thinking" marker) teaches no thoughts
_THINK_CONTENT = re.compile(r"<think>(?!\s*</think>)", re.DOTALL)
# arguments rendered as a JSON string (a quote right after the key) = a JSON string inside JSON
_DOUBLE_ENCODED = re.compile(r'"arguments"\s*:\s*"')


class MaskViolation(StrEnum):
    """What a mask check can find. Each is counted and listed with record ids in the audit."""

    prompt_in_loss = "prompt_in_loss"
    missing_end_of_turn = "missing_end_of_turn"
    think_in_labels = "think_in_labels"
    prefix_unstable = "prefix_unstable"
    double_encoded_arguments = "double_encoded_arguments"


class Problem(StrEnum):
    """Records that cannot be rendered at all (bad input), counted separately from mask violations."""

    invalid_record = "invalid_record"
    empty_action = "empty_action"
    render_error = "render_error"
    too_long = "too_long"


class RecordError(Exception):
    """A record that cannot be rendered; carries the ``Problem`` kind and one line of detail."""

    def __init__(self, problem: Problem, detail: str) -> None:
        super().__init__(detail)
        self.problem = problem


@dataclass
class Rendered:
    """One rendered record: the token ids, the loss mask (1 = supervised), the rendered text, and the checks."""

    id: str
    input_ids: list[int]
    assistant_masks: list[int]
    text: str
    n_prompt: int
    violations: list[MaskViolation] = field(default_factory=list)

    @property
    def n_tokens(self) -> int:
        return len(self.input_ids)

    @property
    def n_supervised(self) -> int:
        return sum(self.assistant_masks)


def _message(msg: dict[str, Any], where: str) -> dict[str, Any]:
    try:
        return to_template_message(msg, where=where)
    except MessageError as err:
        raise RecordError(Problem.invalid_record, str(err)) from None


def prepare_action(raw: dict[str, Any], *, think_in_labels: bool = False) -> dict[str, Any]:
    """The action (an assistant message in wire form) ready for a template, as ``prepare_record`` prepares it."""
    action = _message(raw, "action")
    if action.get("role") != "assistant":
        raise RecordError(Problem.invalid_record, f"action role is {action.get('role')!r}, not assistant")
    try:
        reasoning = next((content_text(raw.get(k)) for k in _REASONING_KEYS if raw.get(k)), "")
    except MessageError as err:
        raise RecordError(Problem.invalid_record, f"action reasoning: {err}") from None
    if think_in_labels:
        if reasoning:
            action["content"] = f"<think>\n{reasoning}\n</think>\n\n" + action["content"]
    else:
        action["content"] = _LEADING_THINK.sub("", action["content"])
    if not action["content"].strip() and not action.get("tool_calls"):
        raise RecordError(Problem.empty_action, "assistant action has no text and no tool calls")
    return action


def prepare_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Context messages in template form (``harnessfit.models.messages``); a bad one is a ``RecordError``."""
    return [_message(m, f"messages[{i}]") for i, m in enumerate(messages)]


def prepare_record(record: SFTRecord, *, think_in_labels: bool = False) -> tuple[list[dict], dict, list[dict]]:
    """Messages, action and tools ready for a template, converted by ``harnessfit.models.messages`` — the same
    conversion the server applies to a request, so the audited prompt is the served prompt. The action's thinking is
    dropped unless ``think_in_labels`` (then it is put in front of the content as ``<think>…</think>``, the form
    reasoning models emit)."""
    messages = prepare_messages(record.messages)
    return messages, prepare_action(record.action, think_in_labels=think_in_labels), record.tools


def double_encoded_input(action: dict[str, Any]) -> bool:
    """Arguments whose JSON text decodes to a string (a JSON string holding JSON): Pi rejects these."""
    for call in action.get("tool_calls") or []:
        args = (call.get("function") or {}).get("arguments")
        if isinstance(args, str):
            try:
                if isinstance(orjson.loads(args), str):
                    return True
            except orjson.JSONDecodeError:
                continue
    return False


def render_prepared(tokenizer, messages: list[dict], action: dict, tools: list[dict], with_spans: bool):
    """``(prefix_text, full_text, generation_spans | None)`` of prepared messages + action. The prefix goes through
    ``apply_chat_template`` (what a server shows the model); the whole goes through the same Jinja renderer, asking
    for the character spans of ``{% generation %}`` blocks when the template has them (an independent witness of
    where assistant output is)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    try:
        prefix = tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=True, tokenize=False
        )
        if with_spans:
            chat = [{k: v for k, v in m.items() if v is not None} for m in messages + [action]]
            texts, spans = render_jinja_template(
                conversations=[chat],
                tools=tools or None,
                chat_template=tokenizer.chat_template,
                return_assistant_tokens_mask=True,
                **tokenizer.special_tokens_map,
            )
            full, gen = texts[0], spans[0]
        else:
            full = tokenizer.apply_chat_template(messages + [action], tools=tools or None, tokenize=False)
            gen = None
    except RecordError:
        raise
    except Exception as exc:  # noqa: BLE001 - any template failure is a per-record problem, not a crash
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise RecordError(Problem.render_error, f"{type(exc).__name__}: {first}"[:300]) from None
    return str(prefix), str(full), gen


def _render(tokenizer, record: SFTRecord, think_in_labels: bool, with_spans: bool):
    messages, action, tools = prepare_record(record, think_in_labels=think_in_labels)
    return render_prepared(tokenizer, messages, action, tools, with_spans)


def render_texts(tokenizer, record: SFTRecord, *, think_in_labels: bool = False) -> tuple[str, str]:
    """``(prefix_text, full_text)``: the context with the generation prompt, and context + action."""
    prefix, full, _ = _render(tokenizer, record, think_in_labels, with_spans=False)
    return prefix, full


def special_texts(tokenizer) -> list[str]:
    return sorted({t.content for t in tokenizer.added_tokens_decoder.values() if t.special and t.content})


def prefix_tail_start(prefix_text: str, specials: list[str]) -> int:
    """Start of the last special (added) token in the prefix. Added tokens split the text before the pre-tokenizer
    runs, so everything before it tokenizes the same whatever follows; only the tail needs re-tokenizing."""
    return max((prefix_text.rfind(s) for s in specials), default=-1)


def _covered(c0: int, c1: int, spans) -> bool:
    """Is the character range [c0, c1) inside the union of the generation spans?"""
    pos = c0
    for a, b in sorted(spans):
        if a <= pos < b:
            pos = b
        if pos >= c1:
            return True
    return pos >= c1


def label_checks(
    ids: Sequence[int],
    n_tokens: int,
    start: int,
    in_prompt: bool,
    chars,
    text: str,
    gen_spans,
    eot: frozenset[int],
    think_in_labels: bool,
    bad_input_args: bool,
) -> tuple[int, list[MaskViolation]]:
    """The end of the supervised tokens and the label checks of one rendered action whose own tokens are
    ``ids[:n_tokens]`` (``ids`` may go on: a chain holds later actions), supervised from ``start``; ``chars(i)``
    gives token ``i``'s character span in ``text``. Returns ``(end, violations)`` except ``prefix_unstable``."""
    end = n_tokens
    for j in range(n_tokens - 1, start - 1, -1):  # the action's tokens through its last end-of-turn token
        if int(ids[j]) in eot:
            end = j + 1
            break
    found: list[MaskViolation] = []
    c0 = chars(start)[0] if end > start else 0
    c1 = chars(end - 1)[1] if end > start else 0
    if in_prompt or (gen_spans is not None and end > start and not _covered(c0, c1, gen_spans)):
        found.append(MaskViolation.prompt_in_loss)
    if end <= start or int(ids[end - 1]) not in eot:
        found.append(MaskViolation.missing_end_of_turn)
    label_text = text[c0:c1]
    if not think_in_labels and _THINK_CONTENT.search(label_text):
        found.append(MaskViolation.think_in_labels)
    if bad_input_args or _DOUBLE_ENCODED.search(label_text):
        found.append(MaskViolation.double_encoded_arguments)
    return end, found


def _finish(
    record_id: str,
    full_text: str,
    prefix_text: str,
    enc,
    k: int,
    tail_ids: list[int] | None,
    tail_start: int,
    prefix_ids: list[int] | None,
    gen_spans,
    eot: frozenset[int],
    think_in_labels: bool,
    bad_input_args: bool,
) -> Rendered:
    full_ids: list[int] = enc["input_ids"][k]
    # --- incremental-prefix verifier: the prefix's own tokens must be the first tokens of the whole
    stable = full_text.startswith(prefix_text)
    if prefix_ids is None:  # fast form: tokens before the prefix's last special token are shared by construction
        first = enc.char_to_token(k, tail_start) if stable else None
        if first is None or tail_ids is None:
            stable = False
            n_prefix = 0
        else:
            n_prefix = first + len(tail_ids)
            stable = full_ids[first:n_prefix] == tail_ids
    else:
        n_prefix = len(prefix_ids)
        stable = stable and full_ids[:n_prefix] == prefix_ids
    if stable:
        start = n_prefix
    else:  # find where the two actually part, to say how far the prompt leaks into the loss
        ref = prefix_ids if prefix_ids is not None else []
        start = 0
        while start < min(len(ref), len(full_ids)) and ref[start] == full_ids[start]:
            start += 1

    def chars(i: int) -> tuple[int, int]:
        span = enc.token_to_chars(k, i)
        return span.start, span.end

    end, found = label_checks(
        full_ids,
        len(full_ids),
        start,
        start < n_prefix,
        chars,
        full_text,
        gen_spans,
        eot,
        think_in_labels,
        bad_input_args,
    )
    if not stable:
        found.insert(0, MaskViolation.prefix_unstable)
    mask = [0] * start + [1] * (end - start) + [0] * (len(full_ids) - end)
    return Rendered(
        id=record_id, input_ids=full_ids, assistant_masks=mask, text=full_text, n_prompt=start, violations=found
    )


def render_many(
    tokenizer,
    records: Sequence[SFTRecord],
    *,
    think_in_labels: bool = False,
    eot: set[int] | None = None,
    verify: str = "tail",
) -> list[Rendered | RecordError]:
    """Render, tokenize (in one batch) and mask many records; each result is a ``Rendered`` or a ``RecordError``.

    The incremental-prefix verifier tokenizes the prefix on its own and checks it equals the first tokens of the
    whole, so a template or tokenizer that merges across the boundary is caught, not masked wrongly. End-of-turn
    tokens (``eot``, default ``harnessfit.models.stop_token_ids(tokenizer)``) are the ids the server stops on.
    ``verify="full"`` tokenizes the whole prefix; ``"tail"`` (default, same answer, much faster) tokenizes only
    the prefix after its last special token, because added tokens cut the text before BPE sees it."""
    with_spans = has_generation_markers(tokenizer.chat_template)
    eot_set = frozenset(stop_token_ids(tokenizer) if eot is None else eot)
    specials = special_texts(tokenizer)
    results: list[Rendered | RecordError | None] = [None] * len(records)
    ok: list[int] = []
    texts: list[tuple[str, str, Any]] = []
    for i, record in enumerate(records):
        try:
            texts.append(_render(tokenizer, record, think_in_labels, with_spans))
            ok.append(i)
        except RecordError as err:
            results[i] = err
    if not ok:
        return results  # type: ignore[return-value]
    enc = tokenizer([t[1] for t in texts], add_special_tokens=False)
    tail_starts = [prefix_tail_start(t[0], specials) for t in texts]
    if verify == "full" or any(p < 0 for p in tail_starts):
        prefix_all = tokenizer([t[0] for t in texts], add_special_tokens=False)["input_ids"]
        tails: list[list[int] | None] = [None] * len(texts)
    else:
        prefix_all = None
        tails = tokenizer([t[0][p:] for t, p in zip(texts, tail_starts, strict=True)], add_special_tokens=False)[
            "input_ids"
        ]
    for k, i in enumerate(ok):
        record = records[i]
        prefix_ids = prefix_all[k] if prefix_all is not None else None
        rendered = _finish(
            record.id,
            texts[k][1],
            texts[k][0],
            enc,
            k,
            tails[k],
            tail_starts[k],
            prefix_ids,
            texts[k][2],
            eot_set,
            think_in_labels,
            double_encoded_input(record.action),
        )
        if MaskViolation.prefix_unstable in rendered.violations and prefix_ids is None:
            # re-run this one record with the full verifier so the report says exactly where they part
            one = tokenizer([texts[k][0]], add_special_tokens=False)["input_ids"][0]
            rendered = _finish(
                record.id,
                texts[k][1],
                texts[k][0],
                enc,
                k,
                None,
                tail_starts[k],
                one,
                texts[k][2],
                eot_set,
                think_in_labels,
                double_encoded_input(record.action),
            )
        results[i] = rendered
    return results  # type: ignore[return-value]


def render_record(tokenizer, record: SFTRecord, *, think_in_labels: bool = False) -> Rendered:
    """Render one record (see ``render_many``). Raises ``RecordError`` when it cannot be rendered."""
    result = render_many(tokenizer, [record], think_in_labels=think_in_labels)[0]
    if isinstance(result, RecordError):
        raise result
    return result

"""Trajectory chains: one token sequence per run of prefix-stable actions, with the loss on every one of them.

In a causal model the logits at an action's tokens depend only on the tokens before them. When the whole render of
an action (its context, the generation prompt and the action, as ``render.py`` makes a per-action record) is a
token prefix of the next action's render, the next record's sequence holds the first one unchanged; training on the
longest sequence with the loss on both actions gives each action exactly the per-token losses of its own record, at
the tokens of one record instead of two. A **chain** is a maximal run of such actions.

The definition (``chain_run_plain``): render every action as its own record (``render_many``), then walk the
actions of one trajectory in order.

- Actions are grouped into **runs** first (``split_runs``): consecutive actions of one conversation where each
  action's context is the previous action's context, then that action, then whatever followed it (same tools).
  Where that fails the history was rewritten (a compaction epoch, an edited session, another tool's records):
  ``history_rewritten``.
- Within a run, each trainable (clean) action continues the chain of the previous trainable action when its
  rendered text starts with that action's whole rendered text (else ``render_rewritten``: the template renders
  earlier turns differently once later turns exist, as Qwen3-style templates do with past ``<think>`` blocks) and
  its token ids start with that action's token ids, its own supervised tokens coming after them (else
  ``token_seam``: the tokenizer merges across the end of the earlier render). Actions that cannot be trained
  (a mask violation, a render error) stay in the sequence unsupervised and do not break a chain.

The audit runs ``chain_run`` instead: the same answer (a test holds the two equal on real data), but each chain is
tokenized once. The per-action texts are still rendered (that is what proves prefix stability), and each action's
tokens are found inside the chain's tokens: added (special) tokens cut the text before BPE runs, so the tokens of
a render before its last special token are those of any longer text it starts; only the tail after that special
token is tokenized on its own and compared. When anything does not fit that argument (a tail that differs, a
render without a special token, an unstable prefix) the run is done by the definition instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from harnessfit.core.records import SFTRecord
from harnessfit.models import stop_token_ids
from harnessfit.models.templates import has_generation_markers
from harnessfit.tokens.render import (
    MaskViolation,
    RecordError,
    Rendered,
    double_encoded_input,
    label_checks,
    prefix_tail_start,
    prepare_action,
    prepare_messages,
    render_many,
    render_prepared,
    special_texts,
)

__all__ = [
    "BreakReason",
    "BREAK_EXPLANATIONS",
    "ActionRender",
    "ChainAction",
    "Chain",
    "ChainBreak",
    "Run",
    "RunResult",
    "split_runs",
    "chain_run",
    "chain_run_plain",
    "chain_records",
]

_BATCH = 64
_BATCH_CHARS = 4 << 20  # the definition renders a batch of whole records at once: bound it by size


class BreakReason(StrEnum):
    """Why a chain ends before the next action of the same trajectory."""

    history_rewritten = "history_rewritten"
    render_rewritten = "render_rewritten"
    token_seam = "token_seam"


BREAK_EXPLANATIONS: dict[str, str] = {
    "history_rewritten": "the next action's context is not this action's context followed by this action (a "
    "compaction epoch, a rewritten history, or records from another tool); a new chain starts",
    "render_rewritten": "the template renders the earlier turns differently once later turns exist (e.g. past "
    "<think> blocks dropped), so the next render does not start with this one; a new chain starts",
    "token_seam": "the texts continue each other but the tokenizer merges tokens across the end of the earlier "
    "render, so its token ids are not a prefix of the next; a new chain starts",
}


@dataclass
class ActionRender:
    """One action as its own record: token count, supervised span ``[start, end)``, mask violations."""

    id: str
    n_tokens: int
    start: int
    end: int
    violations: list[MaskViolation] = field(default_factory=list)

    @property
    def n_supervised(self) -> int:
        return self.end - self.start

    @classmethod
    def of(cls, r: Rendered) -> ActionRender:
        return cls(
            id=r.id,
            n_tokens=r.n_tokens,
            start=r.n_prompt,
            end=r.n_prompt + r.n_supervised,
            violations=list(r.violations),
        )


@dataclass(frozen=True)
class ChainAction:
    """An action inside a chain: its record id, supervised tokens ``[start, end)`` of the chain, and ``length``,
    the token count of its own record (the chain's first ``length`` tokens are that record exactly)."""

    id: str
    start: int
    end: int
    length: int


@dataclass
class Chain:
    """Token ids of its last action's record, and every trainable action in it (in order)."""

    split: str
    conversation_id: str
    source: str
    group: str
    input_ids: np.ndarray
    actions: list[ChainAction]

    @property
    def id(self) -> str:
        return self.actions[0].id

    @property
    def n_tokens(self) -> int:
        return len(self.input_ids)

    @property
    def n_supervised(self) -> int:
        return sum(a.end - a.start for a in self.actions)

    @property
    def record_tokens(self) -> int:
        """Tokens the same actions take as per-action records."""
        return sum(a.length for a in self.actions)

    def mask(self) -> np.ndarray:
        m = np.zeros(len(self.input_ids), dtype=np.int8)
        for a in self.actions:
            m[a.start : a.end] = 1
        return m

    def cut(self, max_tokens: int | None) -> Chain | None:
        """The chain cut after its last action whose record fits ``max_tokens`` (None when even the first does
        not): exactly the actions that are trainable as records under that cap."""
        if max_tokens is None or self.actions[-1].length <= max_tokens:
            return self
        keep = [a for a in self.actions if a.length <= max_tokens]
        if not keep:
            return None
        return Chain(self.split, self.conversation_id, self.source, self.group, self.input_ids[: keep[-1].length], keep)


@dataclass(frozen=True)
class ChainBreak:
    """A chain ends at action ``after`` and a new one starts at action ``before``, for ``reason``."""

    after: str
    before: str
    reason: BreakReason


@dataclass
class Run:
    """Consecutive actions of one conversation whose contexts extend each other: ``messages`` is the context of the
    last action; action ``k``'s context is ``messages[:n_messages[k]]``."""

    split: str
    conversation_id: str
    source: str
    group: str
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    ids: list[str]
    n_messages: list[int]
    actions: list[dict[str, Any]]

    def record(self, k: int) -> SFTRecord:
        return SFTRecord(
            id=self.ids[k],
            conversation_id=self.conversation_id,
            split=self.split,
            action_index=k,
            messages=self.messages[: self.n_messages[k]],
            tools=self.tools,
            action=self.actions[k],
            source=self.source,
            group=self.group,
        )

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class RunResult:
    """Every action of a run as its own record (``ActionRender`` or the ``RecordError`` it raised), the chains of its
    trainable actions, the breaks between them, and whether the definition had to do the run (``fallback``)."""

    actions: list[ActionRender | RecordError]
    chains: list[Chain]
    breaks: list[ChainBreak]
    fallback: bool = False


def _extends(rec: SFTRecord, prev: Run) -> bool:
    """Is ``rec``'s context the run's last context, then its last action, then anything (same tools)?"""
    n = prev.n_messages[-1]
    if rec.tools != prev.tools or len(rec.messages) <= n or rec.messages[n] != prev.actions[-1]:
        return False
    return rec.messages[:n] == prev.messages[:n]


def split_runs(records: Iterable[SFTRecord]) -> Iterator[tuple[Run, ChainBreak | None]]:
    """Runs of consecutive records (in the order given: a build writes a conversation's actions in order), each with
    the ``history_rewritten`` break before it when it continues the same conversation. Only the last context of a
    run is kept, so memory stays near one record per run."""
    run: Run | None = None
    pending: ChainBreak | None = None
    for rec in records:
        same = run is not None and rec.conversation_id == run.conversation_id and rec.split == run.split
        if same and _extends(rec, run):
            run.messages = rec.messages
            run.ids.append(rec.id)
            run.n_messages.append(len(rec.messages))
            run.actions.append(rec.action)
            continue
        if run is not None:
            yield run, pending
        pending = ChainBreak(run.ids[-1], rec.id, BreakReason.history_rewritten) if same else None
        run = Run(
            split=rec.split,
            conversation_id=rec.conversation_id,
            source=rec.source,
            group=rec.group,
            tools=rec.tools,
            messages=rec.messages,
            ids=[rec.id],
            n_messages=[len(rec.messages)],
            actions=[rec.action],
        )
    if run is not None:
        yield run, pending


def _context_sizes(run: Run) -> list[int]:
    """Rough characters of each context length (``sizes[i]`` for ``messages[:i]``), to bound a batch's memory."""
    sizes = [0]
    for m in run.messages:
        calls = m.get("tool_calls") or []
        sizes.append(sizes[-1] + len(str(m.get("content") or "")) + sum(len(str(c)) for c in calls) + 16)
    return sizes


# -- the definition ---------------------------------------------------------------------------------------------


def _link_reason(
    lower_text: str, lower_ids: np.ndarray, upper_text: str, upper_ids: np.ndarray, upper_start: int
) -> BreakReason | None:
    """None when the upper action continues the lower one's chain, else why not."""
    if not upper_text.startswith(lower_text):
        return BreakReason.render_rewritten
    n = len(lower_ids)
    if len(upper_ids) < n or not np.array_equal(upper_ids[:n], lower_ids) or upper_start < n:
        return BreakReason.token_seam
    return None


def chain_run_plain(tokenizer, run: Run, *, think_in_labels: bool = False, eot: set[int] | None = None) -> RunResult:
    """The definition: every action rendered as its own record (``render_many``, in batches so memory stays
    bounded), chains formed by comparing each trainable action's text and token ids with the previous one's."""
    results: list[ActionRender | RecordError] = []
    chains: list[Chain] = []
    breaks: list[ChainBreak] = []
    members: list[ChainAction] = []
    prev: tuple[str, np.ndarray, ChainAction] | None = None  # text, ids, action of the chain's last action

    def close() -> None:
        if members:
            chains.append(Chain(run.split, run.conversation_id, run.source, run.group, prev[1], list(members)))
            members.clear()

    size = _context_sizes(run)
    k = 0
    while k < len(run):
        batch: list[SFTRecord] = []
        chars = 0
        while k < len(run) and len(batch) < _BATCH and chars < _BATCH_CHARS:
            batch.append(run.record(k))
            chars += size[run.n_messages[k]]
            k += 1
        for _rec, res in zip(
            batch, render_many(tokenizer, batch, think_in_labels=think_in_labels, eot=eot), strict=True
        ):
            if isinstance(res, RecordError):
                results.append(res)
                continue
            results.append(ActionRender.of(res))
            if res.violations:
                continue
            ids = np.asarray(res.input_ids, dtype=np.int32)
            act = ChainAction(res.id, res.n_prompt, res.n_prompt + res.n_supervised, res.n_tokens)
            if prev is not None:
                why = _link_reason(prev[0], prev[1], res.text, ids, act.start)
                if why is not None:
                    close()
                    breaks.append(ChainBreak(prev[2].id, act.id, why))
            members.append(act)
            prev = (res.text, ids, act)
    close()
    return RunResult(results, chains, breaks)


# -- the fast path ----------------------------------------------------------------------------------------------


class _Fallback(Exception):
    """This run does not fit the fast path's argument; do it by the definition."""


@dataclass
class _Head:
    """One tokenized render that later (lower) actions' renders are prefixes of."""

    text: str
    ids: np.ndarray
    enc: Any  # tokenizers.Encoding of ``text``


@dataclass
class _Pending:
    k: int
    tail_p_start: int
    tail_p: str
    tail_f_start: int
    tail_f: str
    n_chars: int
    spans: Any
    bad_args: bool


@dataclass
class _Member:
    head: _Head
    n_chars: int
    act: ChainAction


def chain_run(
    tokenizer,
    run: Run,
    *,
    think_in_labels: bool = False,
    eot: set[int] | None = None,
    specials: list[str] | None = None,
    with_spans: bool | None = None,
) -> RunResult:
    """The same result as ``chain_run_plain``, tokenizing each chain's longest render once.

    Walks the run from its last action down: an action whose render is a text prefix of the current head's render
    joins that head's group, else its render becomes the next head (tokenized once). Each group's tails (the text
    after the last special token of each action's prompt and of its whole render) are tokenized in one batch and
    must be the head's tokens at those places; then the mask checks run on the head's tokens and chains are linked
    downward with the definition's rules."""
    eot_set = frozenset(stop_token_ids(tokenizer) if eot is None else eot)
    specials = special_texts(tokenizer) if specials is None else specials
    spans_on = has_generation_markers(tokenizer.chat_template) if with_spans is None else with_spans
    try:
        return _chain_run_fast(tokenizer, run, think_in_labels, eot_set, specials, spans_on)
    except _Fallback:
        res = chain_run_plain(tokenizer, run, think_in_labels=think_in_labels, eot=set(eot_set))
        res.fallback = True
        return res


def _template_context(run: Run) -> tuple[list[dict[str, Any]], tuple[int, RecordError] | None]:
    """The run's context messages in template form, converted once; the first that fails (its index and error)
    fails every record holding it."""
    conv: list[dict[str, Any]] = []
    for i, m in enumerate(run.messages):
        try:
            conv.append(prepare_messages([m])[0])
        except RecordError as err:
            return conv, (i, RecordError(err.problem, str(err).replace("messages[0]", f"messages[{i}]", 1)))
    return conv, None


@dataclass
class _FastChains:
    """The fast path's state while it walks a run from its last action down: the per-action results, the chains
    and breaks (built downward), the current chain's members (top first), the current head and its group."""

    tokenizer: Any
    run: Run
    think: bool
    eot: frozenset[int]
    results: list[ActionRender | RecordError | None]
    chains: list[Chain] = field(default_factory=list)
    breaks: list[ChainBreak] = field(default_factory=list)
    members: list[_Member] = field(default_factory=list)
    head: _Head | None = None
    group: list[_Pending] = field(default_factory=list)

    def close_chain(self) -> None:
        if self.members:
            top = self.members[0]
            acts = [m.act for m in reversed(self.members)]
            self.chains.append(
                Chain(
                    self.run.split,
                    self.run.conversation_id,
                    self.run.source,
                    self.run.group,
                    top.head.ids[: top.act.length].copy(),
                    acts,
                )
            )
            self.members.clear()

    def link(self, mem: _Member) -> None:
        """Add a trainable action below the current chain's lowest member, or break there."""
        if self.members:
            up = self.members[-1]
            why = None
            if mem.n_chars > up.n_chars or (
                up.head is not mem.head and up.head.text[: mem.n_chars] != mem.head.text[: mem.n_chars]
            ):
                why = BreakReason.render_rewritten
            else:
                L = mem.act.length
                if (
                    up.act.length < L
                    or up.act.start < L
                    or (up.head is not mem.head and not np.array_equal(up.head.ids[:L], mem.head.ids[:L]))
                ):
                    why = BreakReason.token_seam
            if why is not None:
                self.close_chain()
                self.breaks.append(ChainBreak(mem.act.id, up.act.id, why))
        self.members.append(mem)

    def finish_group(self) -> None:
        """Check the group's tails against its head's tokens (in one batch), then mask-check and link each action."""
        group, head, run = self.group, self.head, self.run
        if not group or head is None:
            return
        tails = self.tokenizer([p.tail_p for p in group] + [p.tail_f for p in group], add_special_tokens=False)[
            "input_ids"
        ]
        m = len(group)
        enc, ids = head.enc, head.ids
        for j, p in enumerate(group):
            tp, tf = tails[j], tails[m + j]
            first_p = enc.char_to_token(p.tail_p_start)
            first_f = enc.char_to_token(p.tail_f_start)
            if first_p is None or first_f is None:
                raise _Fallback
            n_prefix, length = first_p + len(tp), first_f + len(tf)
            if (
                length > len(ids)
                or not np.array_equal(ids[first_p:n_prefix], tp)
                or not np.array_equal(ids[first_f:length], tf)
            ):
                raise _Fallback
            end, found = label_checks(
                ids, length, n_prefix, False, enc.token_to_chars, head.text, p.spans, self.eot, self.think, p.bad_args
            )
            self.results[p.k] = ActionRender(run.ids[p.k], length, n_prefix, end, found)
            if not found:
                self.link(_Member(head, p.n_chars, ChainAction(run.ids[p.k], n_prefix, end, length)))
        group.clear()

    def add(self, k: int, conv: list[dict[str, Any]], specials: list[str], with_spans: bool) -> None:
        """Render action ``k`` on its context ``conv``: it joins the current head's group, or starts a new head."""
        run = self.run
        try:
            action = prepare_action(run.actions[k], think_in_labels=self.think)
            prefix, full, spans = render_prepared(self.tokenizer, conv, action, run.tools, with_spans)
        except RecordError as err:
            self.results[k] = err
            return
        if not full.startswith(prefix):
            raise _Fallback
        head = self.head
        if head is None or len(full) > len(head.text) or not head.text.startswith(full):
            self.finish_group()
            enc = self.tokenizer([full], add_special_tokens=False)
            self.head = _Head(full, np.asarray(enc["input_ids"][0], dtype=np.int32), enc.encodings[0])
        tp, tf = prefix_tail_start(prefix, specials), prefix_tail_start(full, specials)
        if tp < 0 or tf < 0:
            raise _Fallback
        self.group.append(
            _Pending(k, tp, prefix[tp:], tf, full[tf:], len(full), spans, double_encoded_input(run.actions[k]))
        )


def _chain_run_fast(
    tokenizer, run: Run, think: bool, eot: frozenset[int], specials: list[str], with_spans: bool
) -> RunResult:
    n = len(run)
    conv, bad = _template_context(run)
    state = _FastChains(tokenizer, run, think, eot, results=[None] * n)
    for k in range(n - 1, -1, -1):
        nk = run.n_messages[k]
        if bad is not None and nk > bad[0]:
            state.results[k] = bad[1]
            continue
        state.add(k, conv[:nk], specials, with_spans)
    state.finish_group()
    state.close_chain()
    state.chains.reverse()
    state.breaks.reverse()
    return RunResult(state.results, state.chains, state.breaks)  # type: ignore[arg-type]


def chain_records(
    tokenizer,
    records: Sequence[SFTRecord],
    *,
    think_in_labels: bool = False,
    fast: bool = True,
) -> tuple[dict[str, ActionRender | RecordError], list[Chain], list[ChainBreak]]:
    """Chains of ``records`` (in order; a conversation's actions consecutive): every action's own-record result by
    id, the chains, and every break (``history_rewritten`` ones included). ``fast=False`` runs the definition."""
    by_id: dict[str, ActionRender | RecordError] = {}
    chains: list[Chain] = []
    breaks: list[ChainBreak] = []
    fn = chain_run if fast else chain_run_plain
    for run, brk in split_runs(records):
        if brk is not None:
            breaks.append(brk)
        res = fn(tokenizer, run, think_in_labels=think_in_labels)
        by_id.update(zip(run.ids, res.actions, strict=True))
        chains += res.chains
        breaks += res.breaks
    return by_id, chains, breaks

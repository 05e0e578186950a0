"""Trajectory → Conversation in Pi's exact wire form (``openai-completions`` provider), or a Rejection.

Serialisation, as Pi sends a stored history (``pi-ai/providers/openai-completions.js`` + ``transform-messages.js``;
the rules that depend on Pi's version are in ``convert.history``, chosen by the card's version):
- ``{"role":"system","content": card.render_system_prompt(cwd, date, install_dir=…)}``; cwd/date from the
  session, else ``DEFAULT_CWD``/``DEFAULT_DATE`` (recorded as ``default_cwd``/``default_date``); the install folder
  is the caller's ``install_dir`` or the card's default (``$HARNESSFIT_HOME``-dependent: fix it for
  machine-independent data).
- user: ``{"role":"user","content":[{"type":"text","text":…}, …]}`` (one part per text block; a source that stored
  the content as one string, ``meta["content_string"]``, gets that string); no part → skipped.
- assistant: ``{"role":"assistant","content": <text>|null, "tool_calls":[{"id", "type":"function",
  "function":{"name","arguments": compact JSON}}]}``; ``tool_calls`` omitted when none; a message with neither is
  skipped. The text is the non-blank text blocks joined with ``""``; the source model's thinking is among them as
  text before Pi 1.3.0 and dropped from 1.3.0 (the trained model is never the model that wrote the history), recorded
  as ``pi.thinking_as_text`` / ``pi.thinking_dropped``. Turns that ended ``aborted``/``error`` are dropped; a tool
  result that follows one answers no call (an orphan, on the wire as on Pi's; the ``orphan_tool_result`` gate cuts
  there).
- tool: ``{"role":"tool","content": text, "tool_call_id": id}`` in call order; ``isError`` is not sent. A call
  without a result gets Pi's synthetic result (the card's ``no_result`` text, ``pi.synthetic_no_result``) after
  the results that exist.
- Tool-call ids containing ``|`` are normalised as Pi does (``PiHistory.call_id``).
- Repaired calls: a mapped call Pi accepts only by repairing it (the card's validator gives *warnings*, no error:
  ``legacy_edit_arguments``, ``edits_json_string``, ``coerced_type`` such as ``"10"`` → ``10``,
  ``ignored_property``) is written in the canonical form Pi executes (``convert.canonical``: edits upgraded to
  ``edits[]``, values coerced, ignored properties removed, schema key order), and ``repaired:<code>`` is recorded per
  kind of repair, so the model learns the call the schema describes. (Pi itself replays the call as stored: this is
  the one place where a conversation's history differs from Pi's replay, on purpose.) Calls with an error are
  rejected (the ``invalid_call`` gate: ``schema_violation`` / ``unsupported_tool`` / ``arguments_double_encoded``),
  never repaired, except a refusal kept as context (``ConversationMeta.context_only`` below).
- Pi sessions recorded under another Pi than the card's (``harness.recorded``: the version is read from the
  session's system message or layout; ``pi.recorded:<versions>`` is recorded): each call is checked against the
  card diff of every version that could have recorded it, and a call whose tool verdict or result template differs
  is noted (the ``harness_version_mismatch`` gate). Other formats have no Pi version and map to the card as is.
- A user message that ends the session unanswered is trimmed (``trim_unanswered_tail``); after that the last
  message must be an assistant answer without tool calls (else ``no_final_response``).
- UI-only calls Pi would never see are dropped with their results where ``convert.policy`` allows it (recorded as
  ``drop:ui_only:<tool>``); nothing is merged: an answer is never glued to another turn.
- ``ConversationMeta.labels_from``: messages before it are history only (the kept messages after a compaction
  summary were written before the compaction, with another context), so no record trains on them.
- ``ConversationMeta.context_only``: assistant messages whose turn holds a call Pi refused before running it and whose
  refusal the session holds in the target's words (``formats.pi.mapping.refusal_in_context``): on the wire as Pi
  replays them, followed by the refusal, and never labels; the turns after them are. A Pi session can also mark an
  assistant message context only (``formats.pi.entries.CONTEXT_ONLY_ENTRY``: a mistake ``harnessfit synth`` planted);
  it stays on the wire as recorded, and its calls' fate is ``marked_context_only``.

The builder (``convert.builder.build_draft``) only builds: what may make the conversation inexact is noted on the
``Draft`` (``convert.draft``), and
the gates (``convert.gates.GATES``) decide, in their order, whether the trajectory is rejected and for what, and where
its exact prefix ends. ``convert_trajectory`` returns all three: the record (a ``Conversation``, or the ``Rejection``
that is the trajectory's ledger row), the exact prefix of a rejected trajectory when it holds at least one label (a
``Conversation`` with ``meta.prefix``; its SFT records and decision points are exported, the conversation is not),
and what became of every source call (``convert.yields.CallFates``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harnessfit.convert import gates
from harnessfit.convert.builder import DEFAULT_CWD, DEFAULT_DATE, DEFAULT_POLICY, build_draft
from harnessfit.convert.draft import Draft
from harnessfit.convert.gates import GateFinding, all_findings, rejection_of, split_gates
from harnessfit.convert.policy import ConvertPolicy
from harnessfit.convert.validate import card_wire_tools
from harnessfit.convert.yields import CallFates, call_fates
from harnessfit.core.conversation import AlteredResult, Conversation, ConversationMeta, PrefixInfo
from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.harness.card import HarnessCard

__all__ = [
    "DEFAULT_CWD",
    "DEFAULT_DATE",
    "DEFAULT_POLICY",
    "Outcome",
    "build_draft",
    "convert_trajectory",
    "to_conversation",
]


@dataclass
class Outcome:
    """What converting one trajectory gives: ``record`` (its ``Conversation``, or the ``Rejection`` that is its ledger
    row), ``prefix`` (the exact prefix of a rejected trajectory with at least one label, as a ``Conversation`` with
    ``meta.prefix``; else ``None``) and ``calls`` (what became of each source call)."""

    record: Conversation | Rejection
    prefix: Conversation | None
    calls: CallFates


def _meta(
    traj: Trajectory,
    card: HarnessCard,
    transformations: list[str],
    labels_from: int,
    prefix: PrefixInfo | None = None,
    altered: list[tuple[int, tuple[str, ...]]] | None = None,
    context_only: list[int] | None = None,
) -> ConversationMeta:
    p = traj.provenance
    return ConversationMeta(
        source=traj.source,
        file=p.file,
        sha256=p.sha256,
        line_start=p.line_start,
        line_end=p.line_end,
        root_request_id=traj.root_request_id,
        repository=traj.repository,
        card=card.id,
        cwd=traj.cwd or DEFAULT_CWD,
        date=traj.date or DEFAULT_DATE,
        transformations=transformations,
        labels_from=labels_from,
        prefix=prefix,
        altered=[AlteredResult(message=k, alterations=list(a)) for k, a in altered] if altered else None,
        context_only=context_only or None,
    )


def _prefix(draft: Draft, cut: int | None) -> tuple[list[dict[str, Any]], int, int]:
    """The wire messages from steps before ``cut`` (``None``: all), without a trailing user message; how many
    assistant messages at or after ``draft.labels_from`` (labels) they hold; and the prefix's own ``labels_from``."""
    kept = (
        list(enumerate(draft.messages))
        if cut is None
        else [(n, m) for n, (m, s) in enumerate(zip(draft.messages, draft.message_steps, strict=True)) if s < cut]
    )
    end = len(kept)
    while end > 1 and kept[end - 1][1]["role"] == "user":
        end -= 1
    kept = kept[:end]
    msgs = [m for _, m in kept]
    no_label = set(draft.context_only(msgs))
    labels = sum(
        1 for k, (n, m) in enumerate(kept) if n >= draft.labels_from and m["role"] == "assistant" and k not in no_label
    )
    return msgs, labels, sum(1 for n, _ in kept if n < draft.labels_from)


def convert_trajectory(
    traj: Trajectory, card: HarnessCard, *, install_dir: str | None = None, policy: ConvertPolicy = DEFAULT_POLICY
) -> Outcome:
    """Convert one trajectory with ``card``: every gate runs; the first (in ``GATES`` order) that finds something
    names the ledger row, and the first problem by position (the smallest ``GateFinding.cut``) ends the exact prefix.

    ``install_dir`` is the harness folder the system prompt names; ``None`` = ``card.default_install_dir()`` (where
    ``harnessfit harness install`` puts Pi on this machine, so prompts equal what Pi sends here)."""
    before_build, after_build = split_gates(gates.GATES)  # read per call: a gate added to the list takes effect
    early = all_findings(Draft(traj), before_build)
    draft: Draft | None = None
    if not any(f.cut == 0 for _, found in early for f in found):  # something before the first problem may be a label
        draft = build_draft(traj, card, install_dir=install_dir, policy=policy)
        found_all = early + all_findings(draft, after_build)
    else:
        found_all = early
    findings: list[GateFinding] = [f for _, found in found_all for f in found]
    cuts = [f.cut for f in findings if f.cut is not None]
    cut = min(cuts) if cuts else None
    fates = call_fates(
        traj,
        findings,
        cut,
        draft.dropped_calls if draft is not None else [],
        recorded=draft.recorded if draft is not None else None,
        recorded_texts=draft.recorded_texts if draft is not None else None,
        altered=[n.result_step if n.result_step is not None else n.step + 1 for n in draft.altered_results]
        if draft is not None
        else (),
        refused=[n.step for n in draft.refused_in_context] if draft is not None else (),
        marked=draft.marked_context_only() if draft is not None else (),
    )
    if not found_all:
        assert draft is not None
        conv = Conversation(
            id=content_id("conv", card.id, traj.id),
            messages=draft.messages,
            tools=card_wire_tools(card),
            meta=_meta(
                traj,
                card,
                draft.transformations,
                draft.labels_from,
                altered=draft.alterations_in(draft.messages),
                context_only=draft.context_only(draft.messages),
            ),
        )
        return Outcome(conv, None, fates)
    gate, own = found_all[0]
    rejection = rejection_of(draft or Draft(traj), gate, own, findings, calls=fates.read, labels=fates.labels)
    prefix = None
    if draft is not None and cut != 0:
        msgs, labels, labels_from = _prefix(draft, cut)
        if labels:
            first = min((f for f in findings if f.cut is not None), key=lambda f: f.cut, default=findings[0])
            info = PrefixInfo(
                of=rejection.record_id, reason=first.reason.value, step=first.step, detail=first.detail, labels=labels
            )
            prefix = Conversation(
                id=content_id("prefix", card.id, traj.id),
                messages=msgs,
                tools=card_wire_tools(card),
                meta=_meta(
                    traj,
                    card,
                    draft.transformations,
                    labels_from,
                    info,
                    draft.alterations_in(msgs),
                    draft.context_only(msgs),
                ),
            )
    return Outcome(rejection, prefix, fates)


def to_conversation(
    traj: Trajectory, card: HarnessCard, *, install_dir: str | None = None, policy: ConvertPolicy = DEFAULT_POLICY
) -> Conversation | Rejection:
    """Convert one trajectory with ``card``: its ``Conversation``, or the ``Rejection`` the first gate (in ``GATES``
    order) with a finding makes (``convert_trajectory`` also gives the exact prefix and the call fates)."""
    return convert_trajectory(traj, card, install_dir=install_dir, policy=policy).record

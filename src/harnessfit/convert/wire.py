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
  result that follows one answers no call (an orphan, as on Pi's wire).
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
  never repaired.
- A user message that ends the session unanswered is trimmed (``trim_unanswered_tail``); after that the last
  message must be an assistant answer without tool calls (else ``no_final_response``).
- ``ConversationMeta.labels_from``: messages before it are history only (the kept messages after a compaction
  summary were written before the compaction, with another context), so no record trains on them.

The builder only builds: what may make the conversation inexact is noted on the ``Draft`` (``convert.draft``), and
the gates (``convert.gates.GATES``) decide, in their order, whether the trajectory is rejected and for what.
"""

from __future__ import annotations

from typing import Any

import orjson

from harnessfit.convert import gates
from harnessfit.convert.canonical import canonical_arguments
from harnessfit.convert.draft import CallFailed, CallInvalid, Draft, ImagesSeen, OrphanResult, UnansweredCall
from harnessfit.convert.gates import first_rejection, split_gates
from harnessfit.convert.history import PiHistory, assistant_blocks, history_rules
from harnessfit.convert.validate import card_wire_tools
from harnessfit.core.conversation import Conversation, ConversationMeta
from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Failure, Rejection
from harnessfit.core.trajectory import Step, Trajectory
from harnessfit.formats.base import Drop, MapContext, Mapping, PiCall
from harnessfit.formats.registry import get_mapping
from harnessfit.harness.card import HarnessCard

__all__ = ["to_conversation", "build_draft", "DEFAULT_CWD", "DEFAULT_DATE"]

DEFAULT_CWD = "/workspace"
DEFAULT_DATE = "2026-01-01"

Turn = tuple[int, Step, list[tuple[int, Step]]]


def _turns(steps: list[Step]) -> list[Turn]:
    """Group steps: each non-tool step with the tool steps that follow it (with their indices in ``steps``)."""
    out: list[Turn] = []
    for i, step in enumerate(steps):
        if step.role == "tool" and out:
            out[-1][2].append((i, step))
        else:
            out.append((i, step, []))
    return out


def _user_message(step: Step, rules: PiHistory) -> dict[str, Any] | None:
    if step.meta.get("content_string") and isinstance(step.text, str):
        return {"role": "user", "content": step.text}  # Pi sends a string content as it is (convertMessages)
    parts = step.meta.get("parts") if isinstance(step.meta.get("parts"), list) else None
    if parts is None:
        parts = [step.text] if step.text else []
    parts = rules.user_parts(parts)
    if not parts:
        return None
    return {"role": "user", "content": [{"type": "text", "text": p} for p in parts]}


def _pair_results(draft: Draft, i: int, step: Step, results: list[tuple[int, Step]]) -> dict[str, Step]:
    """The turn's results by call id; a result that answers none of the turn's calls (or one answered already)
    is noted as an orphan."""
    ids = {c.id for c in step.tool_calls}
    by_id: dict[str, Step] = {}
    for j, r in results:
        if r.tool_call_id in by_id or r.tool_call_id not in ids:
            draft.orphan_results.append(OrphanResult(j, r.tool_call_id, "turn"))
            continue
        by_id[r.tool_call_id or ""] = r
    return by_id


def _assistant(draft: Draft, turn: Turn, mapping: Mapping, ctx: MapContext,
               rules: PiHistory) -> tuple[list[dict[str, Any]], bool]:
    """The turn's wire messages (the assistant message, then its tool messages), and whether the assistant message
    is left open (it had calls, all dropped: the next turn continues it)."""
    i, step, results = turn
    by_id = _pair_results(draft, i, step, results)
    card = ctx.card
    calls: list[dict[str, Any]] = []
    tool_msgs: list[dict[str, Any]] = []
    synthetic: list[dict[str, Any]] = []
    for call in step.tool_calls:
        outcome = mapping.map_call(call, by_id.get(call.id), ctx)
        if isinstance(outcome, Drop):
            draft.transformed(f"drop:{outcome.policy}")
            continue
        if isinstance(outcome, Failure):
            draft.failed_calls.append(CallFailed(i, call, outcome))
            continue
        pieces = [outcome] if isinstance(outcome, PiCall) else list(outcome)
        for k, pc in enumerate(pieces):
            draft.transformed(*pc.transformations)
            verdict = card.validate_call(pc.name, pc.arguments)
            errors = [v for v in verdict if v.severity == "error"]
            warnings = [v for v in verdict if v.severity == "warning"]
            arguments = pc.arguments
            if warnings and not errors:
                arguments = canonical_arguments(card, pc.name, pc.arguments, warnings)
                draft.transformed(*(f"repaired:{w.code}" for w in warnings))
            if errors:
                draft.invalid_calls.append(CallInvalid(i, pc.name, errors[0]))
            cid = rules.call_id(call.id if k == 0 else f"{call.id}_{k}")
            if cid != call.id and k == 0:
                draft.transformed("call_id_normalised")
            calls.append({"id": cid, "type": "function",
                          "function": {"name": pc.name, "arguments": orjson.dumps(arguments).decode()}})
            if pc.result is None:
                # Pi answers a call that has no result with its synthetic one, after the results that exist
                # (pi-ai transformMessages, insertSyntheticToolResults)
                draft.unanswered_calls.append(UnansweredCall(i, call))
                draft.transformed("pi.synthetic_no_result")
                synthetic.append({"role": "tool", "content": rules.no_result, "tool_call_id": cid})
            else:
                source = by_id.get(call.id)
                content = rules.tool_content(pc.result, source.images if source is not None else 0)
                tool_msgs.append({"role": "tool", "content": content, "tool_call_id": cid})
    blocks = assistant_blocks(step)
    if any(kind == "thinking" and text.strip() for kind, text in blocks):
        draft.transformed("pi.thinking_as_text" if rules.foreign_thinking == "text" else "pi.thinking_dropped")
    msg: dict[str, Any] = {"role": "assistant", "content": rules.assistant_content(blocks)}
    if calls:
        msg["tool_calls"] = calls
    if msg["content"] is None and not calls:
        return [], False
    return [msg, *tool_msgs, *synthetic], bool(step.tool_calls) and not calls


def _orphans(draft: Draft, results: list[tuple[int, Step]], after: str, rules: PiHistory) -> None:
    """Results that answer no call: noted for the gate, and on the wire where Pi puts them (it sends every stored
    result; transformMessages pairs nothing with them)."""
    for j, r in results:
        draft.orphan_results.append(OrphanResult(j, r.tool_call_id, after))  # type: ignore[arg-type]
        draft.messages.append({"role": "tool", "content": rules.tool_content(r.text or "", r.images),
                               "tool_call_id": rules.call_id(r.tool_call_id or "")})
        draft.open_assistant = None


def _append(draft: Draft, msgs: list[dict[str, Any]], left_open: bool = False) -> None:
    """Append wire messages; an assistant message that follows an open one is merged into it (Pi would have sent
    one message). ``left_open``: the first of ``msgs`` is itself open (see ``_assistant``)."""
    for n, m in enumerate(msgs):
        is_open = left_open and n == 0
        prev = draft.open_assistant
        if m["role"] == "assistant" and prev is not None:
            merged = (prev["content"] or "") + (m["content"] or "")
            prev["content"] = merged or None
            if "tool_calls" in m:
                prev["tool_calls"] = m["tool_calls"]
            draft.transformed("merge_assistant_after_drop")
            if not is_open:
                draft.open_assistant = None
            continue
        draft.messages.append(m)
        draft.open_assistant = m if is_open else None


def build_draft(traj: Trajectory, card: HarnessCard, *, install_dir: str | None = None, trim: bool = True) -> Draft:
    """The wire messages of ``traj`` and the notes the gates read (no gate runs here; ``to_conversation`` runs them).
    cwd and date come from the trajectory, else ``DEFAULT_CWD`` / ``DEFAULT_DATE`` (recorded as transformations).

    ``trim=False`` keeps an unanswered user tail: the messages are then the whole history as Pi would send it before
    its next request (what the oracle test compares)."""
    draft = Draft(traj, transformations=list(traj.provenance.transformations))
    rules = history_rules(card)
    cwd = traj.cwd or DEFAULT_CWD
    date = traj.date or DEFAULT_DATE
    if not traj.cwd:
        draft.transformed("default_cwd")
    if not traj.date:
        draft.transformed("default_date")
    mapping = get_mapping(traj.source)
    ctx = MapContext(card=card, trajectory=traj, cwd=cwd)
    draft.messages.append({"role": "system", "content": card.render_system_prompt(cwd, date, install_dir=install_dir)})
    history_only = False
    for turn in _turns(traj.steps):
        if history_only:  # the previous step's messages are history only
            draft.labels_from = len(draft.messages)
        i, step, results = turn
        history_only = bool(step.meta.get("history_only"))
        if step.role == "system":
            draft.transformed("source_system_prompt_replaced")
            continue
        if step.role == "tool":  # a tool result before any turn
            _orphans(draft, [(i, step)], "start", rules)
            continue
        if step.meta.get("nested_compaction") and not rules.nested_compaction_summary:
            draft.transformed("pi.nested_compaction_not_sent")  # see PiHistory.nested_compaction_summary
            continue
        if step.role == "user":
            if step.images:
                draft.images.append(ImagesSeen(i, "user", step.images))
            m = _user_message(step, rules)
            if m is not None:
                _append(draft, [m])
            _orphans(draft, results, "user", rules)
            continue
        if step.stop_reason in ("aborted", "error"):
            # Pi skips the turn (transformMessages); results after it stay on the wire and answer no call
            draft.transformed("drop_aborted_or_error_turn")
            _orphans(draft, results, "turn", rules)
            continue
        for j, r in results:
            if r.images:
                draft.images.append(ImagesSeen(j, "tool", r.images))
        _append(draft, *_assistant(draft, turn, mapping, ctx, rules))
    if history_only:
        draft.labels_from = len(draft.messages)
    while trim and len(draft.messages) > 1 and draft.messages[-1]["role"] == "user":
        draft.messages.pop()
        draft.transformed("trim_unanswered_tail")
    return draft


def to_conversation(traj: Trajectory, card: HarnessCard, *,
                    install_dir: str | None = None) -> Conversation | Rejection:
    """Convert one trajectory with ``card``; the first gate (in ``GATES`` order) that fires rejects it.

    ``install_dir`` is the harness folder the system prompt names; ``None`` = ``card.default_install_dir()`` (where
    ``harnessfit harness install`` puts Pi on this machine, so prompts equal what Pi sends here)."""
    before_build, after_build = split_gates(gates.GATES)  # read per call: a gate added to the list takes effect
    early = first_rejection(Draft(traj), before_build)
    if early is not None:
        return early
    draft = build_draft(traj, card, install_dir=install_dir)
    rej = first_rejection(draft, after_build)
    if rej is not None:
        return rej
    p = traj.provenance
    meta = ConversationMeta(
        source=traj.source, file=p.file, sha256=p.sha256, line_start=p.line_start, line_end=p.line_end,
        root_request_id=traj.root_request_id, repository=traj.repository, card=card.id,
        cwd=traj.cwd or DEFAULT_CWD, date=traj.date or DEFAULT_DATE,
        transformations=draft.transformations, labels_from=draft.labels_from,
    )
    return Conversation(id=content_id("conv", card.id, traj.id), messages=draft.messages, tools=card_wire_tools(card),
                        meta=meta)

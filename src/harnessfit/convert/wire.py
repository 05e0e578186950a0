"""Trajectory → Conversation in Pi's exact wire form (``openai-completions`` provider), or a Rejection.

Serialisation, as Pi 0.73.1 sends it (``pi-ai/providers/openai-completions.js`` + ``transform-messages.js``):
- ``{"role":"system","content": card.render_system_prompt(cwd, date, install_dir=…)}``; cwd/date from the
  session, else ``DEFAULT_CWD``/``DEFAULT_DATE`` (recorded as ``default_cwd``/``default_date``); the install folder
  is the caller's ``install_dir`` or the card's default (``$HARNESSFIT_HOME``-dependent: fix it for
  machine-independent data).
- user: ``{"role":"user","content":[{"type":"text","text":…}, …]}`` (one part per text block); no text → skipped.
- assistant: ``{"role":"assistant","content": <non-blank text blocks joined with "">|null, "tool_calls":[{"id",
  "type":"function","function":{"name","arguments": compact JSON}}]}``; ``tool_calls`` omitted when none; a message
  with neither is skipped. Turns that ended ``aborted``/``error`` are dropped with their tool results (Pi drops
  the turn; its results would be orphans). Reasoning is *not* put on the wire (Pi replays it only to the same
  model, as a provider-specific field; the trained model is not the source model) — recorded as
  ``reasoning_not_on_wire``.
- tool: ``{"role":"tool","content": text, "tool_call_id": id}`` in call order; ``isError`` is not sent.
- Tool-call ids containing ``|`` are normalised as Pi does (part before ``|``, ``[^A-Za-z0-9_-]``→``_``, 40 chars).
- Repaired calls: a mapped call Pi accepts only by repairing it (the card's validator gives *warnings*, no error:
  ``legacy_edit_arguments``, ``edits_json_string``, ``coerced_type`` such as ``"10"`` → ``10``,
  ``ignored_property``) is written in the canonical form Pi executes (``convert.canonical``: edits upgraded to
  ``edits[]``, values coerced, ignored properties removed, schema key order), and ``repaired:<code>`` is recorded per
  kind of repair, so the model learns the call the schema describes. Calls with an error are rejected
  (``schema_violation`` / ``unsupported_tool`` / ``arguments_double_encoded``), never repaired.
- A user message that ends the session unanswered is trimmed (``trim_unanswered_tail``); after that the last
  message must be an assistant answer without tool calls (else ``no_final_response``).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from harnessfit.convert.canonical import canonical_arguments
from harnessfit.convert.gates import Draft, first_rejection
from harnessfit.convert.validate import card_wire_tools
from harnessfit.core.conversation import Conversation, ConversationMeta
from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, Trajectory
from harnessfit.formats.base import Drop, Failure, MapContext, PiCall
from harnessfit.formats.registry import get_mapping

__all__ = ["to_conversation", "DEFAULT_CWD", "DEFAULT_DATE", "normalise_call_id"]

DEFAULT_CWD = "/workspace"
DEFAULT_DATE = "2026-01-01"
_ID_BAD = re.compile(r"[^a-zA-Z0-9_-]")


def normalise_call_id(call_id: str) -> str:
    if "|" in call_id:
        return _ID_BAD.sub("_", call_id.split("|", 1)[0])[:40]
    return call_id


def _turns(steps: list[Step]) -> list[tuple[Step, list[Step]]]:
    """Group steps: each non-tool step with the tool steps that follow it."""
    out: list[tuple[Step, list[Step]]] = []
    for step in steps:
        if step.role == "tool" and out:
            out[-1][1].append(step)
        else:
            out.append((step, []))
    return out


def _user_message(step: Step) -> dict[str, Any] | None:
    parts = step.meta.get("parts") if isinstance(step.meta.get("parts"), list) else None
    if parts is None:
        parts = [step.text] if step.text else []
    if not parts:
        return None
    return {"role": "user", "content": [{"type": "text", "text": p} for p in parts]}


def _assistant(draft: Draft, step: Step, results: list[Step], ctx: MapContext) -> list[dict[str, Any]]:
    traj = draft.trajectory
    mapping = get_mapping(traj.source)
    by_id: dict[str, Step] = {}
    for r in results:
        if r.tool_call_id in by_id or r.tool_call_id not in {c.id for c in step.tool_calls}:
            draft.problem(Reason.orphan_tool_result, f"tool result {r.tool_call_id!r} answers no call of its turn",
                          "pair every tool result with the call it answers")
            continue
        by_id[r.tool_call_id or ""] = r
    calls: list[dict[str, Any]] = []
    tool_msgs: list[dict[str, Any]] = []
    for call in step.tool_calls:
        result = by_id.get(call.id)
        outcome = mapping.map_call(call, result, ctx)
        if isinstance(outcome, Drop):
            draft.transformed(f"drop:{outcome.policy}")
            continue
        if isinstance(outcome, Failure):
            draft.problem(outcome.reason, outcome.detail, outcome.repair_hint)
            continue
        pieces = [outcome] if isinstance(outcome, PiCall) else list(outcome)
        for k, pc in enumerate(pieces):
            draft.transformed(*pc.transformations)
            verdict = ctx.card.validate_call(pc.name, pc.arguments)
            errors = [v for v in verdict if v.severity == "error"]
            warnings = [v for v in verdict if v.severity == "warning"]
            arguments = pc.arguments
            if warnings and not errors:
                arguments = canonical_arguments(ctx.card, pc.name, pc.arguments, warnings)
                draft.transformed(*(f"repaired:{w.code}" for w in warnings))
            if errors:
                code = errors[0].code
                reason = Reason.unsupported_tool if code == "unknown_tool" else (
                    Reason.arguments_double_encoded if code == "arguments_double_encoded" else Reason.schema_violation
                )
                draft.problem(reason, f"{pc.name}: {errors[0].code}: {errors[0].detail}",
                              "fix the call so it validates against the harness card's schema")
            cid = normalise_call_id(call.id if k == 0 else f"{call.id}_{k}")
            if cid != call.id and k == 0:
                draft.transformed("call_id_normalised")
            calls.append({"id": cid, "type": "function",
                          "function": {"name": pc.name, "arguments": orjson.dumps(arguments).decode()}})
            if pc.result is None:
                draft.problem(Reason.missing_tool_result, f"call {call.id!r} ({call.name}) has no result",
                              "the session ended or lost the result; re-run or drop the call")
            else:
                tool_msgs.append({"role": "tool", "content": pc.result or "(see attached image)", "tool_call_id": cid})
    msg: dict[str, Any] = {"role": "assistant", "content": step.text if step.text else None}
    if calls:
        msg["tool_calls"] = calls
    if msg["content"] is None and not calls:
        return []
    if step.tool_calls and not calls:
        draft.mergeable.add(id(msg))  # every call was dropped: the next turn continues this message
    return [msg, *tool_msgs]


def _append(draft: Draft, msgs: list[dict[str, Any]]) -> None:
    for m in msgs:
        prev = draft.messages[-1] if draft.messages else None
        if m["role"] == "assistant" and prev is not None and id(prev) in draft.mergeable:
            # an answer whose only calls were dropped, followed by the next turn: Pi would have sent one message
            merged = (prev["content"] or "") + (m["content"] or "")
            prev["content"] = merged or None
            if "tool_calls" in m:
                prev["tool_calls"] = m["tool_calls"]
            draft.transformed("merge_assistant_after_drop")
            if id(m) not in draft.mergeable:
                draft.mergeable.discard(id(prev))
            continue
        if prev is not None:
            draft.mergeable.discard(id(prev))
        draft.messages.append(m)


def to_conversation(traj: Trajectory, card: Any, *, install_dir: str | None = None) -> Conversation | Rejection:
    """Convert one trajectory with ``card``; the first gate (in ``GATE_ORDER``) that fires rejects it.

    ``install_dir`` is the harness folder the system prompt names; ``None`` = ``card.default_install_dir()`` (where
    ``harnessfit harness install`` puts Pi on this machine, so prompts equal what Pi sends here)."""
    draft = Draft(traj, transformations=list(traj.provenance.transformations))
    early = first_rejection(traj, gates=_traj_gates())
    if early is not None:
        return early
    cwd = traj.cwd or DEFAULT_CWD
    date = traj.date or DEFAULT_DATE
    if not traj.cwd:
        draft.transformed("default_cwd")
    if not traj.date:
        draft.transformed("default_date")
    if "user_rejected_tool" in traj.flags:
        draft.problem(Reason.aborted_or_error_turn, "the user rejected a tool call (Pi has no approval step)",
                      "cut the session before the rejected call")
    ctx = MapContext(card=card, trajectory=traj, cwd=cwd)
    draft.messages.append({"role": "system", "content": card.render_system_prompt(cwd, date, install_dir=install_dir)})
    for step, results in _turns(traj.steps):
        if step.role == "system":
            draft.transformed("source_system_prompt_replaced")
            continue
        if step.role == "tool":  # a tool result before any turn
            draft.problem(Reason.orphan_tool_result, f"tool result {step.tool_call_id!r} before any call",
                          "pair every tool result with the call it answers")
            continue
        if step.role == "user":
            if step.images:
                draft.problem(Reason.image_content, f"user message with {step.images} image(s)",
                              "remove the images or convert for a vision-capable model")
            for r in results:
                draft.problem(Reason.orphan_tool_result, f"tool result {r.tool_call_id!r} follows a user message",
                              "pair every tool result with the call it answers")
            m = _user_message(step)
            if m is not None:
                _append(draft, [m])
            continue
        if step.stop_reason in ("aborted", "error"):
            draft.transformed("drop_aborted_or_error_turn")
            continue
        if step.reasoning:
            draft.transformed("reasoning_not_on_wire")
        for r in results:
            if r.images:
                draft.problem(Reason.image_content, f"tool result with {r.images} image(s)",
                              "drop the image result or convert for a vision-capable model")
        _append(draft, _assistant(draft, step, results, ctx))
    while len(draft.messages) > 1 and draft.messages[-1]["role"] == "user":
        draft.messages.pop()
        draft.transformed("trim_unanswered_tail")
    last = draft.messages[-1]
    if last["role"] != "assistant" or "tool_calls" in last or not last.get("content"):
        draft.problem(Reason.no_final_response, f"the conversation ends with a {last['role']} message, not an answer",
                      "keep only sessions whose last turn is the agent's final answer")
    rej = first_rejection(draft)
    if rej is not None:
        return rej
    p = traj.provenance
    meta = ConversationMeta(
        source=traj.source, file=p.file, sha256=p.sha256, line_start=p.line_start, line_end=p.line_end,
        root_request_id=traj.root_request_id, repository=traj.repository, card=card.id, cwd=cwd, date=date,
        transformations=draft.transformations,
    )
    return Conversation(id=content_id("conv", card.id, traj.id), messages=draft.messages, tools=card_wire_tools(card), meta=meta)


def _traj_gates():
    from harnessfit.convert.gates import TRAJECTORY_GATES

    return TRAJECTORY_GATES

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
  (the ``invalid_call`` gate: ``schema_violation`` / ``unsupported_tool`` / ``arguments_double_encoded``), never
  repaired.
- Pi sessions recorded under another Pi than the card's (``harness.recorded``: the version is read from the
  session's system message or layout; ``pi.recorded:<versions>`` is recorded): each call is checked against the
  card diff of every version that could have recorded it, and a call whose tool verdict or result template differs
  is noted (the ``harness_version_mismatch`` gate). Other formats have no Pi version and map to the card as is.
- A user message that ends the session unanswered is trimmed (``trim_unanswered_tail``); after that the last
  message must be an assistant answer without tool calls (else ``no_final_response``).

The builder only builds: what may make the conversation inexact is noted on the ``Draft`` (``convert.draft``), and
the gates (``convert.gates.GATES``) decide, in their order, whether the trajectory is rejected and for what.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from harnessfit.convert import gates
from harnessfit.convert.canonical import canonical_arguments
from harnessfit.convert.draft import (
    CallFailed,
    CallInvalid,
    CallVersionDiffers,
    Draft,
    ImagesSeen,
    OrphanResult,
    UnansweredCall,
)
from harnessfit.convert.gates import first_rejection, split_gates
from harnessfit.convert.validate import card_wire_tools
from harnessfit.core.conversation import Conversation, ConversationMeta
from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Failure, Rejection
from harnessfit.core.trajectory import Step, Trajectory
from harnessfit.formats.base import Drop, MapContext, Mapping, PiCall
from harnessfit.formats.registry import get_mapping
from harnessfit.harness.card import HarnessCard
from harnessfit.harness.recorded import Recorded, call_difference, recorded_pi_versions, versions_to_check

__all__ = ["to_conversation", "build_draft", "DEFAULT_CWD", "DEFAULT_DATE", "normalise_call_id"]

DEFAULT_CWD = "/workspace"
DEFAULT_DATE = "2026-01-01"
_ID_BAD = re.compile(r"[^a-zA-Z0-9_-]")

Turn = tuple[int, Step, list[tuple[int, Step]]]


def normalise_call_id(call_id: str) -> str:
    if "|" in call_id:
        return _ID_BAD.sub("_", call_id.split("|", 1)[0])[:40]
    return call_id


def _turns(steps: list[Step]) -> list[Turn]:
    """Group steps: each non-tool step with the tool steps that follow it (with their indices in ``steps``)."""
    out: list[Turn] = []
    for i, step in enumerate(steps):
        if step.role == "tool" and out:
            out[-1][2].append((i, step))
        else:
            out.append((i, step, []))
    return out


def _user_message(step: Step) -> dict[str, Any] | None:
    parts = step.meta.get("parts") if isinstance(step.meta.get("parts"), list) else None
    if parts is None:
        parts = [step.text] if step.text else []
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


def _version_check(draft: Draft, step: int, name: str, arguments: Any, result: str | None, card: HarnessCard,
                   recorded: Recorded | None, check: tuple[str, ...]) -> None:
    """Note the first version under which the recorded call differs from ``card`` (``harness.recorded``)."""
    for version in check:
        found = call_difference(version, card, name, arguments, result)
        if found is not None and recorded is not None:
            draft.version_mismatches.append(CallVersionDiffers(step, name, recorded.label(), *found))
            return


def _assistant(draft: Draft, turn: Turn, mapping: Mapping, ctx: MapContext,
               recorded: Recorded | None = None, check: tuple[str, ...] = ()) -> tuple[list[dict[str, Any]], bool]:
    """The turn's wire messages (the assistant message, then its tool messages), and whether the assistant message
    is left open (it had calls, all dropped: the next turn continues it). ``check``: the versions a Pi session's
    calls are checked against (``harness.recorded.versions_to_check``)."""
    i, step, results = turn
    by_id = _pair_results(draft, i, step, results)
    card = ctx.card
    calls: list[dict[str, Any]] = []
    tool_msgs: list[dict[str, Any]] = []
    for call in step.tool_calls:
        outcome = mapping.map_call(call, by_id.get(call.id), ctx)
        if isinstance(outcome, Drop):
            draft.transformed(f"drop:{outcome.policy}")
            continue
        if isinstance(outcome, Failure):
            draft.failed_calls.append(CallFailed(i, call, outcome))
            continue
        pieces = [outcome] if isinstance(outcome, PiCall) else list(outcome)
        if check:  # what Pi received is the recorded call, before any upgrade the mapping made
            _version_check(draft, i, call.name, call.arguments, pieces[0].result if pieces else None, card,
                           recorded, check)
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
            cid = normalise_call_id(call.id if k == 0 else f"{call.id}_{k}")
            if cid != call.id and k == 0:
                draft.transformed("call_id_normalised")
            calls.append({"id": cid, "type": "function",
                          "function": {"name": pc.name, "arguments": orjson.dumps(arguments).decode()}})
            if pc.result is None:
                draft.unanswered_calls.append(UnansweredCall(i, call))
            else:
                tool_msgs.append({"role": "tool", "content": pc.result or "(see attached image)", "tool_call_id": cid})
    msg: dict[str, Any] = {"role": "assistant", "content": step.text if step.text else None}
    if calls:
        msg["tool_calls"] = calls
    if msg["content"] is None and not calls:
        return [], False
    return [msg, *tool_msgs], bool(step.tool_calls) and not calls


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


def build_draft(traj: Trajectory, card: HarnessCard, *, install_dir: str | None = None) -> Draft:
    """The wire messages of ``traj`` and the notes the gates read (no gate runs here; ``to_conversation`` runs them).
    cwd and date come from the trajectory, else ``DEFAULT_CWD`` / ``DEFAULT_DATE`` (recorded as transformations)."""
    draft = Draft(traj, transformations=list(traj.provenance.transformations))
    cwd = traj.cwd or DEFAULT_CWD
    date = traj.date or DEFAULT_DATE
    if not traj.cwd:
        draft.transformed("default_cwd")
    if not traj.date:
        draft.transformed("default_date")
    mapping = get_mapping(traj.source)
    ctx = MapContext(card=card, trajectory=traj, cwd=cwd)
    recorded, check = None, ()
    if traj.source == "pi":
        recorded = recorded_pi_versions(traj)
        check = versions_to_check(recorded, card)
        draft.transformed(f"pi.recorded:{'|'.join(recorded.versions) or 'unknown'}")
    draft.messages.append({"role": "system", "content": card.render_system_prompt(cwd, date, install_dir=install_dir)})
    for turn in _turns(traj.steps):
        i, step, results = turn
        if step.role == "system":
            draft.transformed("source_system_prompt_replaced")
            continue
        if step.role == "tool":  # a tool result before any turn
            draft.orphan_results.append(OrphanResult(i, step.tool_call_id, "start"))
            continue
        if step.role == "user":
            if step.images:
                draft.images.append(ImagesSeen(i, "user", step.images))
            for j, r in results:
                draft.orphan_results.append(OrphanResult(j, r.tool_call_id, "user"))
            m = _user_message(step)
            if m is not None:
                _append(draft, [m])
            continue
        if step.stop_reason in ("aborted", "error"):
            draft.transformed("drop_aborted_or_error_turn")
            continue
        if step.reasoning:
            draft.transformed("reasoning_not_on_wire")
        for j, r in results:
            if r.images:
                draft.images.append(ImagesSeen(j, "tool", r.images))
        _append(draft, *_assistant(draft, turn, mapping, ctx, recorded, check))
    while len(draft.messages) > 1 and draft.messages[-1]["role"] == "user":
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
        transformations=draft.transformations,
    )
    return Conversation(id=content_id("conv", card.id, traj.id), messages=draft.messages, tools=card_wire_tools(card),
                        meta=meta)

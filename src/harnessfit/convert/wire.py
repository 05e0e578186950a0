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
- A user message that ends the session unanswered is trimmed (``trim_unanswered_tail``); after that the last
  message must be an assistant answer without tool calls (else ``no_final_response``).
- UI-only calls Pi would never see are dropped with their results where ``convert.policy`` allows it (recorded as
  ``drop:ui_only:<tool>``); nothing is merged: an answer is never glued to another turn.

The builder only builds: what may make the conversation inexact is noted on the ``Draft`` (``convert.draft``), and
the gates (``convert.gates.GATES``) decide, in their order, whether the trajectory is rejected and for what, and where
its exact prefix ends. ``convert_trajectory`` returns all three: the record (a ``Conversation``, or the ``Rejection``
that is the trajectory's ledger row), the exact prefix of a rejected trajectory when it holds at least one label (a
``Conversation`` with ``meta.prefix``; its SFT records and decision points are exported, the conversation is not),
and what became of every source call (``convert.yields.CallFates``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from harnessfit.convert import gates
from harnessfit.convert.canonical import canonical_arguments
from harnessfit.convert.draft import (
    CallDropped,
    CallFailed,
    CallInvalid,
    Draft,
    ImagesSeen,
    OrphanResult,
    RejectedByUser,
    ResultFailed,
    UnansweredCall,
)
from harnessfit.convert.gates import Finding, all_findings, rejection_of, split_gates
from harnessfit.convert.policy import ConvertPolicy, LaterText, ui_drop_problem
from harnessfit.convert.validate import card_wire_tools
from harnessfit.convert.yields import CallFates, call_fates
from harnessfit.core.conversation import Conversation, ConversationMeta, PrefixInfo
from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Failure, Reason, Rejection
from harnessfit.core.trajectory import Step, Trajectory
from harnessfit.formats.base import Drop, MapContext, Mapping, PiCall
from harnessfit.formats.registry import get_mapping
from harnessfit.harness.card import HarnessCard

__all__ = ["to_conversation", "convert_trajectory", "Outcome", "build_draft", "DEFAULT_CWD", "DEFAULT_DATE",
           "DEFAULT_POLICY", "normalise_call_id"]

DEFAULT_CWD = "/workspace"
DEFAULT_DATE = "2026-01-01"
DEFAULT_POLICY = ConvertPolicy()
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


def _pair_results(draft: Draft, step: Step, results: list[tuple[int, Step]]) -> dict[str, tuple[int, Step]]:
    """The turn's results by call id, with their step indices; a result that answers none of the turn's calls (or
    one answered already) is noted as an orphan."""
    ids = {c.id for c in step.tool_calls}
    by_id: dict[str, tuple[int, Step]] = {}
    for j, r in results:
        if r.tool_call_id in by_id or r.tool_call_id not in ids:
            draft.orphan_results.append(OrphanResult(j, r.tool_call_id, "turn"))
            continue
        by_id[r.tool_call_id or ""] = (j, r)
    return by_id


class _Context:
    """What the builder needs for every turn of one trajectory."""

    def __init__(self, draft: Draft, mapping: Mapping, ctx: MapContext, policy: ConvertPolicy) -> None:
        self.draft = draft
        self.mapping = mapping
        self.ctx = ctx
        self.policy = policy
        self.ui_tools = policy.ui_tools_for(draft.trajectory.source)
        self._later: LaterText | None = None
        self._last_action: int | None = None

    @property
    def later(self) -> LaterText:
        if self._later is None:
            self._later = LaterText(self.draft.trajectory)
        return self._later

    @property
    def last_action(self) -> int:
        """The step of the run's last assistant action (a turn with text or calls that Pi keeps)."""
        if self._last_action is None:
            self._last_action = max((i for i, s in enumerate(self.draft.trajectory.steps)
                                     if s.role == "assistant" and (s.text or s.tool_calls)
                                     and s.stop_reason not in ("aborted", "error")), default=-1)
        return self._last_action


_NO_RESULT: tuple[None, None] = (None, None)


def _drop_problem(b: _Context, i: int, k: int, step: Step, outcome: Drop, ui_calls: int,
                  result: Step | None) -> str | None:
    """Why a dropped call may not go (``None``: it may; ``convert.policy``)."""
    if outcome.ends_episode:
        if i >= b.last_action and k == len(step.tool_calls) - 1:
            return None
        return "it is not the run's last action, so its result was seen"
    if not b.policy.drop_ui_tools:
        return "dropping UI-only calls is turned off (convert.drop_ui_tools)"
    return ui_drop_problem(i, step, ui_calls, result, b.later)


def _assistant(b: _Context, turn: Turn) -> tuple[dict[str, Any] | None, list[tuple[int, dict[str, Any]]]]:
    """The turn's assistant message (``None`` when nothing of it is left) and its tool messages with their result
    steps. A UI-only tool (``policy.ui_tools``) is a ``Drop`` before its mapping is asked; a refused call's result is
    the user's refusal, not a tool's, so the mapping judges that call alone."""
    draft, card, mapping, ctx, ui_tools = b.draft, b.ctx.card, b.mapping, b.ctx, b.ui_tools
    i, step, results = turn
    by_id = _pair_results(draft, step, results)
    pairs = [by_id.get(call.id, _NO_RESULT) for call in step.tool_calls]
    refused = [r is not None and r.meta.get("user_rejected") is True for _, r in pairs]
    outcomes = [Drop(f"ui_only:{call.name}") if call.name in ui_tools else
                mapping.map_call(call, None if no else r, ctx)
                for call, (_, r), no in zip(step.tool_calls, pairs, refused)]
    ui_calls = sum(1 for o in outcomes if type(o) is Drop and not o.ends_episode)
    calls: list[dict[str, Any]] = []
    tool_msgs: list[tuple[int, dict[str, Any]]] = []
    for k, call in enumerate(step.tool_calls):
        outcome = outcomes[k]
        j, result = pairs[k]
        if refused[k]:
            draft.user_rejections.append(RejectedByUser(i, j, call))  # type: ignore[arg-type]
        if type(outcome) is Drop:
            why = _drop_problem(b, i, k, step, outcome, ui_calls, result)
            if why is None:
                draft.dropped_calls.append(CallDropped(i, k, call, outcome.policy))
                draft.transformed(f"drop:{outcome.policy}")
                continue
            outcome = Failure(Reason.ui_only_call, f"{call.name} is a UI-only call Pi would never see, but {why}",
                              "keep the session up to this turn; or, where the call is its turn's only content and "
                              "its result is a plain acknowledgement, it is dropped")
        if type(outcome) is Failure:
            draft.failed_calls.append(CallFailed(i, call, outcome))
            continue
        pieces = [outcome] if type(outcome) is PiCall else list(outcome)
        for n, pc in enumerate(pieces):
            if pc.transformations:
                draft.transformed(*pc.transformations)
            verdict = card.validate_call(pc.name, pc.arguments)
            arguments = pc.arguments
            if verdict:
                errors = [v for v in verdict if v.severity == "error"]
                warnings = [v for v in verdict if v.severity == "warning"]
                if warnings and not errors:
                    arguments = canonical_arguments(card, pc.name, pc.arguments, warnings)
                    draft.transformed(*(f"repaired:{w.code}" for w in warnings))
                if errors:
                    draft.invalid_calls.append(CallInvalid(i, pc.name, errors[0], call))
            cid = normalise_call_id(call.id if n == 0 else f"{call.id}_{n}")
            if cid != call.id and n == 0:
                draft.transformed("call_id_normalised")
            calls.append({"id": cid, "type": "function",
                          "function": {"name": pc.name, "arguments": orjson.dumps(arguments).decode()}})
            if refused[k]:
                continue
            res = pc.result
            if res is None:
                draft.unanswered_calls.append(UnansweredCall(i, call))
            elif type(res) is Failure:
                if n == 0:
                    draft.failed_results.append(ResultFailed(i, j, call, res))
            else:
                tool_msgs.append((i + 1 if j is None else j,
                                  {"role": "tool", "content": res or "(see attached image)", "tool_call_id": cid}))
    msg: dict[str, Any] = {"role": "assistant", "content": step.text if step.text else None}
    if calls:
        msg["tool_calls"] = calls
    if msg["content"] is None and not calls:
        return None, tool_msgs
    return msg, tool_msgs


def build_draft(traj: Trajectory, card: HarnessCard, *, install_dir: str | None = None,
                policy: ConvertPolicy = DEFAULT_POLICY) -> Draft:
    """The wire messages of ``traj`` and the notes the gates read (no gate runs here; ``convert_trajectory`` runs
    them). cwd and date come from the trajectory, else ``DEFAULT_CWD`` / ``DEFAULT_DATE`` (recorded as
    transformations)."""
    draft = Draft(traj, transformations=list(traj.provenance.transformations))
    cwd = traj.cwd or DEFAULT_CWD
    date = traj.date or DEFAULT_DATE
    if not traj.cwd:
        draft.transformed("default_cwd")
    if not traj.date:
        draft.transformed("default_date")
    b = _Context(draft, get_mapping(traj.source), MapContext(card=card, trajectory=traj, cwd=cwd), policy)
    messages, steps_of = draft.messages, draft.message_steps
    draft.add(-1, {"role": "system", "content": card.render_system_prompt(cwd, date, install_dir=install_dir)})
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
                draft.add(i, m)
            continue
        if step.stop_reason in ("aborted", "error"):
            draft.transformed("drop_aborted_or_error_turn")
            continue
        if step.reasoning:
            draft.transformed("reasoning_not_on_wire")
        for j, r in results:
            if r.images:
                draft.images.append(ImagesSeen(j, "tool", r.images))
        msg, tool_msgs = _assistant(b, turn)
        if msg is not None:  # Draft.add, inlined: this loop runs once per assistant turn
            messages.append(msg)
            steps_of.append(i)
            for j, m in tool_msgs:
                messages.append(m)
                steps_of.append(j)
    while len(draft.messages) > 1 and draft.messages[-1]["role"] == "user":
        draft.messages.pop()
        draft.message_steps.pop()
        draft.transformed("trim_unanswered_tail")
    return draft


@dataclass
class Outcome:
    """What converting one trajectory gives: ``record`` (its ``Conversation``, or the ``Rejection`` that is its ledger
    row), ``prefix`` (the exact prefix of a rejected trajectory with at least one label, as a ``Conversation`` with
    ``meta.prefix``; else ``None``) and ``calls`` (what became of each source call)."""

    record: Conversation | Rejection
    prefix: Conversation | None
    calls: CallFates


def _meta(traj: Trajectory, card: HarnessCard, transformations: list[str],
          prefix: PrefixInfo | None = None) -> ConversationMeta:
    p = traj.provenance
    return ConversationMeta(
        source=traj.source, file=p.file, sha256=p.sha256, line_start=p.line_start, line_end=p.line_end,
        root_request_id=traj.root_request_id, repository=traj.repository, card=card.id,
        cwd=traj.cwd or DEFAULT_CWD, date=traj.date or DEFAULT_DATE, transformations=transformations, prefix=prefix,
    )


def _prefix(draft: Draft, cut: int | None) -> tuple[list[dict[str, Any]], int]:
    """The wire messages from steps before ``cut`` (``None``: all), without a trailing user message, and how many
    assistant messages (labels) they hold."""
    msgs = draft.messages if cut is None else [m for m, s in zip(draft.messages, draft.message_steps) if s < cut]
    end = len(msgs)
    while end > 1 and msgs[end - 1]["role"] == "user":
        end -= 1
    msgs = msgs[:end]
    return msgs, sum(1 for m in msgs if m["role"] == "assistant")


def convert_trajectory(traj: Trajectory, card: HarnessCard, *, install_dir: str | None = None,
                       policy: ConvertPolicy = DEFAULT_POLICY) -> Outcome:
    """Convert one trajectory with ``card``: every gate runs; the first (in ``GATES`` order) that finds something
    names the ledger row, and the first problem by position (the smallest ``Finding.cut``) ends the exact prefix.

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
    findings: list[Finding] = [f for _, found in found_all for f in found]
    cuts = [f.cut for f in findings if f.cut is not None]
    cut = min(cuts) if cuts else None
    fates = call_fates(traj, findings, cut, draft.dropped_calls if draft is not None else [])
    if not found_all:
        assert draft is not None
        conv = Conversation(id=content_id("conv", card.id, traj.id), messages=draft.messages,
                            tools=card_wire_tools(card), meta=_meta(traj, card, draft.transformations))
        return Outcome(conv, None, fates)
    gate, own = found_all[0]
    rejection = rejection_of(draft or Draft(traj), gate, own, findings, calls=fates.read, labels=fates.labels)
    prefix = None
    if draft is not None and cut != 0:
        msgs, labels = _prefix(draft, cut)
        if labels:
            first = min((f for f in findings if f.cut is not None), key=lambda f: f.cut, default=findings[0])
            info = PrefixInfo(of=rejection.record_id, reason=first.reason.value, step=first.step,
                              detail=first.detail, labels=labels)
            prefix = Conversation(id=content_id("prefix", card.id, traj.id), messages=msgs,
                                  tools=card_wire_tools(card), meta=_meta(traj, card, draft.transformations, info))
    return Outcome(rejection, prefix, fates)


def to_conversation(traj: Trajectory, card: HarnessCard, *, install_dir: str | None = None,
                    policy: ConvertPolicy = DEFAULT_POLICY) -> Conversation | Rejection:
    """Convert one trajectory with ``card``: its ``Conversation``, or the ``Rejection`` the first gate (in ``GATES``
    order) with a finding makes (``convert_trajectory`` also gives the exact prefix and the call fates)."""
    return convert_trajectory(traj, card, install_dir=install_dir, policy=policy).record

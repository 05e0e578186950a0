"""The builder: one trajectory's wire messages in Pi's form, and notes of everything that may make them inexact.

``build_draft`` applies the serialisation rules ``convert.wire`` documents (Pi's version-dependent history rules come
from ``convert.history``), asks the format's mapping for each call, validates the mapped call against the card, and
checks a Pi session's calls against the versions that could have recorded it (``harness.recorded``). It decides
nothing: each problem becomes a note on the ``Draft`` (``convert.draft``) with the index of its trajectory step, and
the gates (``convert.gates``) decide.
"""

from __future__ import annotations

from typing import Any

import orjson

from harnessfit.convert.canonical import canonical_arguments
from harnessfit.convert.draft import (
    CallDropped,
    CallFailed,
    CallInvalid,
    CallRefusedInContext,
    CallVersionDiffers,
    Draft,
    ImagesSeen,
    OrphanResult,
    RejectedByUser,
    ResultAltered,
    ResultFailed,
    UnansweredCall,
)
from harnessfit.convert.history import PiHistory, assistant_blocks, history_rules
from harnessfit.convert.policy import ConvertPolicy, LaterText, ui_drop_problem
from harnessfit.core.rejection import Failure, Reason
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import Altered, Drop, MapContext, Mapping, PiCall
from harnessfit.formats.registry import get_mapping
from harnessfit.harness.card import HarnessCard
from harnessfit.harness.recorded import Recorded, call_difference, recorded_pi_versions, versions_to_check

__all__ = ["DEFAULT_CWD", "DEFAULT_DATE", "DEFAULT_POLICY", "build_draft"]

DEFAULT_CWD = "/workspace"
DEFAULT_DATE = "2026-01-01"
DEFAULT_POLICY = ConvertPolicy()

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

    def __init__(
        self,
        draft: Draft,
        mapping: Mapping,
        ctx: MapContext,
        policy: ConvertPolicy,
        rules: PiHistory,
        recorded: Recorded | None = None,
        check: tuple[str, ...] = (),
    ) -> None:
        self.draft = draft
        self.recorded = recorded  # a Pi session's recording Pi (``harness.recorded``) and the versions its calls
        self.check = check  # are checked against (``versions_to_check``); None/() for other formats
        self.rules = rules
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
            self._last_action = max(
                (
                    i
                    for i, s in enumerate(self.draft.trajectory.steps)
                    if s.role == "assistant" and (s.text or s.tool_calls) and s.stop_reason not in ("aborted", "error")
                ),
                default=-1,
            )
        return self._last_action


_NO_RESULT: tuple[None, None] = (None, None)


def _drop_problem(
    b: _Context, i: int, k: int, step: Step, outcome: Drop, ui_calls: int, result: Step | None
) -> str | None:
    """Why a dropped call may not go (``None``: it may; ``convert.policy``)."""
    if outcome.ends_episode:
        if i >= b.last_action and k == len(step.tool_calls) - 1:
            return None
        return "it is not the run's last action, so its result was seen"
    if not b.policy.drop_ui_tools:
        return "dropping UI-only calls is turned off (convert.drop_ui_tools)"
    return ui_drop_problem(i, step, ui_calls, result, b.later)


def _version_check(
    draft: Draft,
    step: int,
    name: str,
    arguments: Any,
    result: str | None,
    card: HarnessCard,
    recorded: Recorded | None,
    check: tuple[str, ...],
) -> None:
    """Note the first version under which the recorded call differs from ``card`` (``harness.recorded``)."""
    memo: dict = {}  # the call's verdict under cards that validate it alike, computed once
    for version in check:
        found = call_difference(version, card, name, arguments, result, memo)
        if found is not None and recorded is not None:
            draft.version_mismatches.append(CallVersionDiffers(step, name, recorded.label(), *found))
            return


def _wire_calls(
    b: _Context,
    i: int,
    call: ToolCall,
    pieces: list[PiCall],
    refused: bool,
    pair: tuple[int | None, Step | None],
    calls: list[dict[str, Any]],
    tool_msgs: list[tuple[int, dict[str, Any]]],
    synthetic: list[tuple[int, dict[str, Any]]],
) -> None:
    """The wire calls of the Pi calls (``pieces``) one source call at step ``i`` became, each validated against the
    card (a call Pi repairs is written as Pi runs it), with their tool messages: the result at step ``pair[0]``,
    Pi's synthetic result for a call without one, none for a call the user refused."""
    draft, card, rules = b.draft, b.ctx.card, b.rules
    j, result = pair
    for n, pc in enumerate(pieces):
        if pc.transformations:
            draft.transformed(*pc.transformations)
        # a call Pi refused, kept as context with its refusal (``PiCall.refused``), is no label: it is noted as such
        # and never validated (Pi replays it as stored; the card would refuse the stored ``{}``)
        verdict = () if pc.refused else card.validate_call(pc.name, pc.arguments)
        if pc.refused:
            draft.refused_in_context.append(CallRefusedInContext(i, pc.name, call))
        arguments = pc.arguments
        if verdict:
            errors = [v for v in verdict if v.severity == "error"]
            warnings = [v for v in verdict if v.severity == "warning"]
            if warnings and not errors:
                arguments = canonical_arguments(card, pc.name, pc.arguments, warnings)
                draft.transformed(*(f"repaired:{w.code}" for w in warnings))
            if errors:
                draft.invalid_calls.append(CallInvalid(i, pc.name, errors[0], call))
        cid = rules.call_id(call.id if n == 0 else f"{call.id}_{n}")
        if cid != call.id and n == 0:
            draft.transformed("call_id_normalised")
        calls.append(
            {
                "id": cid,
                "type": "function",
                "function": {"name": pc.name, "arguments": orjson.dumps(arguments).decode()},
            }
        )
        if refused:
            continue
        res = pc.result
        if res is None:
            # Pi answers a call that has no result with its synthetic one, after the results that exist
            # (pi-ai transformMessages, insertSyntheticToolResults); it has no result step of its own
            draft.unanswered_calls.append(UnansweredCall(i, call))
            draft.transformed("pi.synthetic_no_result")
            synthetic.append((i + 1, {"role": "tool", "content": rules.no_result, "tool_call_id": cid}))
        elif type(res) is Altered and b.policy.fidelity == "content" and type(res.text) is str:
            msg = {
                "role": "tool",
                "content": rules.tool_content(res.text, result.images if result else 0),
                "tool_call_id": cid,
            }
            tool_msgs.append((i + 1 if j is None else j, msg))
            draft.altered_results.append(ResultAltered(i, j, res.alterations, msg))
            draft.transformed(*(f"altered:{a}" for a in res.alterations))
        elif type(res) is Failure or type(res) is Altered:  # an Altered: its tier's failure
            if n == 0:
                failure = res if type(res) is Failure else res.failure if b.policy.fidelity == "byte" else res.text
                draft.failed_results.append(ResultFailed(i, j, call, failure))  # type: ignore[arg-type]
        else:
            images = result.images if result is not None else 0
            tool_msgs.append(
                (
                    i + 1 if j is None else j,
                    {"role": "tool", "content": rules.tool_content(res, images), "tool_call_id": cid},
                )
            )


def _assistant(b: _Context, turn: Turn) -> tuple[dict[str, Any] | None, list[tuple[int, dict[str, Any]]]]:
    """The turn's assistant message (``None`` when nothing of it is left) and its tool messages with their result
    steps. A UI-only tool (``policy.ui_tools``) is a ``Drop`` before its mapping is asked; a refused call's result is
    the user's refusal, not a tool's, so the mapping judges that call alone."""
    draft, card, mapping, ctx, ui_tools, rules = b.draft, b.ctx.card, b.mapping, b.ctx, b.ui_tools, b.rules
    i, step, results = turn
    by_id = _pair_results(draft, step, results)
    pairs = [by_id.get(call.id, _NO_RESULT) for call in step.tool_calls]
    refused = [r is not None and r.meta.get("user_rejected") is True for _, r in pairs]
    outcomes = [
        Drop(f"ui_only:{call.name}") if call.name in ui_tools else mapping.map_call(call, None if no else r, ctx)
        for call, (_, r), no in zip(step.tool_calls, pairs, refused, strict=True)
    ]
    ui_calls = sum(1 for o in outcomes if type(o) is Drop and not o.ends_episode)
    calls: list[dict[str, Any]] = []
    tool_msgs: list[tuple[int, dict[str, Any]]] = []
    synthetic: list[tuple[int, dict[str, Any]]] = []
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
            outcome = Failure(
                Reason.ui_only_call,
                f"{call.name} is a UI-only call Pi would never see, but {why}",
                "keep the session up to this turn; or, where the call is its turn's only content and "
                "its result is a plain acknowledgement, it is dropped",
            )
        if type(outcome) is Failure:
            draft.failed_calls.append(CallFailed(i, call, outcome))
            continue
        pieces = [outcome] if type(outcome) is PiCall else list(outcome)
        if b.check:  # what Pi received is the recorded call, before any upgrade the mapping made
            # a result the mapping re-rendered in the target's words (harness.pi_texts) is the target's already
            first = pieces[0].result if pieces else None
            kept = isinstance(first, str) and result is not None and first == (result.text or "")
            _version_check(draft, i, call.name, call.arguments, first if kept else None, card, b.recorded, b.check)
        _wire_calls(b, i, call, pieces, refused[k], pairs[k], calls, tool_msgs, synthetic)
    blocks = assistant_blocks(step)
    if any(kind == "thinking" and text.strip() for kind, text in blocks):
        draft.transformed("pi.thinking_as_text" if rules.foreign_thinking == "text" else "pi.thinking_dropped")
    msg: dict[str, Any] = {"role": "assistant", "content": rules.assistant_content(blocks)}
    if calls:
        msg["tool_calls"] = calls
    tool_msgs += synthetic
    if msg["content"] is None and not calls:
        return None, tool_msgs
    return msg, tool_msgs


def _orphans(draft: Draft, results: list[tuple[int, Step]], after: str, rules: PiHistory) -> None:
    """Results that answer no call: noted for the gate, and on the wire where Pi puts them (it sends every stored
    result; transformMessages pairs nothing with them)."""
    for j, r in results:
        draft.orphan_results.append(OrphanResult(j, r.tool_call_id, after))  # type: ignore[arg-type]
        draft.add(
            j,
            {
                "role": "tool",
                "content": rules.tool_content(r.text or "", r.images),
                "tool_call_id": rules.call_id(r.tool_call_id or ""),
            },
        )


def build_draft(
    traj: Trajectory,
    card: HarnessCard,
    *,
    install_dir: str | None = None,
    policy: ConvertPolicy = DEFAULT_POLICY,
    trim: bool = True,
) -> Draft:
    """The wire messages of ``traj`` and the notes the gates read (no gate runs here; ``convert_trajectory`` runs
    them). cwd and date come from the trajectory, else ``DEFAULT_CWD`` / ``DEFAULT_DATE`` (recorded as
    transformations).

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
    recorded, check = None, ()
    if traj.source == "pi":
        recorded = recorded_pi_versions(traj)
        check = versions_to_check(recorded, card)
        draft.recorded = "|".join(recorded.versions) or "unknown"
        draft.recorded_texts = recorded.texts_label()
        draft.transformed(f"pi.recorded:{draft.recorded}")
    b = _Context(
        draft, get_mapping(traj.source), MapContext(card=card, trajectory=traj, cwd=cwd), policy, rules, recorded, check
    )
    messages, steps_of = draft.messages, draft.message_steps
    draft.add(-1, {"role": "system", "content": card.render_system_prompt(cwd, date, install_dir=install_dir)})
    history_only = False
    for turn in _turns(traj.steps):
        if history_only:  # the previous step's messages are history only
            draft.labels_from = len(messages)
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
                draft.add(i, m)
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
        msg, tool_msgs = _assistant(b, turn)
        if msg is not None:  # Draft.add, inlined: this loop runs once per assistant turn
            messages.append(msg)
            steps_of.append(i)
            for j, m in tool_msgs:
                messages.append(m)
                steps_of.append(j)
    if history_only:
        draft.labels_from = len(messages)
    while trim and len(draft.messages) > 1 and draft.messages[-1]["role"] == "user":
        draft.messages.pop()
        draft.message_steps.pop()
        draft.transformed("trim_unanswered_tail")
    return draft

"""Which Pi recorded a session, and whether a call it holds means the same under the card a build targets.

**What a Pi session says about its version.** Nothing directly: the header's ``version`` is the session-file layout
(3 for every committed card) and no entry names the Pi release. What the committed cards' captures show
(``card.session``) is that the layouts fall in two families: Pi 1.x keeps the system prompt in the session, as a
``system`` message with the prompt text and ``toolsAdded`` (each tool's name, description and parameters); 0.73.1,
0.79.10 and 0.82.0 write no such message and the same entry, message and block keys. So (``recorded_pi_versions``):

1. a session with a ``system`` message was recorded by a card whose layout has the ``system`` role; of those, the
   cards whose prompt template matches the message text (variables as any text) and whose tool parameters equal the
   declared ones, when any does (``how == "system message"``), else all of them (``"session layout"``: a 1.x
   release without a committed card, or a prompt changed by context files or settings);
2. a session without one was recorded by a card whose layout has no ``system`` role (``"session layout"``): the
   file cannot tell 0.73.1, 0.79.10 and 0.82.0 apart;
3. no committed card of that family: the version is unknown (``"unknown"``) and the session is treated as the target.

Apart from the committed cards, the session's own Pi-authored texts date it (``Recorded.texts``,
``harness.pi.texts.text_releases``): the releases read for the text catalogue that write every one of them. A 0.x
session with no system message fits the layout of 0.73.1–0.82.0, yet its ``Successfully replaced text in {path}.
Changed …`` edit results were last written by 0.30.2; the summary says so, so a user sees that no committed card
recorded it.

Then the calls narrow it (``" and refusals"``): a card that could have recorded the session refuses exactly the
calls whose recorded result is one of its refusal texts (``card.refused``) and runs the others — for example a 0.x
session whose ``edit`` with an extra property was answered "Validation failed" was not recorded by 0.82.0, whose
``edit`` schema ignores extra properties. When no candidate agrees with every call (a tool outside the defaults, a
validator gap), the layout's candidates stand. Then the results narrow it (``" and results"``): a recorded result
text that some candidate's templates make (``card.result_key``) was not written by a candidate whose templates
cannot make it — for example a ``write`` answered in one release's wording when another words it differently.

**Which calls may be converted to the target** (``versions_to_check``, ``call_difference``). A session that any of
its candidate cards could have recorded is treated as recorded by the target when the target is one of them
(nothing in the file says otherwise). Otherwise each call is checked against every candidate ``x``: it is kept
only where ``harness diff x target`` says the parts it uses are identical —

- ``tools``: the tool is in both cards and both validators give the same verdict on the recorded arguments (a
  schema that differs only in wording gives the same verdict; one that now refuses or now accepts the call does
  not, and then Pi ``x``'s answer recorded in the session is not what the target would answer);
- ``results``/``errors``: the template the recorded result was made from (``card.result_key`` under ``x``) is the
  same in the target (``CardDiff.result_identical``).

The first difference is returned as ``(section, detail)``; the converter notes it on the draft and the
``harness_version_mismatch`` gate rejects the trajectory for it. Traces of other agents have no Pi version: they are
mapped to the target card as before.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harnessfit.core.trajectory import Trajectory
from harnessfit.harness.card import REFUSAL_KEYS, HarnessCard, load_card
from harnessfit.harness.diff import CardDiff, card_diff
from harnessfit.harness.pi.texts import releases_label, text_releases
from harnessfit.harness.versions import PI_CARD_VERSIONS

__all__ = ["Recorded", "recorded_pi_versions", "versions_to_check", "call_difference", "committed_card"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """The committed Pi versions a session is consistent with (oldest first) and what decided it: ``"system
    message"`` (prompt and tools matched), ``"session layout"`` or ``"unknown"`` (``versions`` is empty)."""

    versions: tuple[str, ...]
    how: str
    texts: tuple[str, ...] | None = field(default=None, compare=False)
    """The releases read for the text catalogue whose words every Pi-authored text of the session is in
    (``text_releases``: ``()`` several releases', ``None`` the texts tell nothing)."""

    def label(self) -> str:
        """``pi@0.73.1|0.79.10|0.82.0 (session layout)``: how a ledger row or a transformation names it."""
        return f"pi@{'|'.join(self.versions) or '?'} ({self.how})"

    def texts_label(self) -> str | None:
        """``0.13.2–0.30.2``: the releases the session's texts fit, for a summary line (``releases_label``)."""
        return releases_label(self.texts)


@functools.cache
def committed_card(version: str) -> HarnessCard:
    """The committed card of Pi ``version``, loaded once per process."""
    return load_card("pi", version)


@functools.cache
def _diff(a: str, b: str) -> CardDiff:
    return card_diff(committed_card(a), committed_card(b))


@functools.cache
def _prompt_pattern(version: str) -> re.Pattern[str]:
    parts = committed_card(version).system_prompt.parts
    return re.compile("".join(re.escape(p["text"]) if "text" in p else "(?s:.*?)" for p in parts) + r"\Z", re.DOTALL)


def _keeps_system_message(version: str) -> bool:
    return "system" in committed_card(version).session.get("message_roles", {})


def _matches(version: str, text: str, tools: dict[str, Any]) -> bool:
    card = committed_card(version)
    if not _prompt_pattern(version).match(text):
        return False
    return all(card.schema(name) == params for name, params in tools.items() if card.schema(name) is not None)


def _answered_calls(traj: Trajectory) -> list[tuple[str, Any, str]]:
    """(tool, recorded arguments, result text) of every call the session holds a result for."""
    results = {}
    for step in traj.steps:
        if step.role == "tool" and step.tool_call_id is not None:
            results.setdefault(step.tool_call_id, step.text or "")
    return [
        (c.name, c.arguments, results[c.id])
        for step in traj.steps
        if step.role == "assistant"
        for c in step.tool_calls
        if c.id in results
    ]


def _agrees(version: str, calls: list[tuple[str, Any, str]], memo: list[dict] | None = None) -> bool:
    """Whether Pi ``version`` refuses exactly the calls the session shows refused (``memo``: one ``_verdict`` memo
    per call, shared by the candidate versions)."""
    card = committed_card(version)
    for i, (name, arguments, result) in enumerate(calls):
        verdict = _verdict(card, name, arguments, memo[i] if memo is not None else None)
        refuses = any(sev == "error" for _, sev in verdict)
        if refuses != (card.refused(result) is not None):
            return False
    return True


def _templated(version: str, calls: list[tuple[str, Any, str]], memo: list[dict] | None = None) -> tuple[bool, ...]:
    """For each call, whether a template of Pi ``version`` makes its recorded result (``memo`` as in ``_agrees``)."""
    card = committed_card(version)
    return tuple(
        _result_key(card, name, result, memo[i] if memo is not None else None) is not None
        for i, (name, _, result) in enumerate(calls)
    )


def recorded_pi_versions(
    traj: Trajectory, versions: Sequence[str] = PI_CARD_VERSIONS, *, shared: bool = True
) -> Recorded:
    """The committed cards (of ``versions``) that could have recorded the Pi session ``traj`` (module docstring).

    ``shared=False`` is the plain definition: every candidate checks every call on its own. By default the answers
    that cannot differ are computed once — a call's verdict and result key for the cards that read them alike
    (``_verdict``, ``_result_key``), and a whole candidate's ``_agrees``/``_templated`` for the cards whose
    ``_agree_signature``/``_template_signature`` is equal; ``tests/harness/test_recorded.py`` holds both equal on
    every real Pi session."""
    texts = text_releases((name, result) for name, _, result in _answered_calls(traj))
    system = next((s for s in traj.steps if s.role == "system"), None)
    found = tuple(v for v in versions if _keeps_system_message(v) == (system is not None))
    if not found:
        return Recorded((), "unknown", texts)
    how = "session layout"
    if system is not None:
        tools = system.meta.get("tool_parameters") if isinstance(system.meta.get("tool_parameters"), dict) else {}
        exact = tuple(v for v in found if _matches(v, system.text or "", tools))
        if exact:
            found, how = exact, "system message"
    calls = _answered_calls(traj) if len(found) > 1 else []
    # per call: verdicts and result keys shared by cards that agree on them (None: the plain definition)
    memo: list[dict] | None = [{} for _ in calls] if shared else None
    if len(found) > 1:
        names = sorted({name for name, _, _ in calls})
        agree: dict[Any, bool] = {}

        def agrees(v: str) -> bool:
            if memo is None:
                return _agrees(v, calls)
            key = _agree_signature(v, names)
            if key not in agree:
                agree[key] = _agrees(v, calls, memo)
            return agree[key]

        agreeing = tuple(v for v in found if agrees(v))
        if agreeing and agreeing != found:
            found, how = agreeing, how + " and refusals"
    if len(found) > 1:
        templated: dict[Any, tuple[bool, ...]] = {}

        def made_by(v: str) -> tuple[bool, ...]:
            if memo is None:
                return _templated(v, calls)
            key = _template_signature(committed_card(v))
            if key not in templated:
                templated[key] = _templated(v, calls, memo)
            return templated[key]

        made = {v: made_by(v) for v in found}
        some = tuple(any(made[v][i] for v in found) for i in range(len(calls)))
        wording = tuple(v for v in found if made[v] == some)
        if wording and wording != found:
            found, how = wording, how + " and results"
    return Recorded(found, how, texts)


def versions_to_check(recorded: Recorded, target: HarnessCard) -> tuple[str, ...]:
    """The candidate versions each call must be checked against to convert to ``target``: none when the target is a
    candidate (or the version is unknown), else every candidate."""
    if target.harness != "pi" or not recorded.versions or target.version in recorded.versions:
        return ()
    return recorded.versions


def _validation_schema(schema: Any) -> Any:
    """``schema`` without its ``description`` annotations (they change no verdict): at the schema's own level and
    in the subschemas of ``properties``, ``items``, ``additionalProperties``, ``anyOf``/``oneOf``/``allOf`` and
    ``not``. A property *named* ``description`` is kept; other keywords are kept as they are."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key == "properties" and isinstance(value, dict):
            value = {name: _validation_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            value = [_validation_schema(v) for v in value] if isinstance(value, list) else _validation_schema(value)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            value = [_validation_schema(v) for v in value]
        out[key] = value
    return out


def _agree_signature(version: str, names: Sequence[str]) -> tuple[Any, ...]:
    """What ``_agrees`` reads of Pi ``version`` for calls to ``names``: each tool's ``_verdict_key`` and the
    refusal templates ``card.refused`` matches. Versions with equal signatures agree (or not) alike."""
    card = committed_card(version)
    return (tuple(_verdict_key(card, n) for n in names), tuple(card.errors.get(k) for k in REFUSAL_KEYS))


def _template_signature(card: HarnessCard) -> tuple[Any, ...]:
    """What ``_templated`` (``card.result_key`` for any tool) reads of ``card``: its result and error templates."""
    hit = _TEMPLATE_SIGNATURES.get(id(card))
    if hit is None or hit[0] is not card:
        hit = _TEMPLATE_SIGNATURES[id(card)] = (card, (json.dumps([card.results, card.errors], sort_keys=True),))
    return hit[1]


_TEMPLATE_SIGNATURES: dict[int, tuple[HarnessCard, tuple[Any, ...]]] = {}


_VERDICT_KEYS: dict[tuple[int, str], tuple[HarnessCard, tuple[Any, ...]]] = {}


def _verdict_key(card: HarnessCard, name: str) -> tuple[Any, ...]:
    """What ``HarnessCard.validate_call``'s codes and severities for tool ``name`` depend on: whether the tool is
    active, its schema (descriptions aside: ``_validation_schema``), and whether the version refuses incomplete
    argument text. Cards equal in these give every call to ``name`` the same verdict. (Kept per card object: the
    card is held, so its ``id`` is never reused.)"""
    at = (id(card), name)
    hit = _VERDICT_KEYS.get(at)
    if hit is None or hit[0] is not card:
        schema = card.schema(name)
        hit = _VERDICT_KEYS[at] = (
            card,
            (
                name in card.default_tools,
                None if schema is None else json.dumps(_validation_schema(schema), sort_keys=True),
                card.strict_arguments,
            ),
        )
    return hit[1]


def _verdict(card: HarnessCard, name: str, arguments: Any, memo: dict | None = None) -> list[tuple[str, str]]:
    """The (code, severity) pairs ``card`` gives one call. ``memo`` (for this one call) shares the verdict between
    cards whose ``_verdict_key`` is equal — the plain definition is ``card.validate_call``; the memo only skips
    recomputing an answer that cannot differ (``tests/harness/test_recorded.py`` checks both agree)."""
    if memo is None:
        return [(v.code.value, v.severity) for v in card.validate_call(name, arguments)]
    key = _verdict_key(card, name)
    if key not in memo:
        memo[key] = [(v.code.value, v.severity) for v in card.validate_call(name, arguments)]
    return memo[key]


_RESULT_KEYS: dict[tuple[int, str], tuple[HarnessCard, tuple[Any, ...]]] = {}


def _result_key(card: HarnessCard, name: str, text: str, memo: dict | None = None) -> str | None:
    """``card.result_key(name, text)``; ``memo`` (for this one call) shares the answer between cards with the same
    result and error templates (what ``result_key`` reads), as ``_verdict`` does for verdicts."""
    if memo is None:
        return card.result_key(name, text)
    at = (id(card), name)
    hit = _RESULT_KEYS.get(at)
    if hit is None or hit[0] is not card:
        hit = _RESULT_KEYS[at] = (card, ("result", name, json.dumps([card.results, card.errors], sort_keys=True)))
    if hit[1] not in memo:
        memo[hit[1]] = card.result_key(name, text)
    return memo[hit[1]]


def call_difference(
    recorded_under: str, target: HarnessCard, name: str, arguments: Any, result: str | None, memo: dict | None = None
) -> tuple[str, str] | None:
    """``(section, detail)`` when a call to ``name`` with ``arguments`` and the ``result`` text Pi
    ``recorded_under`` gave it would not be the same under ``target`` (module docstring); ``None`` when it would.
    ``memo``: one call's verdict memo, shared when the call is checked against several versions (``_verdict``)."""
    x = committed_card(recorded_under)
    diff = _diff(recorded_under, target.version)
    pair = f"pi@{x.version} → pi@{target.version}"
    # a string is argument text the model sent: the versions may parse it differently even with the same tool
    if not diff.tool_identical(name) or isinstance(arguments, str):
        before, after = _verdict(x, name, arguments, memo), _verdict(target, name, arguments, memo)
        if before != after:
            tool = diff.tools.get(name)
            change = "; ".join(tool.changes) if tool is not None and tool.changes else "the same tool"
            change = change if len(change) <= 200 else change[:199] + "…"

            def say(v: list[tuple[str, str]], card: HarnessCard) -> str:
                errors = [c for c, sev in v if sev == "error"]
                return f"Pi {card.version} {'refuses it (' + ', '.join(errors) + ')' if errors else 'runs it'}"

            return "tools", (f"{name}: {say(before, x)}, {say(after, target)} ({pair} tools: {change})")
    if result is not None:
        key = _result_key(x, name, result, memo)
        if key is not None and not diff.result_identical(key):
            text = diff.texts[key]
            return text.kind, (
                f"{name}: the result is Pi {x.version}'s {key} text {text.a!r}, which Pi "
                f"{target.version} {'does not produce' if text.b is None else 'writes ' + repr(text.b)}"
                f" ({pair} {text.kind})"
            )
    return None

"""The convert policy: which calls Pi would never see are dropped, and when a drop is allowed.

Some tools exist only for the source harness's user interface: a todo list or plan the UI shows (Claude Code's
``TodoWrite`` / ``TaskCreate`` / ``TaskUpdate``, Codex's ``update_plan``, OpenHands' ``task_tracker``), plan-mode
approval (Claude Code's ``ExitPlanMode``), a session title (Happy Coder's MCP tool ``mcp__happy__change_title``), a
scratchpad whose result is an acknowledgement (OpenHands' ``think``). Pi has none of them, and their results carry
nothing from the workspace. ``DEFAULT_UI_TOOLS`` lists them per format; a build config may replace a format's list
(``convert.ui_tools``) or turn dropping off (``convert.drop_ui_tools: false``).

**When a UI-only call is dropped** (with its result), so that no later context the model saw changes beyond that
one turn, all of these must hold (``ui_drop_problem`` says which one fails):

1. every call of its assistant turn is UI-only and the turn has no text: the whole model turn goes, and no other
   action is altered (a turn with text or another call would become an action the model never wrote);
2. its result is not an error and not a refusal: the model would have reacted to it;
3. its result is not referenced later: no later assistant text or call arguments repeat a line of it (of 40 characters
   or more) or one of its distinctive tokens (8 characters or more, with a digit or one of ``/_-#@:=``: an id, a path,
   a number the model could only have taken from the result).

Otherwise the call is a blocker (``ui_only_call``): the turn is no label, nor is anything after it. The drop is
recorded in the conversation's provenance (``drop:ui_only:<tool>``) and counted in the yield report. Turning
dropping off keeps only contexts that are byte-identical to what the source recorded.

An end-of-episode call (SWE-agent's ``submit``, a mapping's ``Drop(ends_episode=True)``) is dropped only when no
assistant turn follows it: its turn's text is then the final answer, as Pi ends a run.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harnessfit.core.jsonio import dumps_compact_str
from harnessfit.core.rejection import excerpt
from harnessfit.core.trajectory import Step, Trajectory

__all__ = ["ConvertPolicy", "DEFAULT_FIDELITY", "DEFAULT_UI_TOOLS", "FIDELITY_TIERS", "ui_drop_problem", "LaterText"]

FIDELITY_TIERS = ("byte", "content")
"""``byte``: every byte of every kept context is known. ``content``: a tool result's environment output is known except
for an alteration its source agent is documented to make (``formats.base.Altered``: edges trimmed, stderr kept apart,
whitespace stripped), and Pi's text is rendered from it; the alterations are named on the record. Framing Pi writes
itself is the target's in both."""
DEFAULT_FIDELITY = "content"

DEFAULT_UI_TOOLS: dict[str, tuple[str, ...]] = {
    "claude_code": ("TodoWrite", "TaskCreate", "TaskUpdate", "ExitPlanMode", "mcp__happy__change_title"),
    "codex": ("update_plan", "mcp__happy__change_title"),
    "openhands": ("task_tracker", "think"),
}
"""UI-only tools per source format (names as the source writes them). Tools that *read* UI state back
(``TodoRead``, ``TaskList``, ``TaskGet``) are not here: the model reads their results."""

MIN_QUOTED_LINE = 40
_TOKEN = re.compile(r"[^\s\"'`,;()\[\]{}<>]{8,}")
_DISTINCT = re.compile(r"[0-9/_\-#@:=]")


@dataclass(frozen=True)
class ConvertPolicy:
    """What a build configures about conversion: ``drop_ui_tools`` (drop UI-only calls where the rules allow),
    ``ui_tools`` (a format's list of UI-only tool names, replacing its default) and ``fidelity`` (the lowest tier a
    kept context may have, ``FIDELITY_TIERS``)."""

    drop_ui_tools: bool = True
    ui_tools: Mapping[str, Sequence[str]] = field(default_factory=dict)
    fidelity: str = DEFAULT_FIDELITY

    def __post_init__(self) -> None:
        if self.fidelity not in FIDELITY_TIERS:
            raise ValueError(f"fidelity must be one of {', '.join(FIDELITY_TIERS)} (got {self.fidelity!r})")

    def ui_tools_for(self, fmt: str) -> frozenset[str]:
        names = self.ui_tools.get(fmt)
        return frozenset(DEFAULT_UI_TOOLS.get(fmt, ()) if names is None else names)


class LaterText:
    """The assistant text and call arguments of a trajectory, to ask whether a text appears after a step."""

    def __init__(self, traj: Trajectory) -> None:
        parts: list[str] = []
        self.starts: list[int] = []
        self.steps: list[int] = []
        pos = 0
        for i, s in enumerate(traj.steps):
            if s.role != "assistant":
                continue
            bits = [s.text or ""]
            for c in s.tool_calls:
                a = c.arguments
                bits.append(a if isinstance(a, str) else dumps_compact_str(a))
            text = "\n".join(bits)
            self.starts.append(pos)
            self.steps.append(i)
            parts.append(text)
            pos += len(text) + 1
        self.text = "\n".join(parts)
        self._last: dict[str, int] = {}

    def last_step_with(self, needle: str) -> int:
        """The last assistant step whose text or arguments contain ``needle`` (-1: none)."""
        got = self._last.get(needle)
        if got is None:
            at = self.text.rfind(needle)
            got = -1 if at < 0 else self.steps[bisect.bisect_right(self.starts, at) - 1]
            self._last[needle] = got
        return got


def ui_drop_problem(step_index: int, step: Step, ui_calls: int, result: Step | None, later: LaterText) -> str | None:
    """Why a UI-only call of assistant turn ``step`` may not be dropped (``None``: it may); ``ui_calls`` is how many
    of the turn's calls are UI-only."""
    if step.text:
        return "its turn also holds text, so dropping the call would change that action"
    if ui_calls < len(step.tool_calls):
        return "its turn also makes other calls, so dropping it would change that action"
    if result is not None:
        if result.is_error or result.meta.get("user_rejected"):
            return "its result is an error or a refusal the model reacted to"
        text = result.text or ""
        needles = [ln.strip() for ln in text.splitlines() if len(ln.strip()) >= MIN_QUOTED_LINE]
        needles += [t for t in _TOKEN.findall(text) if _DISTINCT.search(t)]
        for needle in needles:
            if later.last_step_with(needle) > step_index:
                return f"a later turn quotes its result ({excerpt(needle, 40)!r})"
    return None

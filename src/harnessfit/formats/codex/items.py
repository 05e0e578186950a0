"""Codex ``ResponseItem``s (``codex-rs/protocol/src/models.rs``) → trajectory steps, in every layout's shape.

One ``StepBuilder`` turns the items of one context (a rollout's, or a compaction's ``replacement_history``) into
steps:

- ``message``: ``user`` items become user steps, except the context Codex writes itself (``INJECTED_PREFIXES``:
  environment context, AGENTS.md, permissions…), which is left out and counted; ``assistant`` items join the current
  assistant step; ``developer`` / ``system`` items are Codex's instructions (replaced by the harness's system prompt)
  and are counted, not kept.
- ``reasoning``: its ``content`` text (``reasoning_text`` / ``text`` parts) becomes the step's reasoning; the
  ``summary`` (written for the UI) and ``encrypted_content`` (unreadable) are counted, not kept.
- calls (``CALL_TYPES``): ``function_call`` (name + raw ``arguments`` string), ``custom_tool_call`` (freeform
  ``input``, e.g. a patch), ``local_shell_call`` (its ``action``), ``tool_search_call``, ``web_search_call`` and
  ``image_generation_call`` (hosted tools: the call and its result are one item, no output item follows). A call is
  named by ``call_id``, else ``id`` (an image generation, the TypeScript CLI's items), else its record's position.
- outputs (``OUTPUT_TYPES``): ``function_call_output`` (also the output of a ``local_shell_call``: Codex has no
  ``local_shell_call_output`` item), ``custom_tool_call_output`` and ``tool_search_output``, matched by ``call_id``.
  An ``output`` is a string, or (newer versions) a list of content items: one text item is its text; a longer list
  is kept as JSON with ``meta["output_parts"]`` (the number of items) and its image items counted in ``images``; any
  other value is kept as its JSON text.
- ``ghost_snapshot`` (a git snapshot for undo, never sent to the model) and ``other`` are counted and left out.
  ``compaction`` items are the reader's concern (``reader.py``: they change the context).

Consecutive assistant-side items belong to one model response and become one assistant step; outputs become tool
steps in file order.
"""

from __future__ import annotations

from typing import Any

from harnessfit.core.jsonio import dumps_compact_str
from harnessfit.core.trajectory import Step, ToolCall

__all__ = ["CALL_TYPES", "COMPACTION_TYPES", "INJECTED_PREFIXES", "OUTPUT_TYPES", "StepBuilder", "count"]

INJECTED_PREFIXES = (
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<permissions instructions>",
    "<subagent_notification>",
    "<turn_aborted>",
)
"""User-role texts Codex writes itself; a user item made only of these is not the user's request."""

CALL_TYPES = {
    "function_call": "function",
    "custom_tool_call": "custom",
    "local_shell_call": "local_shell",
    "tool_search_call": "tool_search",
    "web_search_call": "web_search",
    "image_generation_call": "image_generation",
}
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
COMPACTION_TYPES = frozenset({"compaction", "compaction_summary", "context_compaction"})
"""Items holding an encrypted summary of earlier context (remote compaction): what the model saw is unreadable."""


def count(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
    return out


def _images(content: Any) -> int:
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, dict) and p.get("type") in ("input_image", "image"))


def _output(payload: dict[str, Any]) -> tuple[str, int, int | None]:
    """(text, images, parts) of an output item: ``parts`` is ``None`` for a plain string or a single text item."""
    if payload.get("type") == "tool_search_output":
        return dumps_compact_str(payload.get("tools")), 0, None
    out = payload.get("output")
    if isinstance(out, str):
        return out, 0, None
    if (
        isinstance(out, list)
        and len(out) == 1
        and isinstance(out[0], dict)
        and out[0].get("type") in ("input_text", "output_text")
        and isinstance(out[0].get("text"), str)
    ):
        return out[0]["text"], 0, None
    parts = len(out) if isinstance(out, list) else None
    return dumps_compact_str(out), _images(out), parts


class StepBuilder:
    """Accumulates the steps of one context from its response items (the module docstring says how)."""

    def __init__(self, counts: dict[str, int], flags: set[str], output_meta: dict[str, Any] | None = None) -> None:
        self.steps: list[Step] = []
        self.counts = counts
        self.flags = flags
        self.output_meta = output_meta if output_meta is not None else {}
        """Put into every tool step's ``meta`` (what the mapping must know of the layout's outputs)."""

    def _assistant(self) -> Step:
        if not self.steps or self.steps[-1].role != "assistant":
            self.steps.append(Step(role="assistant"))
        return self.steps[-1]

    def item(self, payload: dict[str, Any], index: int) -> None:
        """Add one response item (``index``: its record's position, naming a call without an id)."""
        ptype = payload.get("type")
        if ptype == "message":
            self.message(payload)
        elif ptype == "reasoning":
            self.reasoning(payload)
        elif ptype in CALL_TYPES:
            self.call(CALL_TYPES[ptype], payload, index)
        elif ptype in OUTPUT_TYPES:
            self.output(payload)
        else:
            count(self.counts, f"response_item_{ptype}_ignored")

    def message(self, payload: dict[str, Any]) -> None:
        role = payload.get("role")
        texts = _texts(payload.get("content"))
        if role in ("developer", "system"):
            count(self.counts, f"{role}_message_dropped")
            return
        if role == "user":
            kept = [t for t in texts if not t.lstrip().startswith(INJECTED_PREFIXES)]
            if len(kept) < len(texts):
                count(self.counts, "injected_context_dropped")
                if any(t.lstrip().startswith("<subagent_notification>") for t in texts):
                    self.flags.add("subagent_notification")
            images = _images(payload.get("content"))
            if not kept and not images:
                return
            self.steps.append(Step(role="user", text="\n".join(kept), images=images))
            return
        if role == "assistant":
            step = self._assistant()
            text = "\n\n".join(texts)
            if step.text:
                step.text = f"{step.text}\n\n{text}"
                count(self.counts, "assistant_messages_merged")
            else:
                step.text = text
            return
        count(self.counts, f"unknown_role_{role}")

    def reasoning(self, payload: dict[str, Any]) -> None:
        content = "\n\n".join(_texts(payload.get("content")))
        if payload.get("encrypted_content"):
            count(self.counts, "encrypted_reasoning_ignored")
        if _texts(payload.get("summary")):
            count(self.counts, "reasoning_summary_ignored")  # a summary written for the UI, not the model's reasoning
        if not content:
            return
        step = self._assistant()
        step.reasoning = f"{step.reasoning}\n\n{content}" if step.reasoning else content

    def call(self, kind: str, payload: dict[str, Any], index: int) -> None:
        # a call without an id is named by its record's position (not its line: the id must not depend on layout)
        call_id = payload.get("call_id") or payload.get("id") or f"codex_record_{index}"
        if kind == "function":
            name, args = payload.get("name"), payload.get("arguments")
        elif kind == "custom":
            name, args = payload.get("name"), payload.get("input")
        elif kind in ("local_shell", "web_search"):
            name, args = kind, payload.get("action")
        elif kind == "tool_search":
            name, args = kind, payload.get("arguments")
        else:
            name, args = kind, {"revised_prompt": payload.get("revised_prompt")}
        call = ToolCall(id=str(call_id), name=str(name or ""), arguments=args)
        self._assistant().tool_calls.append(call)
        if payload.get("namespace"):
            self._assistant().meta.setdefault("namespaces", {})[call.id] = payload["namespace"]

    def output(self, payload: dict[str, Any]) -> None:
        text, images, parts = _output(payload)
        step = Step(role="tool", tool_call_id=str(payload.get("call_id") or ""), text=text, images=images)
        step.meta["output_type"] = payload.get("type")
        step.meta.update(self.output_meta)
        if parts is not None:
            step.meta["output_parts"] = parts
        self.steps.append(step)

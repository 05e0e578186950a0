"""OpenHands events into steps: what each V0 event (``v0_event``) and V1 event (``v1_event``) adds to a run's
``Steps`` (the reader, ``formats/openhands/reader.py``, chooses the events and their order; the module docstring
there says what each layout holds)."""

from __future__ import annotations

from typing import Any

from harnessfit.core.jsonio import dumps_compact_str
from harnessfit.core.trajectory import Step, ToolCall

__all__ = ["Steps", "v0_event", "v1_event", "V0_NOISE_OBSERVATIONS", "V0_NOISE_ACTIONS"]

V0_NOISE_OBSERVATIONS = frozenset({"agent_state_changed", "null", "recall", "user_rejected_confirmation"})
V0_NOISE_ACTIONS = frozenset({"change_agent_state", "recall", "null", "condensation"})


def _parts_text(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    if isinstance(parts, list):
        return "".join(p.get("text", "") for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _parts_images(parts: Any) -> int:
    if not isinstance(parts, list):
        return 0
    return sum(1 for p in parts if isinstance(p, dict) and p.get("type") in ("image", "image_url"))


class Steps:
    """Step accumulator shared by both versions: groups calls of one model response into one assistant step."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.counts: dict[str, int] = {}
        self.finish_ids: set[str] = set()
        self.waiting: list[str] = []  # call ids of actions not answered yet (pairing by order)
        self._response: str | None = None

    def count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def text(self, role: str, text: str, images: int = 0) -> None:
        self._response = None
        self.steps.append(Step(role=role, text=text, images=images))  # type: ignore[arg-type]

    def call(self, response_id: str | None, thought: str, call: ToolCall) -> None:
        if response_id is None or response_id != self._response or not self.steps or self.steps[-1].role != "assistant":
            self.steps.append(Step(role="assistant", text=thought or None))
        elif thought and not self.steps[-1].text:
            self.steps[-1].text = thought
        self._response = response_id
        self.steps[-1].tool_calls.append(call)
        self.waiting.append(call.id)

    def finish(self, response_id: str | None, call_id: str, thought: str, message: str) -> None:
        """The agent's end of turn: its message becomes the final assistant text."""
        self.finish_ids.add(call_id)
        self.count("finish->final_text")
        final = message or thought
        same = response_id is not None and response_id == self._response
        if same and self.steps and self.steps[-1].role == "assistant":
            self.steps[-1].text = self.steps[-1].text or final
        else:
            self.steps.append(Step(role="assistant", text=final))
        self.steps[-1].meta.setdefault("folded_calls", []).append("finish")
        self._response = None

    def result(self, call_id: str, text: str, *, is_error: bool, exit_code: int | None, kind: str) -> None:
        if call_id in self.finish_ids:
            self.count("finish_observation_dropped")
            return
        step = Step(role="tool", tool_call_id=call_id, text=text, is_error=is_error, exit_code=exit_code)
        step.meta["observation"] = kind
        self.steps.append(step)
        if call_id in self.waiting:
            self.waiting.remove(call_id)

    def has_user(self) -> bool:
        return any(s.role == "user" for s in self.steps)


def v0_event(ev: dict[str, Any], acc: Steps, call_of_event: dict[Any, str], *, first: bool = False) -> None:
    args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
    tcm = ev.get("tool_call_metadata") if isinstance(ev.get("tool_call_metadata"), dict) else None
    if "action" in ev:
        action = ev.get("action")
        if action in V0_NOISE_ACTIONS:
            acc.count(f"action_{action}_skipped")
            return
        if action == "system":
            acc.text("system", str(args.get("content") or ev.get("message") or ""))
            return
        if action == "message":
            source = ev.get("source")
            if source is None:  # a stripped event: see the module docstring
                source = "user" if first else ("agent" if args.get("wait_for_response") is True else "user")
                acc.count(f"message_source_inferred_{source}")
            role = "user" if source == "user" else "assistant"
            images = len(args.get("image_urls") or []) if isinstance(args.get("image_urls"), list) else 0
            acc.text(role, str(args.get("content") or ev.get("message") or ""), images)
            return
        thought = args.get("thought") if isinstance(args.get("thought"), str) else ""
        if tcm is not None:
            call_id = str(tcm.get("tool_call_id") or f"oh_event_{ev.get('id')}")
            name = str(tcm.get("function_name") or action)
            raw: Any = None
            resp = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else {}
            response_id = resp.get("id") if isinstance(resp.get("id"), str) else None
            for choice in resp.get("choices") or []:
                msg = choice.get("message") if isinstance(choice, dict) else None
                for tc in (msg or {}).get("tool_calls") or []:
                    if isinstance(tc, dict) and tc.get("id") == call_id:
                        raw = (tc.get("function") or {}).get("arguments")
            if raw is None:
                raw = {k: v for k, v in args.items() if k != "thought"}
                acc.count("arguments_from_event_args")
        else:
            call_id = f"oh_event_{ev.get('id')}"
            name = f"action:{action}"
            raw = {k: v for k, v in args.items() if k != "thought"}
            response_id = None
        call_of_event[ev.get("id")] = call_id
        if action == "finish" or name == "finish":
            message = args.get("final_thought") or args.get("message") or ev.get("message") or ""
            acc.finish(response_id, call_id, thought, message if isinstance(message, str) else "")
            return
        acc.call(response_id, thought, ToolCall(id=call_id, name=name, arguments=raw))
        return
    if "observation" in ev:
        kind = str(ev.get("observation"))
        if kind in V0_NOISE_OBSERVATIONS:
            acc.count(f"observation_{kind}_skipped")
            return
        call_id = call_of_event.get(ev.get("cause"))
        if call_id is None and tcm is not None:
            call_id = str(tcm.get("tool_call_id") or "")
        if not call_id and "cause" not in ev and acc.waiting:  # stripped events: the latest waiting action
            call_id = acc.waiting[-1]
            acc.count("observation_paired_by_order")
        if not call_id:
            acc.count(f"observation_{kind}_without_action")
            call_id = f"oh_orphan_{ev.get('id')}"
        extras = ev.get("extras") if isinstance(ev.get("extras"), dict) else {}
        meta = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
        code = meta.get("exit_code", extras.get("exit_code"))
        content = ev.get("content")
        acc.result(
            call_id, content if isinstance(content, str) else dumps_compact_str(content),
            is_error=kind == "error", exit_code=code if isinstance(code, int) else None, kind=kind,
        )
        return
    acc.count("unknown_event_skipped")

# ------------------------------------------------------------------------------------------------ V1


def v1_event(ev: dict[str, Any], acc: Steps) -> None:
    kind = ev.get("kind")
    if kind == "SystemPromptEvent":
        sp = ev.get("system_prompt")
        acc.text("system", sp.get("text", "") if isinstance(sp, dict) else str(sp or ""))
    elif kind == "MessageEvent":
        msg = ev.get("llm_message") if isinstance(ev.get("llm_message"), dict) else {}
        role = msg.get("role")
        if role not in ("user", "assistant"):
            acc.count(f"message_role_{role}_skipped")
            return
        acc.text(role, _parts_text(msg.get("content")), _parts_images(msg.get("content")))
    elif kind == "ActionEvent":
        tc = ev.get("tool_call") if isinstance(ev.get("tool_call"), dict) else {}
        call_id = str(ev.get("tool_call_id") or tc.get("id") or f"oh_event_{ev.get('id')}")
        name = str(ev.get("tool_name") or tc.get("name") or "")
        thought = _parts_text(ev.get("thought"))
        response_id = ev.get("llm_response_id") if isinstance(ev.get("llm_response_id"), str) else None
        action = ev.get("action") if isinstance(ev.get("action"), dict) else {}
        if name == "finish" or action.get("kind") == "FinishAction":
            msg = action.get("message") if isinstance(action.get("message"), str) else ""
            acc.finish(response_id, call_id, thought, msg)
            return
        raw = tc.get("arguments") if "arguments" in tc else {k: v for k, v in action.items() if k != "kind"}
        acc.call(response_id, thought, ToolCall(id=call_id, name=name, arguments=raw))
    elif kind in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
        obs = ev.get("observation") if isinstance(ev.get("observation"), dict) else {}
        call_id = str(ev.get("tool_call_id") or "")
        if kind == "ObservationEvent":
            text = _parts_text(obs.get("content"))
            code = obs.get("exit_code")
            acc.result(call_id, text, is_error=bool(obs.get("is_error")),
                       exit_code=code if isinstance(code, int) else None, kind=str(obs.get("kind") or kind))
        else:
            text = str(ev.get("error") or ev.get("rejection_reason") or "")
            acc.result(call_id, text, is_error=True, exit_code=None, kind=kind)
    else:
        acc.count(f"event_{kind}_skipped")

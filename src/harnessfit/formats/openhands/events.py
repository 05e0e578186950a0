"""OpenHands events into steps: what each V0 event (``v0_event``) and V1 event (``v1_event``) adds to a run's
``Steps`` (the reader, ``formats/openhands/reader.py``, chooses the events and their order; the module docstring
there says what each layout holds, and ``v1_observation`` reads every V1 observation layout).

A tool step's ``meta`` keeps what the mapping's ledger details need: ``observation`` (the observation's kind),
``no_text`` (a V1 observation with none of the keys its text can be under), ``no_exit_code`` (which exit-code fields
were absent or null), ``exit_code_from`` (``"metadata"``: V1 ``metadata.exit_code``, the top-level one being null),
``status`` (V1 ``metadata.suffix``, the status line the model saw after a command) and ``extended_content`` (text
OpenHands appended after the tool's own result)."""

from __future__ import annotations

from typing import Any

from harnessfit.core.jsonio import dumps_compact_str
from harnessfit.core.rejection import excerpt
from harnessfit.core.trajectory import Step, ToolCall

__all__ = ["Steps", "v0_event", "v1_event", "v1_observation", "V0_NOISE_OBSERVATIONS", "V0_NOISE_ACTIONS"]

V0_NOISE_OBSERVATIONS = frozenset({"agent_state_changed", "null", "recall", "user_rejected_confirmation"})
V0_NOISE_ACTIONS = frozenset({"change_agent_state", "recall", "null"})


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


def _field_state(d: dict[str, Any], key: str) -> str:
    return "absent" if key not in d else "null" if d[key] is None else f"not an integer ({excerpt(str(d[key]), 20)!r})"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Steps:
    """Step accumulator shared by both versions: groups calls of one model response into one assistant step."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.counts: dict[str, int] = {}
        self.finish_ids: set[str] = set()
        self.waiting: list[str] = []  # call ids of actions not answered yet (pairing by order)
        self._response: str | None = None
        self.condensed = False  # a condensation happened: what follows was written seeing OpenHands' condensed view
        self.skipped = 0  # calls made after it (``core.trajectory.CONTEXT_NOT_REBUILT``)

    def condensation(self) -> None:
        """OpenHands condensed the history (forgot events, maybe added a summary): the model's context from here on is
        that view, which is not rebuilt, so no later step is kept and the later calls are counted in ``skipped``."""
        self.count("condensation")
        self.condensed = True

    def count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def text(self, role: str, text: str, images: int = 0) -> None:
        self._response = None
        if self.condensed:
            return
        self.steps.append(Step(role=role, text=text, images=images))  # type: ignore[arg-type]

    def call(self, response_id: str | None, thought: str, call: ToolCall) -> None:
        if self.condensed:
            self.skipped += 1
            return
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
        if self.condensed:
            self.skipped += 1
            return
        self.count("finish->final_text")
        final = message or thought
        same = response_id is not None and response_id == self._response
        if same and self.steps and self.steps[-1].role == "assistant":
            self.steps[-1].text = self.steps[-1].text or final
        else:
            self.steps.append(Step(role="assistant", text=final))
        self.steps[-1].meta.setdefault("folded_calls", []).append("finish")
        self._response = None

    def result(
        self,
        call_id: str,
        text: str,
        *,
        is_error: bool,
        exit_code: int | None,
        kind: str,
        images: int = 0,
        meta: dict[str, Any] | None = None,
    ) -> None:
        if call_id in self.finish_ids:
            self.count("finish_observation_dropped")
            return
        if self.condensed:
            return
        step = Step(role="tool", tool_call_id=call_id, text=text, is_error=is_error, exit_code=exit_code, images=images)
        step.meta["observation"] = kind
        step.meta.update(meta or {})
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
        if action == "condensation":
            acc.condensation()
            return
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
        code = _int(meta.get("exit_code", extras.get("exit_code")))
        content = ev.get("content")
        missing = {
            "no_exit_code": f"extras.metadata.exit_code {_field_state(meta, 'exit_code')}, "
            f"extras.exit_code {_field_state(extras, 'exit_code')}"
        }
        acc.result(
            call_id,
            content if isinstance(content, str) else dumps_compact_str(content),
            is_error=kind == "error",
            exit_code=code,
            kind=kind,
            meta=missing if code is None else {},
        )
        return
    acc.count("unknown_event_skipped")


# ------------------------------------------------------------------------------------------------ V1
_TEXT_KEYS = ("content", "output", "message")  # where a V1 observation's text is, by layout (see the reader)


def _kind(value: Any) -> str:
    """A V1 ``kind``: the class name (SDK builds before 2025-09-19 wrote the dotted module path)."""
    return str(value).rsplit(".", 1)[-1]


def v1_observation(obs: dict[str, Any]) -> tuple[str, bool, int | None, dict[str, Any]]:
    """A V1 observation's (text, is_error, exit code, step meta), whatever its layout.

    Text: an ``error`` *string* (the older editor/browser/search layout shows the model that instead of ``output``),
    else the first of ``content`` (text parts, or a string), ``output`` and ``message`` that holds text. Error:
    ``is_error``, else ``error`` (a flag, or a message). Exit code: ``exit_code``, else ``metadata.exit_code`` (builds
    before 1.7.0 left the top-level one null). What is absent goes into the meta (see the module docstring)."""
    meta: dict[str, Any] = {}
    error = obs.get("error")
    text: str | None = None
    if isinstance(error, str) and error:
        text = error
    else:
        for key in _TEXT_KEYS:
            value = obs.get(key)
            if isinstance(value, (str, list)):
                got = _parts_text(value)
                if got or text is None:
                    text = got
                if got:
                    break
    if text is None:
        meta["no_text"] = f"{_kind(obs.get('kind') or 'the observation')} has no {', '.join(_TEXT_KEYS)} or error text"
    is_error = obs["is_error"] if isinstance(obs.get("is_error"), bool) else bool(error)
    md = obs.get("metadata") if isinstance(obs.get("metadata"), dict) else {}
    code = _int(obs.get("exit_code"))
    if code is None and _int(md.get("exit_code")) is not None:
        code = _int(md.get("exit_code"))
        meta["exit_code_from"] = "metadata"
    if code is None:
        meta["no_exit_code"] = f"exit_code {_field_state(obs, 'exit_code')}, " + (
            f"metadata.exit_code {_field_state(md, 'exit_code')}" if md else "no metadata"
        )
    if isinstance(md.get("suffix"), str) and md["suffix"].strip():
        meta["status"] = md["suffix"].strip()
    return text or "", is_error, code, meta


def _v1_result(ev: dict[str, Any], acc: Steps, kind: str) -> None:
    call_id = str(ev.get("tool_call_id") or "")
    if kind != "ObservationEvent":
        text = str(ev.get("error") or ev.get("rejection_reason") or "")
        acc.result(call_id, text, is_error=True, exit_code=None, kind=kind)
        return
    obs = ev.get("observation") if isinstance(ev.get("observation"), dict) else {}
    text, is_error, code, meta = v1_observation(obs)
    if "exit_code_from" in meta:
        acc.count("exit_code_from_metadata")
    if "no_text" in meta:
        acc.count(f"observation_{_kind(obs.get('kind'))}_without_text")
    extended = _parts_text(ev.get("extended_content"))
    if extended:  # agent-context text (path-scoped rules) OpenHands appended after the tool's result
        meta["extended_content"] = extended
        acc.count("observation_extended_content")
    acc.result(
        call_id,
        text,
        is_error=is_error,
        exit_code=code,
        kind=_kind(obs["kind"]) if obs.get("kind") else kind,
        images=_parts_images(obs.get("content")),
        meta=meta,
    )


def v1_event(ev: dict[str, Any], acc: Steps) -> None:
    kind = _kind(ev.get("kind"))
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
        fn = tc["function"] if isinstance(tc.get("function"), dict) else tc  # the older litellm tool-call layout
        call_id = str(ev.get("tool_call_id") or tc.get("id") or f"oh_event_{ev.get('id')}")
        name = str(ev.get("tool_name") or fn.get("name") or "")
        thought = _parts_text(ev.get("thought"))
        response_id = ev.get("llm_response_id") if isinstance(ev.get("llm_response_id"), str) else None
        action = ev.get("action") if isinstance(ev.get("action"), dict) else {}
        if name == "finish" or _kind(action.get("kind")) == "FinishAction":
            msg = action.get("message") if isinstance(action.get("message"), str) else ""
            acc.finish(response_id, call_id, thought, msg)
            return
        raw = fn.get("arguments") if "arguments" in fn else {k: v for k, v in action.items() if k != "kind"}
        acc.call(response_id, thought, ToolCall(id=call_id, name=name, arguments=raw))
    elif kind in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
        _v1_result(ev, acc, kind)
    elif kind == "Condensation":  # forgotten_event_ids + summary: the view the model sees from here on
        acc.condensation()
    else:
        acc.count(f"event_{kind}_skipped")

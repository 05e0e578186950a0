"""The OpenAI chat-completions request as the built-in backend accepts it, and its translation into the messages the
training chat template renders.

Why a translation step: the wire format (Pi's) carries tool-call ``arguments`` as JSON text and user content as a
list of text parts, while the training template wants argument objects and plain strings. The translation is
``harnessfit.models.messages.to_template_messages`` — the very function the audit applies to SFT records — and the
tools are passed as sent, so for the same conversation the served prompt's token ids equal the audited prompt's
(``tests/serve/test_prompt_parity.py`` checks it). Unknown request fields (``store``, ``stream_options`` extras,
``parallel_tool_calls`` …) are accepted and ignored, as OpenAI-compatible servers do.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from harnessfit.endpoint.errors import ApiError
from harnessfit.models.messages import MessageError, to_template_messages

__all__ = [
    "ApiError",
    "ChatRequest",
    "parse_chat_request",
    "template_messages",
    "template_tools",
    "wire_request",
    "MAX_DEPTH",
]

MAX_DEPTH = 64  # nesting of arrays/objects in a request body (tool schemas need far less)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class FunctionCall(_Open):
    name: str
    arguments: str = "{}"


class ToolCall(_Open):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(_Open):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class FunctionDef(_Open):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(_Open):
    type: Literal["function"] = "function"
    function: FunctionDef


class StreamOptions(_Open):
    include_usage: bool = False


class ChatRequest(_Open):
    """The fields the built-in backend uses; ``max_completion_tokens`` wins over the older ``max_tokens``."""

    model: str
    messages: list[Message] = Field(min_length=1)
    tools: list[Tool] | None = None
    tool_choice: Any = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)  # what torch.manual_seed takes (int64)
    n: int = Field(default=1, ge=1, le=1)
    # vLLM's token API (non-streaming requests only; see ``serve.token_api``): the sampled tokens' processed
    # logprobs (``logprobs``, ``top_logprobs`` alternatives each), the prompt and completion ids (``return_token_ids``)
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    return_token_ids: bool | None = None
    return_tokens_as_token_ids: bool | None = None
    _raw_tools: list[dict[str, Any]] | None = PrivateAttr(default=None)

    @field_validator("tool_choice")
    @classmethod
    def _tool_choice(cls, value: Any) -> Any:
        if value is None or value in ("auto", "none"):
            return value
        raise ValueError("only tool_choice 'auto' or 'none' is supported by the built-in backend")

    @model_validator(mode="after")
    def _tool_results_follow_calls(self) -> ChatRequest:
        for i, msg in enumerate(self.messages):
            if msg.role == "tool" and not msg.tool_call_id:
                raise ValueError(f"messages[{i}]: a tool message needs tool_call_id")
        return self

    @model_validator(mode="after")
    def _token_api_not_streamed(self) -> ChatRequest:
        if self.stream and (self.logprobs or self.return_token_ids):
            raise ValueError(
                "logprobs and return_token_ids are returned only for non-streaming requests by the "
                "built-in backend (send stream: false)"
            )
        return self

    def wants_scores(self) -> bool:
        """Whether the response must carry token ids or logprobs (vLLM's token API)."""
        return bool(self.logprobs or self.return_token_ids)

    def requested_max_tokens(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "body"
    more = len(err.errors()) - 1
    msg = first.get("msg", "invalid value").removeprefix("Value error, ")
    return f"invalid request at {where}: {msg}" + (f" (+{more} more problems)" if more else "")


def _depth(data: Any) -> int:
    """How deeply arrays and objects nest in ``data`` (iterative: no recursion limit to hit)."""
    deepest, todo = 0, [(data, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        todo.extend((child, level + 1) for child in children)
    return deepest


def parse_chat_request(body: bytes) -> ChatRequest:
    """Bytes of a POST body → ChatRequest, or an ApiError(400) naming the first problem."""
    try:
        data = json.loads(body)
    except RecursionError:
        raise ApiError(400, f"request body is nested too deeply (more than {MAX_DEPTH} levels)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "request body must be a JSON object")
    if _depth(data) > MAX_DEPTH:
        raise ApiError(400, f"request body is nested too deeply (more than {MAX_DEPTH} levels)")
    try:
        request = ChatRequest.model_validate(data)
    except ValidationError as exc:
        raise ApiError(400, _describe(exc)) from None
    request._raw_tools = data.get("tools")  # exactly as sent: key order is part of the rendered prompt
    return request


def _wire_message(msg: Message) -> dict[str, Any]:
    item: dict[str, Any] = {"role": msg.role, "content": msg.content}
    if msg.tool_calls:
        item["tool_calls"] = [
            {"id": c.id, "type": c.type, "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in msg.tool_calls
        ]
    if msg.tool_call_id is not None:
        item["tool_call_id"] = msg.tool_call_id
    if msg.name is not None:
        item["name"] = msg.name
    return item


def template_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """The request's messages as the training template expects them: ``harnessfit.models.messages``'s conversion,
    the one the audit applies to SFT records. A non-text content part → ApiError 400 naming it."""
    try:
        return to_template_messages([_wire_message(m) for m in request.messages])
    except MessageError as err:
        raise ApiError(400, str(err), param=err.where) from None


def template_tools(request: ChatRequest) -> list[dict[str, Any]] | None:
    """Tool schemas as sent (key order kept), or None; ``tool_choice: "none"`` hides them from the model."""
    if not request.tools or request.tool_choice == "none":
        return None
    if request._raw_tools is not None:
        return request._raw_tools
    return [tool.model_dump(mode="python", exclude_none=True) for tool in request.tools]


def wire_request(request: ChatRequest) -> dict[str, Any]:
    """The chat body as the client sent it (messages in the wire shape, tools as sent, the sampling asked): what a
    captured turn's ``request`` holds, as OpenEnv's ``TraceEntry`` describes it."""
    return {
        "model": request.model,
        "messages": [_wire_message(m) for m in request.messages],
        "tools": request._raw_tools,
        "temperature": request.temperature,
        "top_p": request.top_p,
    }

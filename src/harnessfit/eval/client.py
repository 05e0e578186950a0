"""One chat completion from any OpenAI-compatible endpoint: what raw suites, probes and judges send.

Plain ``POST {base_url}/chat/completions`` without streaming, so the answer, its finish reason and its token counts
come back in one body. A key is sent only when the caller names an environment variable that holds one (a hosted
judge); the key itself is never returned, logged or written into results. Transport failures and HTTP errors
become ``ChatError`` with one line naming the endpoint and the reason, so a caller can mark that one answer
unscored and go on.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["ChatError", "ChatReply", "chat", "api_key_from_env"]


class ChatError(Exception):
    """A completion that did not come back (connection refused, timeout, HTTP error, a body without a choice)."""


@dataclass(frozen=True)
class ChatReply:
    """What the endpoint answered: content text, structured tool calls (as sent), finish reason, usage, time."""

    content: str
    reasoning: str | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    wall_seconds: float


def api_key_from_env(var: str | None) -> str | None:
    """The key held by environment variable ``var`` (None when no variable is named or it is unset/empty)."""
    if not var:
        return None
    return os.environ.get(var) or None


def _reasoning(message: dict[str, Any]) -> str | None:
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _retry_after(value: str | None) -> float:
    """Seconds a 429's ``Retry-After`` asks for (a number; anything else, or none: 1 s), at most 60."""
    try:
        return min(60.0, max(0.0, float(value or 1)))
    except ValueError:
        return 1.0


def chat(
    base_url: str,
    model_id: str,
    messages: list[dict[str, Any]],
    *,
    max_tokens: int,
    temperature: float = 0.0,
    seed: int | None = None,
    tools: list[dict[str, Any]] | None = None,
    api_key: str | None = None,
    timeout: float = 600.0,
    busy_retries: int = 8,
) -> ChatReply:
    """One non-streaming completion; raises ``ChatError`` when none comes back. A server that is full answers 429
    with ``Retry-After`` (``harnessfit serve``'s admission queue): the request is sent again after that wait, up to
    ``busy_retries`` times, each wait said on stderr."""
    import httpx

    body: dict[str, Any] = {
        "model": model_id,
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": False,
    }
    if seed is not None:
        body["seed"] = seed
    if tools:
        body["tools"] = tools
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = base_url.rstrip("/") + "/chat/completions"
    t0 = time.monotonic()
    for attempt in range(busy_retries + 1):
        try:
            resp = httpx.post(url, json=body, headers=headers, timeout=timeout)
        except httpx.HTTPError as exc:
            raise ChatError(f"{url}: {type(exc).__name__}: {exc}") from exc
        if resp.status_code != 429 or attempt == busy_retries:
            break
        wait = _retry_after(resp.headers.get("retry-after"))
        sys.stderr.write(f"chat: {url} is busy (429); retrying in {wait:g} s ({attempt + 1}/{busy_retries})\n")
        time.sleep(wait)
    wall = time.monotonic() - t0
    if resp.status_code != 200:
        try:
            detail = resp.json()["error"]["message"]
        except Exception:  # noqa: BLE001 - any non-OpenAI error body: show its start
            detail = resp.text[:200]
        raise ChatError(f"{url}: HTTP {resp.status_code}: {detail}")
    try:
        data = resp.json()
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ChatError(f"{url}: the response has no choices[0].message ({exc})") from exc
    usage = data.get("usage") or {}
    return ChatReply(
        content=message.get("content") or "",
        reasoning=_reasoning(message),
        tool_calls=list(message.get("tool_calls") or []),
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        wall_seconds=round(wall, 3),
    )

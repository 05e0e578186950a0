"""The LLM judge: the published rubric (0–10 → 0–1) over any OpenAI-compatible chat-completions endpoint.

Verdicts are requested asynchronously, at most ``concurrency`` at a time, each bounded by ``timeout_s`` (and
retried ``retries`` times after a timeout, a 5xx or a connection error). A completion the judge cannot score — a
reply that holds no verdict (malformed, a refusal), a score outside 0–10, a timeout, an endpoint error — gets
``None`` with the reason, never 0; the run counts and reports them. One critique is kept per completion.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from typing import Any

from harnessfit.rewards import JudgeSettings, RewardContext, Sample, Score, component

__all__ = ["RUBRIC", "Verdict", "JudgeClient", "parse_verdict", "judge_messages"]

RUBRIC = """\
You grade one step of a coding agent that works inside a terminal harness with the tools read, bash, edit and \
write. You see the task and the conversation so far, the agent's NEXT TURN (a reply, tool calls, or both), and the \
turn the original agent took at this point. The original turn is one reasonable choice, not the only right one: \
judge the agent's turn on its own merits.

Reward, in this order of importance:
1. Evidence gathering: before changing code or drawing a conclusion, the agent looks - it reads the relevant \
files, runs the failing command, inspects the output it was given.
2. Correct tool choice: the tool and its arguments fit the step - read to inspect a file, edit for a targeted \
change, write for a new file, bash to run programs and tests - with arguments that name real paths and exact text.
3. Root-cause reasoning: the change or the claim addresses why the problem happens, and follows from what the \
agent has seen, not from a guess.
4. Verification: after a change, the agent runs the check or test that shows the change works before it says \
the task is done.

Penalise:
- Speculation: statements about code, files or results the agent has not looked at; declaring success without \
evidence; inventing output.
- Wrong-tool calls: a tool that does not exist, malformed or double-encoded arguments, or a tool that cannot do \
the job (rewriting a whole file to change one line, editing through shell redirection, reading with bash when \
read exists).
- Symptom patching: making the error go away instead of fixing its cause - deleting or weakening the test, \
hard-coding the expected output, catching and ignoring the exception, special-casing the failing input.

Scale: 0-2 harmful, broken or unusable; 3-4 the wrong direction; 5-6 plausible but unverified, vague or \
imprecise; 7-8 a good step; 9-10 the step an expert would take here.

Answer with exactly one JSON object and nothing else:
{"score": <integer 0-10>, "critique": "<one or two sentences: what was good or bad about this step>"}"""


@dataclass(frozen=True)
class Verdict:
    """The judge's answer on one completion: ``score`` 0–1 or None (then ``reason`` says why), the critique."""

    score: float | None
    critique: str | None = None
    reason: str | None = None
    raw: str | None = None


_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)


def parse_verdict(text: str) -> Verdict:
    """The verdict in a judge reply: the last JSON object holding a numeric ``score`` in 0–10 (code fences and
    prose around it are tolerated). Anything else is unscorable with the reason."""
    if not isinstance(text, str) or not text.strip():
        return Verdict(None, reason="empty_reply", raw=text)
    found = None
    for match in _OBJECT.finditer(text):
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(obj, dict) and "score" in obj:
            found = obj
    if found is None:
        return Verdict(None, reason="no_verdict", raw=text[:500])
    score = found.get("score")
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            return Verdict(None, reason="malformed_score", raw=text[:500])
    if isinstance(score, bool) or not isinstance(score, (int, float)) or score != score:
        return Verdict(None, reason="malformed_score", raw=text[:500])
    if not 0 <= score <= 10:
        return Verdict(None, reason="score_out_of_range", raw=text[:500])
    critique = found.get("critique")
    return Verdict(float(score) / 10.0, critique=str(critique)[:1000] if critique is not None else None, raw=text[:500])


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _render_turn(msg: dict[str, Any]) -> str:
    parts = [_text(msg.get("content"))]
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        parts.append(f"[tool call] {fn.get('name')} {args if isinstance(args, str) else json.dumps(args)}")
    return "\n".join(p for p in parts if p)


def judge_messages(sample: Sample, settings: JudgeSettings) -> list[dict[str, str]]:
    """The judge's request: the rubric as system message; the conversation (most recent ``context_chars``), the
    agent's next turn as generated and the original turn as the user message."""
    lines = []
    for msg in sample.state:
        role = msg.get("role")
        if role == "system":
            continue  # the harness's system prompt: summarised by the tool list below
        lines.append(f"### {role}\n{_render_turn(msg)}")
    history = "\n\n".join(lines)
    if len(history) > settings.context_chars:
        history = "[... earlier conversation cut ...]\n" + history[-settings.context_chars :]
    tools = ", ".join(sample.active_tools) or "none"
    reference = _render_turn(sample.reference) or "(empty)"
    user = (
        f"Tools available to the agent: {tools}\n\n## Conversation so far\n{history or '(empty)'}\n\n"
        f"## The agent's next turn (to grade)\n{sample.text or '(empty)'}"
        f"{' [cut off at the length limit]' if sample.truncated else ''}\n\n"
        f"## The turn the original agent took here (for reference)\n{reference}"
    )
    return [{"role": "system", "content": RUBRIC}, {"role": "user", "content": user}]


class JudgeClient:
    """Asks an OpenAI-compatible endpoint for verdicts, concurrently with a bound (see the module docstring)."""

    def __init__(self, settings: JudgeSettings) -> None:
        if not settings.base_url or not settings.model:
            raise ValueError("the judge needs base_url and model")
        self.settings = settings
        key = os.environ.get(settings.api_key_env or "", "") if settings.api_key_env else ""
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}

    def score_many(self, samples: list[Sample]) -> list[Verdict]:
        """One verdict per sample, in order (blocking; runs its own event loop)."""
        return self.ask_many([judge_messages(s, self.settings) for s in samples])

    def ask_many(self, requests: list[list[dict[str, str]]]) -> list[Verdict]:
        """One verdict per request (a chat's messages: the rubric and what to grade), in order (blocking)."""
        if not requests:
            return []
        return asyncio.run(self._all(requests))

    async def _all(self, requests: list[list[dict[str, str]]]) -> list[Verdict]:
        import httpx

        limit = asyncio.Semaphore(self.settings.concurrency)
        async with httpx.AsyncClient(
            base_url=self.settings.base_url.rstrip("/"),
            headers=self._headers,
            timeout=httpx.Timeout(self.settings.timeout_s),
        ) as client:

            async def one(messages: list[dict[str, str]]) -> Verdict:
                async with limit:
                    return await self._one(client, messages)

            return list(await asyncio.gather(*(one(m) for m in requests)))

    async def _one(self, client, messages: list[dict[str, str]]) -> Verdict:
        import httpx

        body = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
            "stream": False,
        }
        reason = "endpoint_error"
        for _ in range(self.settings.retries + 1):
            try:
                resp = await asyncio.wait_for(
                    client.post("/chat/completions", json=body), timeout=self.settings.timeout_s
                )
            except (TimeoutError, httpx.TimeoutException):
                reason = "timeout"
                continue
            except httpx.HTTPError as exc:
                reason = f"endpoint_error: {type(exc).__name__}"
                continue
            if resp.status_code >= 500:
                reason = f"endpoint_error: HTTP {resp.status_code}"
                continue
            if resp.status_code >= 400:
                return Verdict(None, reason=f"endpoint_error: HTTP {resp.status_code}", raw=resp.text[:500])
            try:
                message = resp.json()["choices"][0]["message"]
            except (ValueError, KeyError, IndexError, TypeError):
                return Verdict(None, reason="malformed_response", raw=resp.text[:500])
            if message.get("refusal"):
                return Verdict(None, reason="refusal", raw=str(message.get("refusal"))[:500])
            return parse_verdict(_text(message.get("content")))
        return Verdict(None, reason=reason)


@component("judge")
def judge(sample: Sample, ctx: RewardContext) -> Score:
    """The LLM judge's rubric score, 0–10 mapped to 0–1; None when it gave no usable verdict."""
    verdict = sample.judge
    if verdict is None:
        return Score(None, "no verdict requested")
    return Score(verdict.score, verdict.reason)

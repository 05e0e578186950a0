"""The optional LLM judge over a whole ``train rl`` episode: the ``judge`` reward component (off unless weighted).

The judge reads the episode as the eval recorded it (``eval.record.record_episode``: the messages the harness
reads back from the runner's event stream, the same record the eval's metrics come from — never the live
sandbox): the task prompt, the agent's turns and tool calls, the tool results, how the episode ended and the final
answer. It is asked through ``rewards.judge.JudgeClient`` (any OpenAI-compatible endpoint, the settings of
``rewards.JudgeSettings``) with ``EPISODE_RUBRIC``, and its reply is read by ``rewards.judge.parse_verdict``
(0–10 → 0–1). An unreachable judge or a reply without a usable verdict gives None with the reason — never 0.

The transcript is plain text for a model, not markup: what the agent wrote is passed on verbatim (nothing is
escaped); a long tool result is clipped, and when the whole is over ``context_chars`` the earliest turns are cut,
never the task or the final answer.
"""

from __future__ import annotations

import json
from typing import Any

from harnessfit.rewards import JudgeSettings
from harnessfit.rewards.judge import JudgeClient, Verdict

__all__ = ["EPISODE_RUBRIC", "episode_transcript", "episode_judge_messages", "judge_episode", "judge_client"]

EPISODE_RUBRIC = """\
You grade one whole episode of a coding agent that worked inside a terminal harness with the tools read, bash, \
edit and write. You see the task it was given, every turn it took (its text and tool calls), the results the \
harness returned, how the episode ended, and its final answer. Judge the episode as a whole: did the agent \
solve the task the way a careful engineer would, and say truthfully what it did?

Reward, in this order of importance:
1. The task is done: the change the task asks for is made, and the agent ran the validation command the task \
names and saw it pass.
2. Evidence gathering: before changing code the agent looked - it read the relevant files, ran the failing \
command, used the output it was given.
3. Correct tool use: each call fits its step (read to inspect, edit for a targeted change, write for a new file, \
bash to run programs and tests), with arguments that name real paths and exact text.
4. A truthful final answer: the agent stops with a short answer that reports what it changed and what the check \
showed - no more, no less.

Penalise:
- Speculation: claims about code, files or results the agent never looked at; declaring success without having \
run the check; inventing output.
- Wrong-tool calls: a tool that does not exist, malformed or double-encoded arguments, rewriting a whole file to \
change one line, editing through shell redirection.
- Symptom patching: deleting or weakening the test, hard-coding the expected output, catching and ignoring the \
exception, special-casing the failing input.
- Going in circles: repeating the same call without using its result, or never stopping (ended by the turn cap).

Scale: 0-2 harmful, broken or nothing useful done; 3-4 the wrong direction or the task left undone; 5-6 partly \
done, or done without verification or with an untruthful answer; 7-8 done and verified with minor waste; \
9-10 what an expert would have done.

Answer with exactly one JSON object and nothing else:
{"score": <integer 0-10>, "critique": "<one or two sentences: what was good or bad about this episode>"}"""

RESULT_CHARS = 2000  # a tool result longer than this is clipped (its head kept) in the transcript


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _agent_turn(msg: dict[str, Any]) -> str:
    parts = []
    for part in msg.get("content") or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and part.get("text"):
            parts.append(str(part["text"]))
        elif part.get("type") == "toolCall":
            args = part.get("arguments")
            shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            parts.append(f"[tool call] {part.get('name')} {shown}")
    if isinstance(msg.get("content"), str):
        parts.append(msg["content"])
    return "\n".join(parts) or "(empty turn)"


def _block(msg: dict[str, Any]) -> str | None:
    role = msg.get("role")
    if role == "assistant":
        return f"### agent\n{_agent_turn(msg)}"
    if role == "toolResult":
        text = _text(msg.get("content"))
        if len(text) > RESULT_CHARS:
            text = text[:RESULT_CHARS] + f"\n[... {len(text) - RESULT_CHARS} more characters cut ...]"
        error = ", error" if msg.get("isError") else ""
        return f"### tool result ({msg.get('toolName')}{error})\n{text or '(empty)'}"
    if role == "user":
        return f"### user\n{_text(msg.get('content'))}"
    return None  # the system prompt: the judge is told the tools instead


def _ending(facts: Any, final: str | None) -> str:
    if getattr(facts, "turn_cap_hit", False):
        return "stopped by the turn cap (the agent never stopped calling tools)"
    killed = getattr(facts, "killed", None)
    if killed:
        return f"killed by the runner ({killed})"
    return "the agent stopped with a final answer" if final else "the agent stopped without a final answer"


def _final_answer(messages: list[dict[str, Any]]) -> str | None:
    """The last agent turn's text when it ended the episode (no tool call in it), else None."""
    last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    if last is None or last.get("stopReason") == "toolUse":
        return None
    if any(isinstance(p, dict) and p.get("type") == "toolCall" for p in last.get("content") or []):
        return None
    return _text(last.get("content")).strip() or None


def episode_transcript(prompt: str, messages: list[dict[str, Any]], facts: Any, context_chars: int) -> str:
    """The episode as the judge reads it (see the module docstring)."""
    body = list(messages)
    first = next((i for i, m in enumerate(body) if m.get("role") == "user"), None)
    if first is not None and _text(body[first].get("content")).strip() == prompt.strip():
        del body[first]  # the task prompt is shown once, as the task
    blocks = [b for b in (_block(m) for m in body) if b is not None]
    turns = "\n\n".join(blocks) or "(the agent took no turn)"
    if len(turns) > context_chars:
        turns = "[... earlier turns cut ...]\n" + turns[-context_chars:]
    final = _final_answer(messages)
    return (
        f"## Task\n{prompt}\n\n## The episode\n{turns}\n\n## How it ended\n{_ending(facts, final)}\n\n"
        f"## Final answer\n{final if final is not None else '(none)'}"
    )


def episode_judge_messages(transcript: str, tools: list[str]) -> list[dict[str, str]]:
    """The judge's request: the episode rubric as system message, the tools and the transcript as the user's."""
    user = f"Tools available to the agent: {', '.join(tools) or 'none'}\n\n{transcript}"
    return [{"role": "system", "content": EPISODE_RUBRIC}, {"role": "user", "content": user}]


def judge_client(settings: dict[str, Any] | None) -> JudgeClient:
    """The client for the recipe's ``judge`` mapping (``rewards.JudgeSettings``' fields)."""
    return JudgeClient(JudgeSettings(**(settings or {})))


def judge_episode(
    client: JudgeClient, prompt: str, messages: list[dict[str, Any]], facts: Any, tools: list[str]
) -> Verdict:
    """The judge's verdict on one episode; an unreachable judge or an unusable reply is a None score with why."""
    transcript = episode_transcript(prompt, messages, facts, client.settings.context_chars)
    try:
        return client.ask_many([episode_judge_messages(transcript, tools)])[0]
    except Exception as exc:  # noqa: BLE001 - whatever the judge does, the component is unscorable, not 0
        return Verdict(None, reason=f"judge_failed: {type(exc).__name__}: {exc}"[:300])

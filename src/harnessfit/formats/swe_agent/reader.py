"""SWE-agent trajectories (``*.traj``, one JSON document per run) into one Trajectory each.

The ``history`` list is what the model saw, in OpenAI chat form (``tool_calls`` with string arguments; tool
messages carry a *list* ``tool_call_ids``); ``trajectory`` is SWE-agent's own step log and is not used.

Two eras exist. Function-calling runs are read step by step. Text-action runs (no tool calls at all: the agent
wrote its command in a fenced block inside its text, often after ``is_demo`` demonstration messages) are rejected
as a whole: the fenced commands mix SWE-agent's stateful viewer commands (``open``, ``goto``, ``edit 10:12``) with
bash, and their observations record neither the exit status nor the file contents, so no Pi call could be
rendered exactly (policy: reject, never guess).

SWE-agent sometimes reuses a tool-call id across turns; repeated ids are made unique (``id#2``…) so each result
pairs with its own call, and the rewrite is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.reading import sniff

__all__ = ["SweAgentReader"]

FORMAT = "swe_agent"
_TOP = re.compile(rb'"(trajectory|history)"\s*:\s*\[')


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


class SweAgentReader(BaseTraceReader):
    """Reads SWE-agent ``.traj`` documents (function-calling era; the text-action era is rejected with a reason)."""

    name = FORMAT

    def detect(self, path: Path) -> bool:
        try:
            head = sniff(path)
            if not head.lstrip().startswith(b"{"):
                return False
            if not _TOP.search(head):
                return False
            return path.suffix == ".traj" or any(k in head for k in (b'"environment"', b'"replay_config"', b'"action"'))
        except Exception:  # noqa: BLE001 - detect must never raise
            return False

    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        doc = self.load_document(path, sha)
        if isinstance(doc, Rejection):
            yield doc
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            yield self.reject(
                path, sha, Reason.parse_error, "document has no 'history' list",
                "pass a SWE-agent .traj file that includes the model history",
            )
            return
        history = [m for m in doc["history"] if isinstance(m, dict)]
        if not history:
            yield self.reject(path, sha, Reason.empty, "'history' is empty", "nothing to train on: drop the file")
            return
        has_calls = any(m.get("tool_calls") for m in history)
        if not has_calls:
            demos = sum(1 for m in history if m.get("is_demo"))
            yield self.reject(
                path, sha, Reason.unsupported_tool,
                f"SWE-agent text-action trajectory: actions are fenced commands inside the assistant text, no tool "
                f"calls ({len(history)} messages, {demos} demonstration messages)",
                "re-run with SWE-agent's function-calling parser, or rewrite each action as a Pi tool call by hand",
            )
            return
        steps, notes = self._steps(history)
        info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
        repo = None
        cfg = doc.get("replay_config")
        if isinstance(cfg, dict):
            env = cfg.get("env") if isinstance(cfg.get("env"), dict) else {}
            r = env.get("repo") if isinstance(env.get("repo"), dict) else {}
            repo = r.get("github_url") or r.get("repo_name")
            if isinstance(env.get("deployment"), dict) and isinstance(env["deployment"].get("image"), str):
                repo = repo if repo not in (None, "testbed") else env["deployment"]["image"]
        cwd = self._cwd(history)
        version = info.get("swe_agent_version") if isinstance(info.get("swe_agent_version"), str) else None
        yield self.trajectory(
            path, sha, key="history", steps=steps, cwd=cwd, date=None,
            repository=repo if isinstance(repo, str) else None, source_harness_version=version,
            transformations=notes,
        )

    @staticmethod
    def _cwd(history: list[dict[str, Any]]) -> str | None:
        for m in history:
            found = re.search(r"\(Current directory: ([^)\n]+)\)", _text(m.get("content")))
            if found:
                return found.group(1)
        return None

    @staticmethod
    def _steps(history: list[dict[str, Any]]) -> tuple[list[Step], list[str]]:
        steps: list[Step] = []
        seen: dict[str, int] = {}
        latest: dict[str, str] = {}
        renamed = 0
        demos = 0
        for m in history:
            if m.get("is_demo"):
                demos += 1
                continue
            role = m.get("role")
            text = _text(m.get("content"))
            if role == "system":
                steps.append(Step(role="system", text=text))
            elif role == "user":
                steps.append(Step(role="user", text=text))
            elif role == "assistant":
                calls = []
                for tc in m.get("tool_calls") or []:
                    if not isinstance(tc, dict):
                        continue
                    fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
                    raw_id = str(tc.get("id") or f"swe_call_{len(steps)}")
                    n = seen.get(raw_id, 0) + 1
                    seen[raw_id] = n
                    new_id = raw_id if n == 1 else f"{raw_id}#{n}"
                    renamed += n > 1
                    latest[raw_id] = new_id
                    calls.append(ToolCall(id=new_id, name=str(fn.get("name") or ""), arguments=fn.get("arguments")))
                steps.append(Step(role="assistant", text=text, tool_calls=calls))
            elif role == "tool":
                ids = m.get("tool_call_ids") or ([m["tool_call_id"]] if m.get("tool_call_id") else [])
                raw = str(ids[0]) if ids else ""
                step = Step(role="tool", tool_call_id=latest.get(raw, raw), text=text)
                if len(ids) > 1:
                    step.meta["extra_tool_call_ids"] = [str(i) for i in ids[1:]]
                steps.append(step)
        notes = ["swe_agent: history used (trajectory log ignored)"]
        if renamed:
            notes.append(f"swe_agent: {renamed} reused tool-call ids made unique")
        if demos:
            notes.append(f"swe_agent: {demos} demonstration messages dropped")
        return steps, notes


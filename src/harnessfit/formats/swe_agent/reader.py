"""SWE-agent trajectories into Trajectories: ``*.traj`` JSON documents and YAML demonstrations.

Layouts (SWE-agent's ``agents.py`` ``get_trajectory_data`` / ``save_trajectory`` and ``run_traj_to_demo.py``):

- a ``.traj`` JSON document: ``trajectory`` (SWE-agent's own step log, not used), ``history`` (what the model saw, in
  OpenAI chat form: ``tool_calls`` with string arguments; tool messages carry a *list* ``tool_call_ids``), ``info``,
  ``replay_config`` (a JSON string, or an object in some test files) and ``environment``;
- a RetryAgent ``.traj``: ``attempts`` (one such record per attempt) and, when an attempt was chosen, a copy of the
  best attempt's fields at the top. Each attempt is its own trajectory; the top-level copy is not read again;
- a YAML demonstration (``sweagent traj-to-demo``): ``history`` (role, content, tool_calls, tool_call_ids,
  message_type, agent) and ``replay_config``; read with ``yaml.safe_load`` as SWE-agent reads it.

Detection is by content: a JSON object whose keys are SWE-agent's (``history`` or ``attempts`` together with
``trajectory`` / ``info`` / ``replay_config`` / ``environment``), or YAML text with a top-level ``history:`` of chat
messages. History items of an agent other than the main one (``agent`` not ``main``/``primary``, e.g. a reviewer) are
left out and counted, as SWE-agent's own demo conversion leaves them out.

Two eras exist. Function-calling runs are read step by step. Text-action runs (no tool calls at all: the agent
wrote its command in a fenced block inside its text, often after ``is_demo`` demonstration messages) are rejected
as a whole: the fenced commands mix SWE-agent's stateful viewer commands (``open``, ``goto``, ``edit 10:12``) with
bash, and their observations record neither the exit status nor the file contents, so no Pi call could be
rendered exactly (policy: reject, never guess). Demonstration messages (``is_demo``) are examples shown to the model,
not the run: they are dropped, and their tool calls counted in ``Trajectory.skipped_calls`` (``demonstration``).

SWE-agent sometimes reuses a tool-call id across turns; repeated ids are made unique (``id#2``…) so each result
pairs with its own call, and the rewrite is recorded. The final ``submit`` call (SWE-agent's end of episode) is left
to the mapping.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml

from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.reading import first_json_line, max_record_bytes, sniff

__all__ = ["SweAgentReader"]

FORMAT = "swe_agent"
SWE_KEYS = frozenset({"trajectory", "info", "replay_config", "environment"})
MAIN_AGENTS = frozenset({"main", "primary"})
# json.dumps writes the first key first: a .traj too large for a detector to parse still starts like this
_FIRST_KEY = re.compile(rb'\A\s*\{\s*"(trajectory|attempts)"\s*:\s*\[')
_YAML_HISTORY = re.compile(r"^history:\s*$", re.M)
_YAML_ROLE = re.compile(r"^\s*-?\s*role:\s*(?:user|assistant|system|tool)\s*$", re.M)


def _is_swe_document(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and (isinstance(doc.get("history"), list) or isinstance(doc.get("attempts"), list))
        and bool(SWE_KEYS & set(doc))
    )


def _looks_like_yaml_demo(head: bytes) -> bool:
    text = head.decode("utf-8", "replace")
    return (
        not text.lstrip().startswith(("{", "[")) and bool(_YAML_HISTORY.search(text)) and bool(_YAML_ROLE.search(text))
    )


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
            if not head:
                return False
            if head.lstrip().startswith(b"{"):
                doc = first_json_line(path)
                return _is_swe_document(doc) if doc is not None else bool(_FIRST_KEY.match(head))
            return _looks_like_yaml_demo(head)
        except Exception:  # noqa: BLE001 - detect must never raise
            return False

    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        doc = self._load(path, sha)
        if isinstance(doc, Rejection):
            yield doc
            return
        if isinstance(doc, dict) and isinstance(doc.get("attempts"), list) and doc["attempts"]:
            for i, attempt in enumerate(doc["attempts"]):
                if not isinstance(attempt, dict):
                    yield self.reject(
                        path,
                        sha,
                        Reason.parse_error,
                        f"attempt {i} is not an object",
                        "each attempt must be a trajectory record",
                        record_id=content_id("traj", FORMAT, sha, f"attempt:{i}"),
                    )
                    continue
                yield self._one(
                    path,
                    sha,
                    attempt,
                    key=f"attempt:{i}",
                    notes=[f"swe_agent: attempt {i} of {len(doc['attempts'])} (RetryAgent)"],
                )
            return
        yield self._one(path, sha, doc, key="history", notes=[])

    def _load(self, path: Path, sha: str) -> Any:
        head = sniff(path, 4096)
        if head.lstrip().startswith((b"{", b"[")):
            return self.load_document(path, sha)
        size, limit = path.stat().st_size, max_record_bytes()
        if size > limit:
            return self.reject(
                path,
                sha,
                Reason.record_too_large,
                f"document is {size} bytes (limit {limit})",
                "split the file into smaller documents",
            )
        try:
            return yaml.load(path.read_bytes(), Loader=_YamlLoader)  # a safe loader
        except UnicodeDecodeError as bad:
            return self.reject(
                path, sha, Reason.not_utf8, f"invalid UTF-8 at byte {bad.start}", "re-encode the file as UTF-8"
            )
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            return self.reject(
                path,
                sha,
                Reason.parse_error,
                f"invalid YAML ({str(exc).splitlines()[0][:160]})",
                "fix the YAML syntax",
                line=line,
            )

    def _one(self, path: Path, sha: str, doc: Any, *, key: str, notes: list[str]) -> Trajectory | Rejection:
        rid = content_id("traj", FORMAT, sha, key)
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            return self.reject(
                path,
                sha,
                Reason.parse_error,
                "document has no 'history' list",
                "pass a SWE-agent .traj file that includes the model history",
                record_id=rid,
            )
        history = [m for m in doc["history"] if isinstance(m, dict)]
        if not history:
            return self.reject(
                path, sha, Reason.empty, "'history' is empty", "nothing to train on: drop the file", record_id=rid
            )
        has_calls = any(m.get("tool_calls") for m in history)
        if not has_calls:
            demos = sum(1 for m in history if m.get("is_demo"))
            return self.reject(
                path,
                sha,
                Reason.unsupported_tool,
                f"SWE-agent text-action trajectory: actions are fenced commands inside the assistant text, no tool "
                f"calls ({len(history)} messages, {demos} demonstration messages)",
                "re-run with SWE-agent's function-calling parser, or rewrite each action as a Pi tool call by hand",
                record_id=rid,
            )
        steps, more, skipped = self._steps(history)
        info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
        repo = None
        cfg = doc.get("replay_config")
        if isinstance(cfg, str):
            try:
                cfg = orjson.loads(cfg)
            except orjson.JSONDecodeError:
                cfg = None
        if isinstance(cfg, dict):
            env = cfg.get("env") if isinstance(cfg.get("env"), dict) else {}
            r = env.get("repo") if isinstance(env.get("repo"), dict) else {}
            repo = r.get("github_url") or r.get("repo_name")
            if isinstance(env.get("deployment"), dict) and isinstance(env["deployment"].get("image"), str):
                repo = repo if repo not in (None, "testbed") else env["deployment"]["image"]
        cwd = self._cwd(history)
        version = info.get("swe_agent_version") if isinstance(info.get("swe_agent_version"), str) else None
        traj = self.trajectory(
            path,
            sha,
            key=key,
            steps=steps,
            cwd=cwd,
            date=None,
            repository=repo if isinstance(repo, str) else None,
            source_harness_version=version,
            transformations=[*notes, *more],
        )
        traj.skipped_calls.update(skipped)
        return traj

    @staticmethod
    def _cwd(history: list[dict[str, Any]]) -> str | None:
        for m in history:
            found = re.search(r"\(Current directory: ([^)\n]+)\)", _text(m.get("content")))
            if found:
                return found.group(1)
        return None

    @staticmethod
    def _steps(history: list[dict[str, Any]]) -> tuple[list[Step], list[str], dict[str, int]]:
        steps: list[Step] = []
        seen: dict[str, int] = {}
        latest: dict[str, str] = {}
        renamed = 0
        demos = 0
        others = 0
        skipped: dict[str, int] = {}
        for m in history:
            ncalls = (
                len([tc for tc in m.get("tool_calls") or [] if isinstance(tc, dict)])
                if m.get("role") == "assistant"
                else 0
            )
            if m.get("is_demo"):
                demos += 1
                if ncalls:
                    skipped["demonstration"] = skipped.get("demonstration", 0) + ncalls
                continue
            agent = m.get("agent")
            if isinstance(agent, str) and agent not in MAIN_AGENTS:
                others += 1
                if ncalls:
                    skipped["other_agent"] = skipped.get("other_agent", 0) + ncalls
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
        if others:
            notes.append(f"swe_agent: {others} messages of other agents left out")
        return steps, notes, skipped


class _YamlLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """``yaml.safe_load``'s loader (the C one when PyYAML has it)."""

"""Capture a HarnessCard from the installed Pi CLI: drive the real binary against the scripted endpoint and read
exactly what it sends.

Three runs in one temporary folder (isolated HOME, fixed fixture files):

1. context run (no ``-nc``): two AGENTS.md files, a plain answer → the system prompt with a "# Project Context";
   continued with ``-c`` → how a text-only assistant message is replayed;
2. main run (``-nc``): scripted rounds — a text+reasoning+read round trip, bash (output, none, exit codes,
   timeout), read notes (line cap, byte cap, ``limit``, bad offset), edit and write, then the error kinds
   (missing file, non-matching edit, disabled tool, double-encoded / Claude-style / non-object / broken JSON
   arguments) and Pi's lenient repairs (legacy edit, ``edits`` as a string, truncated JSON, ``"1"`` for a number);
3. orphan run: Pi killed while a tool runs, then ``-c`` continues the session → the "No result provided" text.

Besides: ``pi --help`` (options, ``PI_*`` variables → the card's ``cli`` with the isolation flags runs use), the
installed ``package.json`` (package, ``engines.node``), and the session files of runs 1 and 2 (the ``session``
layout: header version, keys per entry type, message role and content block). Whatever a version changed shows up
in the card this way, not by assumption: 0.82.0 has no date in its prompt (``date`` is then no variable), 1.x
answers argument text that is not one JSON object with an ``invalid_arguments`` text instead of a schema
validation error, and so on (``harnessfit harness diff``).

Every learned template is checked to reproduce the captured text it came from (``CaptureError`` otherwise).

A *profile* (``capture_pi(version, profile="tools")``, ``versions.PROFILES``) captures the card of Pi run with other
``--tools``: every run passes that tool list, the "tool not found" probe names a tool outside it, and the tools
profile adds a round for Pi's optional tools (grep, find, ls; they need ripgrep and fd on the PATH, which Pi does not
download under ``PI_OFFLINE``) whose texts become the ``grep_*`` and ``ls_empty`` templates.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.harness.card import ContextTemplate, HarnessCard, PromptTemplate, pi_pretty_json
from harnessfit.harness.pi.cli import (
    installed_package,
    isolation_flags,
    pi_binary,
    pi_cli,
    pi_command,
    pi_env,
    pi_package_dir,
    run_pi,
    write_pi_agent_config,
)
from harnessfit.harness.scripted import Reply, ScriptedEndpoint
from harnessfit.harness.versions import DEFAULT_PI_VERSION, PROFILES

__all__ = ["CaptureError", "CaptureProbe", "PROBES", "ROUNDS", "CaptureLog", "capture_pi", "run_probes"]

MODEL_ID = "capture"
DEFAULT_TOOLS: tuple[str, ...] = ("read", "bash", "edit", "write")
"""The tools Pi runs with when no profile is asked for (Pi's own default set)."""


class CaptureError(UserError):
    """Pi did something the capture did not expect (a failed run, a text no template reproduces)."""


@dataclass(frozen=True)
class CaptureProbe:
    """One scripted tool call: ``label`` names it, ``arguments`` is the raw text sent, ``runs`` says whether Pi is
    expected to run the tool (True) or answer with a validation/lookup error (False)."""

    label: str
    name: str
    arguments: str
    runs: bool


def _j(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


PROBES: dict[str, CaptureProbe] = {
    p.label: p
    for p in [
        CaptureProbe("read", "read", _j({"path": "hello.txt"}), True),
        CaptureProbe("bash", "bash", _j({"command": "printf 'hi\\n'"}), True),
        CaptureProbe("bash_no_output", "bash", _j({"command": "true"}), True),
        CaptureProbe("bash_exit_code", "bash", _j({"command": "echo oops; exit 3"}), True),
        CaptureProbe("bash_exit_silent", "bash", _j({"command": "exit 4"}), True),
        CaptureProbe("bash_timeout", "bash", _j({"command": "sleep 5", "timeout": 1}), True),
        CaptureProbe("read_truncated_lines", "read", _j({"path": "big.txt"}), True),
        CaptureProbe("read_more_lines", "read", _j({"path": "big.txt", "offset": 3, "limit": 4}), True),
        CaptureProbe("read_truncated_bytes", "read", _j({"path": "wide.txt"}), True),
        CaptureProbe("offset_beyond_end", "read", _j({"path": "hello.txt", "offset": 99}), True),
        CaptureProbe(
            "edit", "edit", _j({"path": "note.txt", "edits": [{"oldText": "alpha", "newText": "beta"}]}), True
        ),
        CaptureProbe("write", "write", _j({"path": "new.txt", "content": "x\ny\n"}), True),
        CaptureProbe("file_not_found", "read", _j({"path": "missing.txt"}), True),
        CaptureProbe(
            "edit_no_match", "edit", _j({"path": "note.txt", "edits": [{"oldText": "zzz", "newText": "q"}]}), True
        ),
        CaptureProbe("tool_not_found", "grep", _j({"pattern": "x"}), False),
        CaptureProbe("claude_tool_name", "Read", _j({"file_path": "hello.txt"}), False),
        CaptureProbe("double_encoded", "read", json.dumps(json.dumps({"path": "hello.txt"})), False),
        CaptureProbe(
            "claude_edit_names", "edit", _j({"file_path": "note.txt", "old_string": "beta", "new_string": "x"}), False
        ),
        CaptureProbe("not_object", "read", "[1,2]", False),
        CaptureProbe("not_json", "read", "not json", False),
        CaptureProbe("missing_required", "write", _j({"path": "a.txt"}), False),
        CaptureProbe("wrong_type", "read", _j({"path": ["hello.txt"]}), False),
        CaptureProbe("edit_empty", "edit", _j({"path": "note.txt", "edits": []}), False),
        CaptureProbe("legacy_edit", "edit", _j({"path": "note.txt", "oldText": "beta", "newText": "delta"}), True),
        CaptureProbe("coerced_number", "read", _j({"path": "hello.txt", "limit": "1"}), True),
        CaptureProbe("coerced_string", "bash", _j({"command": True}), True),
        CaptureProbe("truncated_json", "read", '{"path":"hello.txt"', True),
        CaptureProbe("ignored_property", "bash", _j({"command": "true", "cwd": "/"}), True),
        CaptureProbe(
            "edits_json_string",
            "edit",
            _j({"path": "note.txt", "edits": _j([{"oldText": "delta", "newText": "eps"}])}),
            True,
        ),
    ]
}

# Pi's optional tools (the tools profile only): single-file searches, so the order of rg's parallel walk never shows.
# No find probe: its text depends on the fd on the PATH (Debian bookworm's fd 8.6 has no --no-require-git, which
# Pi's find passes), and no source call maps to find exactly (formats/claude_code/search.py says why).
OPTIONAL_PROBES: dict[str, CaptureProbe] = {
    p.label: p
    for p in [
        CaptureProbe("grep_match", "grep", _j({"pattern": "needle", "path": "g/a.txt"}), True),
        CaptureProbe("grep_no_matches", "grep", _j({"pattern": "zzz", "path": "g"}), True),
        CaptureProbe("grep_match_limit", "grep", _j({"pattern": "needle", "path": "g/many.txt", "limit": 2}), True),
        CaptureProbe("ls", "ls", _j({"path": "g"}), True),
        CaptureProbe("ls_empty", "ls", _j({"path": "g/empty"}), True),
    ]
}

# rounds of the main run; edits of note.txt sit in different rounds so their order is fixed
ROUNDS: list[list[str]] = [
    ["read"],
    ["bash", "bash_no_output", "bash_exit_code", "bash_exit_silent", "bash_timeout"],
    ["read_truncated_lines", "read_more_lines", "read_truncated_bytes", "offset_beyond_end"],
    ["edit", "write"],
    ["file_not_found", "edit_no_match", "tool_not_found", "claude_tool_name"],
    ["double_encoded", "claude_edit_names", "not_object", "not_json", "missing_required", "wrong_type", "edit_empty"],
    ["legacy_edit", "coerced_number", "coerced_string", "truncated_json", "ignored_property"],
    ["edits_json_string"],
]


def _fixtures(cwd: Path, optional: bool = False) -> None:
    cwd.mkdir(parents=True, exist_ok=True)
    (cwd / "hello.txt").write_text("hello\nworld\n")
    (cwd / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 2101)))
    (cwd / "wide.txt").write_text("".join(f"{i:04d}" + "x" * 95 + "\n" for i in range(1000)))
    (cwd / "note.txt").write_text("alpha\n")
    if optional:  # what the optional tools' probes search and list
        (cwd / "g" / "empty").mkdir(parents=True, exist_ok=True)
        (cwd / "g" / "a.txt").write_text("alpha\nneedle one\n")
        (cwd / "g" / "many.txt").write_text("needle 1\nneedle 2\nneedle 3\n")
        (cwd / "g" / "README.md").write_text("# g\n")


def _tool_not_found(tools: tuple[str, ...]) -> CaptureProbe:
    """The "tool not found" probe names a tool Pi has but does not run in this profile (grep, by default), else a
    tool Pi does not have."""
    name = next(t for t in ("grep", "glob") if t not in tools)
    return CaptureProbe("tool_not_found", name, _j({"pattern": "x"}), False)


@dataclass
class CaptureLog:
    """Raw material of a main run: request bodies, tool-result text per probe label, and Pi's events."""

    requests: list[dict[str, Any]]
    results: dict[str, str] = field(default_factory=dict)
    wire_calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    cwd: Path = Path()
    session_files: list[Path] = field(default_factory=list)


def run_probes(
    version: str,
    root: Path,
    rounds: list[list[CaptureProbe]],
    *,
    first_text: str | None = "Let me look.",
    first_reasoning: str | None = "The user wants the file.",
    tools: tuple[str, ...] = DEFAULT_TOOLS,
) -> CaptureLog:
    """Run Pi (``-nc``, ``--tools tools``) in ``root/work`` through ``rounds`` of probes (one scripted reply each) and
    collect the tool-result text Pi sent back for every probe label."""
    cwd = root / "work"
    home = root / "home-probes"
    _fixtures(cwd, optional=any(t not in DEFAULT_TOOLS for t in tools))
    script: list[Reply] = []
    ids: dict[str, str] = {}
    for r, labels in enumerate(rounds):
        calls = []
        for k, probe in enumerate(labels):
            calls.append((probe.name, probe.arguments))
            ids[probe.label] = f"call_{r + 1:03d}_{k}"
        if r == 0:
            script.append(Reply(text=first_text, reasoning=first_reasoning, tool_calls=calls))
        else:
            script.append(Reply(tool_calls=calls))
    script.append(Reply(text="Done."))
    with ScriptedEndpoint(script, model_id=MODEL_ID) as ep:
        write_pi_agent_config(home / ".pi" / "agent", ep.base_url, MODEL_ID)
        sessions = root / "sessions-probes"
        run = run_pi(
            pi_command(version, MODEL_ID, "Look at the files.", session_dir=sessions, tools=tools),
            cwd=cwd,
            env=pi_env(home),
            timeout=180,
        )
        requests = list(ep.requests)
    if run.stop_reason() != "stop" or len(requests) != len(script):
        raise CaptureError(
            f"Pi run ended with stopReason={run.stop_reason()!r} after {len(requests)} of {len(script)} requests "
            f"(exit {run.returncode}): {run.stderr.strip()[:300]}"
        )
    log = CaptureLog(requests=requests, events=run.events, cwd=cwd, session_files=sorted(sessions.glob("*.jsonl")))
    by_id: dict[str, str] = {}
    calls_by_id: dict[str, dict[str, Any]] = {}
    for msg in requests[-1]["messages"]:
        if msg.get("role") == "tool":
            by_id[msg["tool_call_id"]] = msg["content"]
        for tc in msg.get("tool_calls") or []:
            calls_by_id[tc["id"]] = tc
    for label, cid in ids.items():
        log.results[label] = by_id.get(cid, "")
        log.wire_calls[label] = calls_by_id.get(cid, {})
    return log


# -- templating helpers --------------------------------------------------------------------------------------


def _esc(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _templ(text: str, values: list[tuple[str, str]], prefix: tuple[str, str] | None = None) -> str:
    """Turn a captured text into a ``str.format`` template: ``prefix`` (value, name) must start the text; each
    (value, name) elsewhere is replaced where it stands alone (not inside a longer word or number)."""
    head = ""
    if prefix is not None:
        value, name = prefix
        if not text.startswith(value):
            raise CaptureError(f"captured text does not start with the expected {name}: {text[:120]!r}")
        head, text = "{" + name + "}", text[len(value) :]
    out = _esc(text)
    for value, name in values:
        pattern = r"(?<![0-9A-Za-z_.])" + re.escape(_esc(value)) + r"(?![0-9A-Za-z_])"
        out = re.sub(pattern, "{" + name + "}", out)
    return head + out


def _split_vars(text: str, values: dict[str, str]) -> list[dict[str, str]]:
    """Split a prompt into fixed texts and variables, matching the longest values first."""
    parts: list[dict[str, str]] = [{"text": text}]
    for name, value in sorted(values.items(), key=lambda kv: -len(kv[1])):
        if not value:
            continue
        new: list[dict[str, str]] = []
        for part in parts:
            if "text" not in part:
                new.append(part)
                continue
            pieces = part["text"].split(value)
            for i, piece in enumerate(pieces):
                if i:
                    new.append({"var": name})
                if piece:
                    new.append({"text": piece})
        parts = new
    return parts


# -- the capture ---------------------------------------------------------------------------------------------


def _context_run(
    version: str, root: Path, cwd: Path, tools: tuple[str, ...] = DEFAULT_TOOLS
) -> tuple[dict[str, Any], list[tuple[str, str]], dict[str, Any]]:
    """A plain answer with two context files on, then ``-c`` continues it: the first request (prompt with a
    "# Project Context") and the replayed text-only assistant message."""
    home = root / "home-context"
    agent = home / ".pi" / "agent"
    sessions = root / "sessions-context"
    with ScriptedEndpoint([Reply(text="Hello."), Reply(text="Again.")], model_id=MODEL_ID) as ep:
        write_pi_agent_config(agent, ep.base_url, MODEL_ID)
        files = [
            (agent / "AGENTS.md", "Global rule: be brief.\n"),
            (cwd / "AGENTS.md", "Project rule {x}: use tabs.\nTest.\n"),
        ]
        for path, content in files:
            path.write_text(content)
        try:
            run = run_pi(
                pi_command(version, MODEL_ID, "Hi.", context_files=True, session_dir=sessions, tools=tools),
                cwd=cwd,
                env=pi_env(home),
                timeout=120,
            )
            again = run_pi(
                pi_command(
                    version, MODEL_ID, "More.", context_files=True, session_dir=sessions, extra_args=["-c"], tools=tools
                ),
                cwd=cwd,
                env=pi_env(home),
                timeout=120,
            )
        finally:
            (cwd / "AGENTS.md").unlink()
        if run.stop_reason() != "stop" or again.stop_reason() != "stop" or len(ep.requests) != 2:
            raise CaptureError(f"Pi context run failed (exit {run.returncode}): {run.stderr.strip()[:300]}")
        replayed = next(m for m in ep.requests[1]["messages"] if m.get("role") == "assistant")
        return ep.requests[0], [(str(p), c) for p, c in files], replayed


def _orphan_run(version: str, root: Path, tools: tuple[str, ...] = DEFAULT_TOOLS) -> str:
    """Kill Pi while a tool runs, continue the session: the replayed result of the orphaned call."""
    cwd = root / "orphan"
    cwd.mkdir()
    home = root / "home-orphan"
    sessions = root / "sessions-orphan"
    script = [Reply(tool_calls=[("bash", _j({"command": "sleep 60"}))]), Reply(text="Ok.")]
    with ScriptedEndpoint(script, model_id=MODEL_ID) as ep:
        write_pi_agent_config(home / ".pi" / "agent", ep.base_url, MODEL_ID)
        proc = subprocess.Popen(
            pi_command(version, MODEL_ID, "Wait.", session_dir=sessions, tools=tools),
            cwd=cwd,
            env=pi_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            assert proc.stdout is not None
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line or b'"tool_execution_start"' in line:
                    break
            time.sleep(0.3)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        run_pi(
            pi_command(version, MODEL_ID, "Go on.", session_dir=sessions, extra_args=["-c"], tools=tools),
            cwd=cwd,
            env=pi_env(home),
            timeout=120,
        )
        if len(ep.requests) < 2:
            raise CaptureError("Pi did not continue the killed session")
        for msg in ep.requests[-1]["messages"]:
            if msg.get("role") == "tool":
                return msg["content"]
    raise CaptureError("the continued session has no tool result for the orphaned call")


@dataclass
class _Learned:
    """The result and error templates learned so far, with the values each self-check must reproduce."""

    res: dict[str, str]  # the probes' result texts, by label
    results: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    checks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def learn(
        self,
        into: dict[str, str],
        key: str,
        label: str,
        values: dict[str, Any],
        prefix: str | None = None,
        literal: bool = False,
    ) -> None:
        text = self.res[label]
        if literal:
            into[key] = _esc(text)
        else:
            pairs = [(str(v), k) for k, v in values.items() if k != prefix]
            pre = (str(values[prefix]), prefix) if prefix else None
            into[key] = _templ(text, pairs, pre)
        self.checks.append((label, {"key": key, **values}))


def _learn_tool_texts(out: _Learned, log: CaptureLog) -> None:
    """The results and errors of the tools' own runs (read, bash, edit, write; grep and ls in the tools profile)."""
    res, results, errors, learn = out.res, out.results, out.errors, out.learn
    hello = "hello\nworld\n"
    big_lines = [f"line {i}" for i in range(1, 2101)] + [""]
    learn(results, "read", "read", {"content": hello}, prefix="content")
    learn(
        results,
        "read_more_lines",
        "read_more_lines",
        {"content": "\n".join(big_lines[2:6]), "remaining": 2101 - 6, "next_offset": 7},
        prefix="content",
    )
    learn(
        results,
        "read_truncated_lines",
        "read_truncated_lines",
        {"content": "\n".join(big_lines[:2000]), "start": 1, "end": 2000, "total": 2101, "next_offset": 2001},
        prefix="content",
    )
    wide = res["read_truncated_bytes"]
    shown = wide.split("\n\n[", 1)[0]
    n = shown.count("\n") + 1
    learn(
        results,
        "read_truncated_bytes",
        "read_truncated_bytes",
        {"content": shown, "start": 1, "end": n, "total": 1001, "next_offset": n + 1},
        prefix="content",
    )
    learn(results, "bash", "bash", {"output": "hi\n"}, prefix="output")
    learn(results, "bash_no_output", "bash_no_output", {}, literal=True)
    learn(results, "bash_exit_code", "bash_exit_code", {"output": "oops\n", "code": 3}, prefix="output")
    out.checks.append(("bash_exit_silent", {"key": "bash_exit_code", "output": res["bash_no_output"], "code": 4}))
    learn(results, "bash_timeout", "bash_timeout", {"seconds": 1})
    learn(results, "edit", "edit", {"count": 1, "path": "note.txt"})
    learn(results, "write", "write", {"bytes": 4, "path": "new.txt"})
    learn(errors, "file_not_found", "file_not_found", {"abs_path": str(log.cwd / "missing.txt")})
    learn(errors, "offset_beyond_end", "offset_beyond_end", {"offset": 99, "total": 3})
    learn(errors, "tool_not_found", "tool_not_found", {"name": log.wire_calls["tool_not_found"]["function"]["name"]})
    out.checks.append(("claude_tool_name", {"key": "tool_not_found", "name": "Read"}))
    learn(errors, "edit_no_match", "edit_no_match", {"path": "note.txt"})
    learn(errors, "edit_empty", "edit_empty", {}, literal=True)
    if "grep_match" in res:  # the tools profile: Pi's grep and ls (find's fd output order is its own walk's)
        learn(results, "grep_match", "grep_match", {"path": "a.txt", "line": 2, "text": "needle one"})
        learn(results, "grep_no_matches", "grep_no_matches", {}, literal=True)
        shown = res["grep_match_limit"].split("\n\n[", 1)[0]
        learn(
            results, "grep_match_limit", "grep_match_limit", {"output": shown, "limit": 2, "more": 4}, prefix="output"
        )
        learn(results, "ls_empty", "ls_empty", {}, literal=True)


def _problem_lines(body: str) -> list[list[str]]:
    return [ln[4:].split(": ", 1) for ln in body.split("\n") if ln.startswith("  - ")]


def _parsed_args(log: CaptureLog, label: str) -> Any:
    return json.loads(log.wire_calls[label]["function"]["arguments"])


def _learn_validation(out: _Learned, log: CaptureLog) -> list[str]:
    """Schema validation failures: a header line, problem lines ("  - path: message"), then the received arguments
    as parsed (pretty JSON); learned from the first probe that got one (all of them up to 0.82; 1.x answers
    arguments that are not a JSON object with the "invalid arguments" text instead). Returns the probes that got
    one."""
    res = out.res
    schema_labels = [
        lb
        for lb in _VALIDATION_LABELS
        if _problem_lines(res[lb]) and res[lb].endswith(pi_pretty_json(_parsed_args(log, lb)))
    ]
    if not schema_labels:
        raise CaptureError(f"no probe got a schema validation text: {res['wrong_type'][:200]!r}")
    label = schema_labels[0]
    text, name = res[label], PROBES[label].name
    head = text[: -len(pi_pretty_json(_parsed_args(log, label)))]
    lines = head.split("\n")
    problem_idx = [i for i, ln in enumerate(lines) if ln.startswith("  - ")]
    first, last = problem_idx[0], problem_idx[-1]
    header = "\n".join(lines[:first]) + "\n"
    trailer = "\n" + "\n".join(lines[last + 1 :])
    out.errors["validation_failed"] = _templ(header, [(name, "name")]) + "{problems}" + _esc(trailer) + "{arguments}"
    out.errors["validation_problem"] = _esc("  - ") + "{path}" + _esc(": ") + "{message}"
    for lb in schema_labels:
        out.checks.append(
            (
                lb,
                {
                    "key": "validation",
                    "name": PROBES[lb].name,
                    "problems": _problem_lines(res[lb]),
                    "arguments": _parsed_args(log, lb),
                },
            )
        )
    return schema_labels


def _learn_unparsed(out: _Learned, schema_labels: list[str]) -> None:
    """Arguments Pi could not parse into an object (1.x): "<header>{reason}<separator>{raw text as sent}"."""
    res = out.res
    raw_labels = [
        lb
        for lb in ("double_encoded", "not_object", "not_json", "truncated_json")
        if lb not in schema_labels
        and res[lb].endswith(PROBES[lb].arguments)
        and not _problem_lines(res[lb])
        and _ran(res[lb]) is False
    ]
    if len(raw_labels) < 2:
        return
    heads = {lb: res[lb][: -len(PROBES[lb].arguments)] for lb in raw_labels}
    prefix = os.path.commonprefix(list(heads.values()))  # noqa: RUF071 - texts, compared by character
    split = {lb: h[len(prefix) :].rsplit("\n\n", 1) for lb, h in heads.items()}
    seps = {"\n\n" + parts[1] for parts in split.values() if len(parts) == 2}
    if len(seps) != 1 or any(len(parts) != 2 for parts in split.values()):
        raise CaptureError(f"unparsed-arguments texts do not share one layout: {list(heads.values())!r}")
    names = {PROBES[lb].name for lb in raw_labels}
    if len(names) != 1:
        raise CaptureError("unparsed-arguments probes must name one tool")
    out.errors["invalid_arguments"] = _templ(prefix, [(names.pop(), "name")]) + "{reason}" + _esc(seps.pop()) + "{raw}"
    if "double_encoded" in raw_labels:
        out.errors["arguments_not_object"] = _esc(split["double_encoded"][0])
    for lb in raw_labels:
        out.checks.append(
            (
                lb,
                {
                    "key": "invalid_arguments",
                    "name": PROBES[lb].name,
                    "reason": split[lb][0],
                    "raw": PROBES[lb].arguments,
                },
            )
        )


def _learn_results(log: CaptureLog) -> tuple[dict[str, str], dict[str, str], list[tuple[str, dict[str, Any]]]]:
    """Result and error templates from the probes' texts, with the values each check must reproduce."""
    out = _Learned(log.results)
    _learn_tool_texts(out, log)
    _learn_unparsed(out, _learn_validation(out, log))
    return out.results, out.errors, out.checks


_VALIDATION_LABELS = ("double_encoded", "wrong_type", "missing_required", "claude_edit_names", "not_object", "not_json")


def _serialisation(log: CaptureLog) -> dict[str, Any]:
    reqs = log.requests
    second = reqs[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    tool_msg = next(m for m in second if m["role"] == "tool")
    last = reqs[-1]["messages"]
    no_text = next(
        m
        for m in last
        if m["role"] == "assistant" and m.get("tool_calls") and m is not assistant and m.get("content") is None
    )
    user = next(m for m in reqs[0]["messages"] if m["role"] == "user")
    # every replayed argument text equals the compact JSON of the arguments as Pi parsed them
    reserialised = all(
        tc["function"]["arguments"]
        == json.dumps(json.loads(tc["function"]["arguments"]), separators=(",", ":"), ensure_ascii=False)
        for m in last
        for tc in (m.get("tool_calls") or [])
    )
    return {
        "system_role": reqs[0]["messages"][0]["role"],
        "user_message_keys": list(user),
        "user_content": "parts" if isinstance(user["content"], list) else "string",
        "user_part_keys": list(user["content"][0]) if isinstance(user["content"], list) else [],
        "assistant_message_keys": list(assistant),
        "assistant_message_keys_no_reasoning": list(no_text),
        "assistant_content_without_text": no_text.get("content"),
        "reasoning_field": "reasoning_content" if "reasoning_content" in assistant else None,
        "tool_call_keys": list(assistant["tool_calls"][0]),
        "tool_call_function_keys": list(assistant["tool_calls"][0]["function"]),
        "tool_call_arguments": "compact_json_of_parsed" if reserialised else "verbatim",
        "tool_message_keys": list(tool_msg),
        "tool_results_order": "tool_call_order",
        "received_arguments_format": "JSON.stringify(arguments, null, 2)",
    }


def _keys_union(into: dict[str, list[str]], kind: str, obj: dict[str, Any]) -> None:
    keys = into.setdefault(kind, [])
    for key in obj:
        if key not in keys:
            keys.append(key)


def _session_format(files: list[Path]) -> dict[str, Any]:
    """The layout of the session files Pi wrote: header version and keys, keys per entry type, per message role and
    per content-block type (names sorted: which keys appear, not their order or values)."""
    header: dict[str, Any] | None = None
    entries: dict[str, list[str]] = {}
    roles: dict[str, list[str]] = {}
    blocks: dict[str, list[str]] = {}
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            if entry.get("type") == "session":
                if header is None:
                    header = entry
                continue
            _keys_union(entries, str(entry.get("type")), entry)
            msg = entry.get("message")
            if isinstance(msg, dict):
                _keys_union(roles, str(msg.get("role")), msg)
                for block in msg.get("content") if isinstance(msg.get("content"), list) else []:
                    if isinstance(block, dict):
                        _keys_union(blocks, str(block.get("type")), block)
    if header is None:
        raise CaptureError("Pi wrote no session file with a header line")

    def tidy(d: dict[str, list[str]]) -> dict[str, list[str]]:
        return {k: sorted(v) for k, v in sorted(d.items())}

    return {
        "version": header.get("version"),
        "header_keys": sorted(header),
        "entries": tidy(entries),
        "message_roles": tidy(roles),
        "content_blocks": tidy(blocks),
    }


def _cli_section(version: str, log: CaptureLog) -> dict[str, Any]:
    cli = pi_cli(version)
    env = pi_env(Path("/"))
    return {
        "options": list(cli.options),
        "env": list(cli.env),
        "isolation_flags": isolation_flags(cli.options),
        "run_env": {k: env[k] for k in sorted(env) if k.startswith("PI_") and k != "PI_CODING_AGENT_DIR"},
        "json_events": sorted({str(e.get("type")) for e in log.events}),
    }


def _engines_node(version: str) -> str | None:
    meta = json.loads((pi_package_dir(version) / "package.json").read_text(encoding="utf-8"))
    node = (meta.get("engines") or {}).get("node")
    return str(node) if node else None


def _capture_plan(profile: str | None) -> tuple[tuple[str, ...], list[list[CaptureProbe]]]:
    """The tools and the probe rounds of a capture with ``profile``."""
    if profile is not None and profile not in PROFILES:
        raise UserError(f"unknown harness profile {profile!r} (known: {', '.join(PROFILES)})")
    tools = PROFILES[profile] if profile else DEFAULT_TOOLS
    probes = {**PROBES, "tool_not_found": _tool_not_found(tools)}
    rounds = [[probes[label] for label in labels] for labels in ROUNDS]
    if profile == "tools":
        missing = [b for b, alts in (("rg", ("rg",)), ("fd", ("fd", "fdfind"))) if not any(map(shutil.which, alts))]
        if missing:  # Pi looks for rg, and for fd or fdfind, on the PATH; offline it downloads neither
            raise UserError(
                f"the tools profile needs {' and '.join(missing)} on the PATH (Debian: apt-get install "
                "ripgrep fd-find; `make setup` does it when run as root)"
            )
        rounds.append(list(OPTIONAL_PROBES.values()))
    return tools, rounds


def _context_template(plain: str, with_ctx: str, ctx_files: list[tuple[str, str]]) -> tuple[ContextTemplate, str, str]:
    """The context section's template, and the prompt text before and after the section."""
    # the context section is what the context run's prompt has between the common prefix and suffix
    pre = os.path.commonprefix([plain, with_ctx])  # noqa: RUF071 - texts, compared by character
    pre = pre[: pre.rfind("\n") + 1]  # the section starts on a line of its own (1.x: "<project_context>" vs "<cwd>")
    suf = os.path.commonprefix([plain[::-1], with_ctx[::-1]])[::-1]  # noqa: RUF071 - texts, compared by character
    if len(pre) + len(suf) > len(plain):
        suf = suf[len(pre) + len(suf) - len(plain) :]
    section = with_ctx[len(pre) : len(with_ctx) - len(suf)]
    (p1, c1), (p2, c2) = ctx_files
    i1, j1 = section.index(p1), section.index(c1)
    i2, j2 = section.index(p2), section.index(c2)
    context = ContextTemplate(
        header=section[:i1],
        file="{path}" + section[i1 + len(p1) : j1] + "{content}",
        separator=section[j1 + len(c1) : i2],
        footer=section[j2 + len(c2) :],
    )
    if section[i2 + len(p2) : j2] != section[i1 + len(p1) : j1]:
        raise CaptureError("context files are not rendered the same way each")
    return context, pre, suf


def _prompt_template(
    plain: str, with_ctx: str, ctx_files: list[tuple[str, str]], days: list[str], install_dir: str, cwd: Path
) -> tuple[PromptTemplate, str | None]:
    """The system-prompt template learned from the prompts without and with context files, and the date in it."""
    # the date is a variable only where Pi puts one in the prompt (0.82.0 dropped its "Current date:" line)
    m = re.search(r"Current date: (\d{4}-\d{2}-\d{2})", plain)
    date = m.group(1) if m else next((d for d in days if d in plain), None)
    context, pre, suf = _context_template(plain, with_ctx, ctx_files)
    values = {"install_dir": install_dir, "date": date or "", "cwd": str(cwd)}
    parts = _split_vars(pre, values) + [{"var": "context"}] + _split_vars(suf, values)
    variables = []
    for part in parts:
        if "var" in part and part["var"] not in variables:
            variables.append(part["var"])
    return PromptTemplate(parts=_merge_texts(parts), context=context, variables=variables), date


def _self_check(
    card: HarnessCard,
    log: CaptureLog,
    checks: list[tuple[str, dict[str, Any]]],
    *,
    plain: str,
    ctx_req: dict[str, Any],
    ctx_files: list[tuple[str, str]],
    date: str,
    install_dir: str,
) -> None:
    """The card must reproduce what Pi sent: both system prompts, the tools, and every probe's result text."""
    cwd, with_ctx = log.cwd, ctx_req["messages"][0]["content"]
    if card.render_system_prompt(str(cwd), date, install_dir=install_dir) != plain:
        raise CaptureError("the learned system-prompt template does not reproduce Pi's prompt (no context)")
    if card.render_system_prompt(str(cwd), date, ctx_files, install_dir=install_dir) != with_ctx:
        raise CaptureError("the learned system-prompt template does not reproduce Pi's prompt (context files)")
    if ctx_req["tools"] != log.requests[0]["tools"]:
        raise CaptureError("Pi sent different tools with context files on")
    for label, spec in checks:
        spec = dict(spec)
        key = spec.pop("key")
        if key == "validation":
            got = card.validation_failed_text(spec["name"], [tuple(p) for p in spec["problems"]], spec["arguments"])
        else:
            got = card.format_result(key, **spec)
        if got != log.results[label]:
            raise CaptureError(
                f"template {key!r} does not reproduce probe {label!r}: {got[:200]!r} != {log.results[label][:200]!r}"
            )


def _build_card(
    version: str,
    profile: str | None,
    log: CaptureLog,
    template: PromptTemplate,
    text_only: dict[str, Any],
    results: dict[str, str],
    errors: dict[str, str],
    session_files: list[Path],
    rounds: list[list[CaptureProbe]],
) -> HarnessCard:
    first = log.requests[0]
    request = {
        "keys": list(first),
        "params": {k: v for k, v in first.items() if k not in ("model", "messages", "tools")},
    }
    return HarnessCard(
        harness="pi",
        version=version,
        profile=profile,
        package=installed_package(version),
        engines_node=_engines_node(version),
        cli=_cli_section(version, log),
        request=request,
        system_prompt=template,
        tools=first["tools"],
        default_tools=[t["function"]["name"] for t in first["tools"]],
        serialisation={
            **_serialisation(log),
            "assistant_text_only_keys": list(text_only),
            "assistant_text_only_content": "string" if text_only.get("content") == "Hello." else "other",
        },
        results=results,
        errors=errors,
        session=_session_format(session_files),
        examples=[
            {
                "label": p.label,
                "name": p.name,
                "arguments": p.arguments,
                "ran": _ran(log.results[p.label]),
                "result": _normalise_example(log.results[p.label], log.cwd),
            }
            for p in (probe for round_ in rounds for probe in round_)
        ],
    )


def capture_pi(
    version: str = DEFAULT_PI_VERSION, *, profile: str | None = None, progress: Callable[[str], None] | None = None
) -> HarnessCard:
    """Drive the installed Pi ``version`` and build its HarnessCard (needs ``harnessfit harness install pi``);
    ``profile`` (``versions.PROFILES``) captures the card of Pi run with that profile's tools."""
    pi_binary(version)
    tools, rounds = _capture_plan(profile)
    install_dir = str(pi_package_dir(version))
    say = progress or (lambda _msg: None)
    with tempfile.TemporaryDirectory(prefix="harnessfit-capture-") as tmp:
        root = Path(tmp).resolve()
        days = [time.strftime("%Y-%m-%d")]
        say("main run: scripted tool calls")
        log = run_probes(version, root, rounds, tools=tools)
        cwd = log.cwd
        say("context run: AGENTS.md files")
        ctx_req, ctx_files, text_only = _context_run(version, root, cwd, tools)
        say("orphan run: killed tool call")
        days.append(time.strftime("%Y-%m-%d"))
        no_result = _orphan_run(version, root, tools)

        plain = log.requests[0]["messages"][0]["content"]
        template, date = _prompt_template(plain, ctx_req["messages"][0]["content"], ctx_files, days, install_dir, cwd)
        results, errors, checks = _learn_results(log)
        errors["no_result"] = _esc(no_result)
        card = _build_card(
            version,
            profile,
            log,
            template,
            text_only,
            results,
            errors,
            log.session_files + sorted((root / "sessions-context").glob("*.jsonl")),
            rounds,
        )
        # any date renders the same prompt when there is no date variable
        _self_check(
            card,
            log,
            checks,
            plain=plain,
            ctx_req=ctx_req,
            ctx_files=ctx_files,
            date=date or days[0],
            install_dir=install_dir,
        )
        return card


def _ran(text: str) -> bool:
    """Whether Pi executed the tool (False: it answered with a validation or tool-lookup error)."""
    return not (
        text.startswith(("Validation failed for tool", "Edit tool input is invalid", "Invalid arguments for tool"))
        or re.fullmatch(r"Tool \S+ not found", text) is not None
    )


def _normalise_example(text: str, cwd: Path) -> str:
    """Example texts without the capture's temporary folder (so cards compare across captures)."""
    text = text.replace(str(cwd), "{cwd}")
    if len(text) > 600:
        text = text[:300] + f"…[{len(text) - 600} characters]…" + text[-300:]
    return text


def _merge_texts(parts: list[dict[str, str]]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for part in parts:
        if "text" in part and out and "text" in out[-1]:
            out[-1] = {"text": out[-1]["text"] + part["text"]}
        else:
            out.append(part)
    return out

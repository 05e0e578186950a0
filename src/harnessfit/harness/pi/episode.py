"""One Pi episode as the eval runner starts and reads it (``PiHarness.launch`` / ``transcript``).

Start: HOME gets a Pi config pointing at the endpoint (retries and compaction off); Pi runs in json mode with
``PI_OFFLINE=1``, ``--session-dir`` and a tiny extension (``-e``) that aborts the agent after N model turns (Pi has
no max-turns flag) and says so on stderr (``TURN_CAP_MARKER``). ``message_update``/``tool_execution_update`` events
(each repeats the whole partial message) are not stored.

Read: the messages of Pi's event stream (``message_end``), captured from Pi's stdout, which the agent's tools do not
write. The session file lives in a folder the agent can write (Pi keeps it there and hands its path to every bash call
as ``PI_SESSION_FILE``), so it is only read when the stream has no message at all (a Pi killed before it printed
one), and otherwise cross-checked (``session_mismatch``).
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import orjson

from harnessfit.core.jsonio import dumps_compact_str, read_jsonl
from harnessfit.harness.base import TURN_CAP_MARKER, EpisodeSetup, Launch, Transcript
from harnessfit.harness.pi.cli import pi_command, pi_env, write_pi_agent_config
from harnessfit.paths import harness_dir

__all__ = [
    "DEFAULT_TOOLS",
    "SKIP_EVENTS",
    "launch",
    "turn_cap_extension",
    "install_root",
    "session_file",
    "started",
    "transcript",
    "episode_messages",
    "session_mismatch",
]

DEFAULT_TOOLS = ("read", "bash", "edit", "write")
SKIP_EVENTS = (b'{"type":"message_update"', b'{"type":"tool_execution_update"')


def turn_cap_extension(max_turns: int) -> str:
    """A Pi extension that aborts the agent after its ``max_turns``-th model turn when that turn called tools (Pi
    would ask the model again); a last turn that only answers ends the run by itself and is no cap hit. ``turn_end``
    carries the turn's ``toolResults`` in every targeted version (``pi-agent-core/dist/agent-loop.js``: empty when the
    message had no tool call)."""
    return (
        "// written by harnessfit eval: abort the agent once it has used its model turns\n"
        "export default function (pi) {\n"
        '  pi.on("turn_end", (event, ctx) => {\n'
        f"    if (event.turnIndex + 1 >= {max_turns} && (event.toolResults || []).length > 0) {{\n"
        f'      console.error("{TURN_CAP_MARKER}");\n'
        "      ctx.abort();\n"
        "    }\n"
        "  });\n"
        "}\n"
    )


def install_root(binary: Path, version: str) -> Path:
    """The folder holding the ``node_modules`` of the Pi binary that runs (bound read-only: whichever version)."""
    return next((p.parent for p in binary.parents if p.name == "node_modules"), harness_dir("pi", version))


def launch(version: str, setup: EpisodeSetup) -> Launch:
    """Pi's config under ``setup.home``, the turn-cap extension under ``setup.runner``, and the json-mode command."""
    write_pi_agent_config(
        setup.home / ".pi" / "agent",
        setup.base_url,
        setup.model_id,
        eval_settings=True,
        **({"context_window": setup.context_window} if setup.context_window else {}),
        **({"api_key": setup.api_key} if setup.api_key else {}),
    )
    (setup.runner / "turn_cap.js").write_text(turn_cap_extension(setup.max_turns), encoding="utf-8")
    cmd = pi_command(
        version,
        setup.model_id,
        setup.prompt,
        session_dir=setup.session_dir,
        tools=setup.tools or DEFAULT_TOOLS,
        extra_args=["-e", f"{setup.runner_inside}/turn_cap.js"],
    )
    env = pi_env(Path(setup.home_inside), Path(setup.home_inside) / ".pi" / "agent")
    return Launch(cmd, env, [install_root(Path(cmd[0]), version)], SKIP_EVENTS)


def session_file(session_dir: Path) -> Path | None:
    """The newest regular ``*.jsonl`` in the session folder (a link the agent planted there is not Pi's file)."""
    found = []
    for path in session_dir.iterdir():
        try:
            st = path.lstat()
        except OSError:
            continue
        if path.suffix == ".jsonl" and stat.S_ISREG(st.st_mode):
            found.append(path)
    return max(found) if found else None


def started(stdout_file: Path) -> str | None:
    """Pi's json mode prints a ``session`` event first; without it the harness did not start."""
    try:
        with stdout_file.open("rb") as fh:
            first = fh.readline()
        kind = orjson.loads(first).get("type") if first.strip() else None
    except (OSError, orjson.JSONDecodeError, AttributeError):
        kind = None
    return None if kind == "session" else "pi printed no json event stream (harness did not start)"


def _read(path: Path | None) -> list[dict[str, Any]]:
    if path is None:
        return []
    return list(read_jsonl(path, bad_lines="skip", objects_only=True, missing_ok=True))


def _session_messages(session: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["message"] for e in session if e.get("type") == "message" and isinstance(e.get("message"), dict)]


def _event_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["message"] for e in events if e.get("type") == "message_end" and isinstance(e.get("message"), dict)]


def episode_messages(session: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages in order, from Pi's event stream, else (no message there at all) from the session file."""
    return _event_messages(events) or _session_messages(session)


def _fingerprint(msg: dict[str, Any]) -> tuple:
    calls = tuple(
        (p.get("id"), p.get("name"), dumps_compact_str(p.get("arguments")))
        for p in msg.get("content") or []
        if isinstance(p, dict) and p.get("type") == "toolCall"
    )
    return msg.get("role"), calls, msg.get("toolCallId")


def session_mismatch(session: list[dict[str, Any]], events: list[dict[str, Any]], *, killed: bool) -> str | None:
    """Where the session file disagrees with Pi's event stream (roles, tool calls and their arguments, result ids),
    or None. A Pi stopped by a cap may have written one side further than the other: then one must be a prefix of
    the other. A file that was never written (no session) is nothing to compare."""
    a = [_fingerprint(m) for m in _session_messages(session)]
    b = [_fingerprint(m) for m in _event_messages(events)]
    if not a or not b or a == b:
        return None
    n = min(len(a), len(b))
    if killed and a[:n] == b[:n]:
        return None
    at = next((i for i in range(n) if a[i] != b[i]), n)
    return f"message {at}: the session file has {len(a)} messages, Pi's event stream {len(b)}"


def transcript(stdout_file: Path, session: Path | None, *, killed: bool) -> Transcript:
    events, entries = _read(stdout_file), _read(session)
    source = "session file" if any(e.get("type") == "message" for e in entries) else "event stream"
    return Transcript(episode_messages(entries, events), source, session_mismatch(entries, events, killed=killed))

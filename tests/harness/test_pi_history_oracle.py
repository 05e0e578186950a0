"""The oracle for Pi's history rules: the real Pi CLI decides what a history turns into, harnessfit must agree.

1. **Resumed cuts.** Every Pi session in ``../shared/traces`` (and ``../shared/traces-extra`` when it is there) is
   cut after several entries (``cut_points``: evenly spread, plus the entries where a rule acts: an aborted or error
   turn, a call before its result, a compaction, a custom message, a bash execution, the end). Pi resumes each cut
   (RPC ``switch_session``, then one prompt; one Pi process and one scripted endpoint for all cuts of a version) and
   the request it sends must equal, message for message, the context harnessfit builds from the cut (the cut
   header's ``cwd`` is the run's folder; the date is today's, as Pi's prompt has it). One cut per version is also
   resumed with ``pi --session FILE`` to show that the CLI flag and the RPC command load a session the same way.
2. **Compaction recorded by Pi.** Pi runs several prompts against a small ``contextWindow`` with auto-compaction
   on, so it compacts (split turns, repeated compactions whose kept range holds the previous one; the endpoint
   answers Pi's summarisation requests). Every request Pi sent must be a prefix of the epoch trajectory harnessfit
   reads for that time, and every label of every epoch must have as its context exactly a request Pi sent. The same
   session is then written back in the v1 layout (no ids, ``firstKeptEntryIndex``, by inverting Pi's
   ``migrateV1ToV2``) and both layouts are resumed at cuts like the real sessions.

The one difference allowed, on both sides the same way: a call Pi accepts only by repairing it (a legacy
``{path, oldText, newText}`` edit…) is compared in the form Pi executes (``convert.canonical``), because harnessfit
writes that form on purpose (see ``convert.wire``).
"""

from __future__ import annotations

import datetime
import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from harnessfit.convert.builder import build_draft
from harnessfit.convert.canonical import canonical_arguments
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import HarnessCard, load_card
from harnessfit.harness.pi import install_pi, pi_binary, pi_command, pi_env, run_flags, run_pi, write_pi_agent_config
from harnessfit.harness.scripted import Reply, ScriptedEndpoint
from harnessfit.harness.versions import PI_CARD_VERSIONS

pytestmark = [pytest.mark.pi, pytest.mark.slow]

SHARED = Path(__file__).resolve().parents[2].parent / "shared"  # beside the clone, as tests/conftest.py has it
MODEL = "m"
PROMPT = "Continue."


def pi_sessions() -> list[Path]:
    """Every Pi session file beside the clone (``traces`` must be there, ``traces-extra`` may)."""
    files = sorted((SHARED / "traces" / "pi").glob("*.jsonl"))
    assert files, f"no Pi sessions under {SHARED / 'traces' / 'pi'}"
    return files + sorted((SHARED / "traces-extra" / "pi").glob("*.jsonl"))


def entry_lines(path: Path) -> list[bytes]:
    """The file's non-blank lines split on ``\\n`` only, as Pi splits them; the first is the header."""
    return [line for line in path.read_bytes().split(b"\n") if line.strip()]


def cut_points(lines: list[bytes], spread: int = 6) -> list[int]:
    """How many lines each cut keeps: ``spread`` evenly spread cuts, the end, and a cut right after the first entry
    of each kind a history rule acts on."""
    n = len(lines)
    cuts = {max(2, round(n * (k + 1) / (spread + 1))) for k in range(spread)} | {n}
    firsts: dict[str, int] = {}
    for k, raw in enumerate(lines[1:], start=2):
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        msg = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        kinds = [entry.get("type")]
        if msg.get("role") == "assistant":
            kinds.append(f"stop:{msg.get('stopReason')}")
            if any(isinstance(b, dict) and b.get("type") == "toolCall" for b in msg.get("content") or []):
                kinds.append("call")  # the cut ends on calls whose results are not in it
        kinds.append(f"role:{msg.get('role')}")
        for kind in kinds:
            firsts.setdefault(str(kind), k)
    for kind in (
        "stop:aborted",
        "stop:error",
        "call",
        "compaction",
        "custom_message",
        "branch_summary",
        "role:bashExecution",
        "role:custom",
    ):
        if kind in firsts:
            cuts.add(firsts[kind])
            if kind == "compaction":
                cuts.add(firsts[kind] + 1)  # the first entry after the summary
    return sorted(c for c in cuts if 2 <= c <= n)


def one_entry_per_line(line: bytes) -> list[bytes]:
    """A line that holds several entries (its writer lost a newline) as one line per entry; any other line as it is.

    Pi's loader (``parseSessionEntries``) would drop such a line whole, though the agent that wrote the session had
    those entries in its context; harnessfit reads them (its JSONL reader reads several objects on a line). The
    oracle compares the history rules, so Pi is given the entries one per line."""
    text = line.decode("utf-8", errors="surrogateescape")
    decoder, out, at = json.JSONDecoder(), [], 0
    try:
        while at < len(text):
            value, end = decoder.raw_decode(text, at)
            out.append(value)
            at = end
            while at < len(text) and text[at] in " \t\r":
                at += 1
    except ValueError:
        return [line]
    return [line] if len(out) < 2 else [orjson.dumps(v) for v in out]


def write_cut(lines: list[bytes], keep: int, cwd: Path, dest: Path) -> Path:
    """The first ``keep`` lines of a session, its header's ``cwd`` set to ``cwd`` (Pi runs in the session's cwd)."""
    head = orjson.loads(lines[0])
    head["cwd"] = str(cwd)
    body = [part for line in lines[1:keep] for part in one_entry_per_line(line)]
    dest.write_bytes(b"\n".join([orjson.dumps(head), *body]) + b"\n")
    return dest


def as_pi_executes(card: HarnessCard, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with every call Pi accepts only by repair in the form Pi executes (the documented difference)."""
    out = []
    for m in messages:
        if m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                fn = tc["function"]
                try:
                    args = json.loads(fn["arguments"])
                except ValueError:
                    args = None
                if isinstance(args, dict):
                    verdict = card.validate_call(fn["name"], args)
                    warnings = [v for v in verdict if v.severity == "warning"]
                    if warnings and all(v.severity == "warning" for v in verdict):
                        fixed = canonical_arguments(card, fn["name"], args, warnings)
                        tc = {**tc, "function": {**fn, "arguments": orjson.dumps(fixed).decode()}}
                calls.append(tc)
            m = {**m, "tool_calls": calls}
        out.append(m)
    return out


def in_target_texts(card: HarnessCard, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with every Pi-authored tool-result text in Pi ``card.version``'s own words (the other documented
    difference): Pi resuming a session replays the texts an older Pi wrote, harnessfit writes what this Pi writes
    when it runs the call (``harness.pi_texts.in_target_words``)."""
    from harnessfit.harness.pi_texts import in_target_words

    calls: dict[str, tuple[str, Any]] = {}
    out = []
    for m in messages:
        for tc in m.get("tool_calls") or []:
            try:
                args = json.loads(tc["function"]["arguments"])
            except ValueError:
                args = None
            calls[tc["id"]] = (tc["function"]["name"], args)
        if m.get("role") == "tool" and isinstance(m.get("content"), str) and m.get("tool_call_id") in calls:
            name, args = calls[m["tool_call_id"]]
            text = in_target_words(card, name, m["content"], args)
            if isinstance(text, str):
                m = {**m, "content": text}
        out.append(m)
    return out


def first_difference(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> str | None:
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return (
                f"message {i} of {len(want)}:\n  harnessfit {json.dumps(a)[:600]}\n  pi         {json.dumps(b)[:600]}"
            )
    if len(got) != len(want):
        return f"{len(got)} messages, Pi sent {len(want)}"
    return None


def epochs(path: Path, *, unanswered: bool = False) -> list[Trajectory]:
    """The active branch's trajectories (one per compaction epoch, oldest first); ``unanswered``: with the epoch
    of a compaction that is the last entry (what Pi sends next)."""
    reader = PiReader(unanswered_epochs=unanswered)
    return [t for t in reader.read(path) if isinstance(t, Trajectory) and "side_branch" not in t.flags]


def context(card: HarnessCard, traj: Trajectory, day: str) -> tuple[list[dict[str, Any]], int]:
    """harnessfit's whole history for ``traj`` as Pi would send it before its next request, and ``labels_from``."""
    draft = build_draft(traj.model_copy(update={"date": day}), card, trim=False)
    return draft.messages, draft.labels_from


# -- driving Pi ----------------------------------------------------------------------------------------------


class Rpc:
    """``pi --mode rpc``: JSON commands on stdin, events on stdout (read by a thread, so every wait has a timeout)."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.asked = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(event, dict):
                self.events.put(event)
        self.events.put(None)

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(command) + b"\n")
        self.proc.stdin.flush()

    def wait(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 120) -> dict[str, Any]:
        while True:
            event = self.events.get(timeout=timeout)
            if event is None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise AssertionError(f"Pi exited: {err[-2000:]}")
            if event.get("type") == "response" and event.get("success") is False:
                raise AssertionError(f"Pi refused a command: {event}")
            if pred(event):
                return event

    def prompt(self, text: str) -> None:
        self.send({"type": "prompt", "message": text})
        self.wait(lambda e: e.get("type") == "agent_end")

    def idle(self, timeout: float = 120) -> None:
        """Wait until Pi neither streams nor compacts (a compaction runs after ``agent_end``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.asked += 1
            tag = f"state{self.asked}"
            self.send({"id": tag, "type": "get_state"})
            state = self.wait(lambda e, tag=tag: e.get("id") == tag).get("data") or {}
            if not state.get("isStreaming") and not state.get("isCompacting"):
                return
            time.sleep(0.2)
        raise AssertionError("Pi did not become idle")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def pi_rpc(
    version: str,
    root: Path,
    responder: Callable[[dict, int], Reply],
    *,
    session_dir: Path | None = None,
    settings: dict[str, Any] | None = None,
    context_window: int = 32768,
) -> Iterator[tuple[Rpc, ScriptedEndpoint]]:
    """One Pi ``version`` in RPC mode in ``root/w`` against a scripted endpoint (``settings`` replaces the eval
    settings, e.g. to turn compaction on)."""
    install_pi(version)
    cwd = root / "w"
    cwd.mkdir(parents=True, exist_ok=True)
    with ScriptedEndpoint(responder, model_id=MODEL) as ep:
        agent = root / "home" / ".pi" / "agent"
        write_pi_agent_config(agent, ep.base_url, MODEL, context_window=context_window)
        if settings is not None:
            (agent / "settings.json").write_bytes(orjson.dumps(settings))
        cmd = [
            str(pi_binary(version)),
            "--mode",
            "rpc",
            *run_flags(version),
            "-nc",
            "--model",
            f"local/{MODEL}",
            "--tools",
            "read,bash,edit,write",
        ]
        cmd += ["--session-dir", str(session_dir)] if session_dir is not None else ["--no-session"]
        rpc = Rpc(cmd, cwd, pi_env(root / "home"))
        try:
            yield rpc, ep
        finally:
            rpc.close()


def resume(version: str, root: Path, cuts: Sequence[Path]) -> list[dict[str, Any]]:
    """The request Pi sends for each cut when it resumes it and gets one prompt (copies are resumed: Pi writes to
    the session it resumes)."""
    sent = []
    with pi_rpc(version, root, lambda body, i: Reply(text="Ok.")) as (rpc, ep):
        for cut in cuts:
            copy = cut.with_suffix(".resumed.jsonl")
            copy.write_bytes(cut.read_bytes())
            before = len(ep.requests)
            rpc.send({"id": "s", "type": "switch_session", "sessionPath": str(copy)})
            try:
                rpc.wait(lambda e: e.get("type") == "response" and e.get("id") == "s")
            except AssertionError as exc:
                raise AssertionError(f"{cut.name}: {exc}") from None
            rpc.prompt(PROMPT)
            # Pi goes on after agent_end (compaction check, settling); switching then races with that work
            # (a CI run once got "Invalid array length" from switch_session), so wait until Pi says it is idle.
            rpc.idle()
            assert len(ep.requests) == before + 1, f"{cut.name}: Pi sent {len(ep.requests) - before} requests"
            sent.append(ep.requests[-1])
    return sent


def check_resumed(version: str, card: HarnessCard, cuts: list[Path], sent: list[dict[str, Any]], day: str) -> list[str]:
    problems = []
    for cut, request in zip(cuts, sent, strict=True):
        assert request["model"] == MODEL and request["messages"][-1] == {
            "role": "user",
            "content": [{"type": "text", "text": PROMPT}],
        }
        messages, _ = context(card, epochs(cut, unanswered=True)[-1], day)
        diff = first_difference(messages, in_target_texts(card, as_pi_executes(card, request["messages"][:-1])))
        if diff is not None:
            problems.append(f"{cut.name} (Pi {version}): {diff}")
    return problems


def rare_entries_session(dest: Path) -> Path:
    """A small current-layout session with the entries no real session here has: a branch summary, a custom
    message with string content, a ``custom`` role message, user bash executions (one left out of the context), an
    unknown role, a string user message, an aborted turn whose result stays, empty thinking, a call without result
    in the middle and an empty tool result (the real Pi decides what each becomes)."""

    def msg(i: int, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "message",
            "id": f"e{i}",
            "parentId": f"e{i - 1}" if i else None,
            "timestamp": "2026-01-02T03:04:05.000Z",
            "message": message,
        }

    def asst(blocks: list[dict[str, Any]], stop: str = "toolUse") -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": blocks,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "stopReason": stop,
            "timestamp": 1,
            "usage": {
                "input": 1,
                "output": 1,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 2,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
        }

    def call(cid: str, command: str) -> dict[str, Any]:
        return {"type": "toolCall", "id": cid, "name": "bash", "arguments": {"command": command}}

    def result(cid: str, text: str) -> dict[str, Any]:
        return {
            "role": "toolResult",
            "toolCallId": cid,
            "toolName": "bash",
            "isError": False,
            "timestamp": 1,
            "content": [{"type": "text", "text": text}] if text else [],
        }

    rows: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "start"}, {"type": "text", "text": ""}], "timestamp": 1},
        asst(
            [
                {"type": "thinking", "thinking": "  "},
                {"type": "thinking", "thinking": "plan"},
                {"type": "text", "text": "Looking."},
                call("c1|fc_1", "ls"),
                call("c2", "pwd"),
            ]
        ),
        result("c2", "/w"),  # c1 lost its result
        {
            "role": "bashExecution",
            "command": "make",
            "output": "ok",
            "exitCode": 2,
            "cancelled": False,
            "truncated": False,
            "timestamp": 1,
        },
        {
            "role": "bashExecution",
            "command": "secret",
            "output": "x",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "excludeFromContext": True,
            "timestamp": 1,
        },
        {"role": "custom", "customType": "note", "content": "from an extension", "display": False, "timestamp": 1},
        {"role": "somethingNew", "content": "?", "timestamp": 1},
        {"role": "user", "content": "plain string", "timestamp": 1},
        asst([call("c3", "sleep 9")], stop="aborted"),
        result("c3", "partial"),
        {"role": "user", "content": [{"type": "text", "text": "again"}], "timestamp": 1},
        asst([call("c4", "true")]),
        result("c4", ""),
        asst([{"type": "text", "text": "Done."}], stop="stop"),
    ]
    entries = [msg(i, m) for i, m in enumerate(rows)]
    k = len(entries)
    entries.append(
        {
            "type": "branch_summary",
            "id": f"e{k}",
            "parentId": f"e{k - 1}",
            "timestamp": "2026-01-02T03:04:05.000Z",
            "fromId": "e1",
            "summary": "Tried another way.",
        }
    )
    entries.append(
        {
            "type": "custom_message",
            "id": f"e{k + 1}",
            "parentId": f"e{k}",
            "customType": "x",
            "content": "custom text",
            "display": True,
            "timestamp": "2026-01-02T03:04:05.000Z",
        }
    )
    header = {"type": "session", "version": 3, "id": "rare", "timestamp": "2026-01-02T03:04:05.000Z", "cwd": "/"}
    dest.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in [header, *entries]))
    return dest


# -- 1. real sessions, cut and resumed -----------------------------------------------------------------------


@pytest.mark.parametrize("version", PI_CARD_VERSIONS)
def test_resumed_cuts_of_real_sessions_equal_what_pi_sends(version: str, tmp_path: Path) -> None:
    card = load_card("pi", version)
    cwd = tmp_path / "w"
    cwd.mkdir()
    cuts: list[Path] = []
    per_file: dict[str, int] = {}
    for src in pi_sessions():
        lines = entry_lines(src)
        points = cut_points(lines)
        per_file[src.name] = len(points)
        cuts += [write_cut(lines, k, cwd, tmp_path / f"{src.stem}.cut{k}.jsonl") for k in points]
    assert all(n >= 5 for n in per_file.values()), per_file
    rare = entry_lines(rare_entries_session(tmp_path / "rare.jsonl"))
    cuts += [write_cut(rare, k, cwd, tmp_path / f"rare.cut{k}.jsonl") for k in (4, 10, 12, len(rare))]
    day = datetime.date.today().isoformat()
    sent = resume(version, tmp_path, cuts)
    problems = check_resumed(version, card, cuts, sent, day)
    assert not problems, "\n".join(problems[:5])
    # the CLI flag loads a session as the RPC command does: one cut (with a compaction when there is one)
    cut = next((c for c in cuts if "compaction" in c.read_text()), cuts[len(cuts) // 2])
    copy = cut.with_suffix(".cli.jsonl")
    copy.write_bytes(cut.read_bytes())
    with ScriptedEndpoint([Reply(text="Ok.")], model_id=MODEL) as ep:
        write_pi_agent_config(tmp_path / "cli-home" / ".pi" / "agent", ep.base_url, MODEL)
        run = run_pi(
            pi_command(version, MODEL, PROMPT, extra_args=["--session", str(copy)]),
            cwd=cwd,
            env=pi_env(tmp_path / "cli-home"),
        )
    assert run.stop_reason() == "stop" and len(ep.requests) == 1, run.stderr[-500:]
    assert ep.requests[0]["messages"] == sent[cuts.index(cut)]["messages"]


# -- 2. compaction recorded by the real Pi, in the current and the v1 layout ----------------------------------


def is_summarisation(body: dict[str, Any]) -> bool:
    """Pi's compaction request: its own summarisation prompt (``SUMMARIZATION_SYSTEM_PROMPT``) and the history as
    text in a ``<conversation>`` block."""
    msgs = body.get("messages") or []
    system = " ".join(str(m.get("content")) for m in msgs if m.get("role") in ("system", "developer"))
    return "summarization" in system or "<conversation>" in json.dumps(msgs[-1:])


def busy_model(body: dict[str, Any], index: int) -> Reply:
    """Two tool rounds with sizeable output per prompt, then an answer; summaries when Pi asks for one."""
    if is_summarisation(body):
        return Reply(text=f"## Goal\nSummary {index}.")
    rounds = 0
    for m in reversed(body["messages"]):
        if m["role"] == "user":
            break
        rounds += m["role"] == "assistant"
    if rounds < 2:
        command = json.dumps({"command": f"seq 1 {150 + 10 * index}"})
        return Reply(text=f"Step {rounds}.", tool_calls=[("bash", command)])
    return Reply(text=f"Answer {index}.")


COMPACTION = {
    "quietStartup": True,
    "retry": {"enabled": False},
    "compaction": {"enabled": True, "reserveTokens": 1500, "keepRecentTokens": 1800},
}


def to_v1(v3: Path, dest: Path) -> Path:
    """A linear current-layout session written in the v1 layout: Pi's ``migrateV1ToV2`` undone (header without
    ``version``, entries without ``id``/``parentId``, ``firstKeptEntryId`` → ``firstKeptEntryIndex``, the index
    of the kept entry in the file with the header as 0)."""
    lines = [orjson.loads(x) for x in entry_lines(v3)]
    header, entries = lines[0], lines[1:]
    position = {e["id"]: k + 1 for k, e in enumerate(entries)}
    for k, e in enumerate(entries):
        assert e.get("parentId") == (entries[k - 1]["id"] if k else None), "only a linear session has a v1 form"
    out = [{key: v for key, v in header.items() if key != "version"}]
    for e in entries:
        e = {key: v for key, v in e.items() if key not in ("id", "parentId")}
        if e["type"] == "compaction":
            e["firstKeptEntryIndex"] = position[e.pop("firstKeptEntryId")]
        out.append(e)
    dest.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in out))
    return dest


@pytest.mark.parametrize("version", PI_CARD_VERSIONS)
def test_compaction_recorded_by_pi_equals_what_pi_sent(version: str, tmp_path: Path) -> None:
    card = load_card("pi", version)
    sessions = tmp_path / "sessions"
    with pi_rpc(
        version, tmp_path / "rec", busy_model, session_dir=sessions, settings=COMPACTION, context_window=4000
    ) as (rpc, ep):
        for k in range(8):
            rpc.prompt(f"Task {k}: count.")
            rpc.idle()
        sent = list(ep.requests)
    day = datetime.date.today().isoformat()
    (session,) = sorted(sessions.glob("*.jsonl"))
    trajs = epochs(session)
    built = [context(card, t, day) for t in trajs]
    # what Pi sent, in order: each request belongs to the epoch of the compactions before it
    epoch, summarised, requests_of = 0, False, [[] for _ in trajs]
    for body in sent:
        if is_summarisation(body):
            summarised = True
            continue
        if summarised:
            epoch, summarised = epoch + 1, False
        requests_of[epoch].append(as_pi_executes(card, body["messages"]))
    assert epoch >= 3 and len(trajs) == epoch + 1, (epoch, len(trajs))  # an epoch with nothing after its summary
    # (a compaction after the last prompt) is no trajectory: nothing in it was answered
    nested = sum(1 for t in trajs for s in t.steps if s.meta.get("nested_compaction"))
    assert nested, "no compaction kept an older one: the nested-summary rule went untested"
    for k, ((messages, labels_from), requests) in enumerate(zip(built, requests_of, strict=True)):
        for request in requests:
            diff = first_difference(messages[: len(request)], request)
            assert diff is None, f"epoch {k}, request of {len(request)} messages: {diff}"
        # every label's context is a request Pi sent; the kept turns before labels_from are not labels
        for i, m in enumerate(messages):
            if m["role"] == "assistant" and i >= labels_from:
                assert messages[:i] in requests, f"epoch {k}: label {i} has a context Pi never sent"
        assert labels_from == 0 if k == 0 else labels_from > 1
    # both layouts, cut and resumed
    lines = entry_lines(session)
    points = cut_points(lines, spread=4)
    cwd = tmp_path / "resume" / "w"
    cwd.mkdir(parents=True)
    v3_cuts = [write_cut(lines, n, cwd, tmp_path / f"v3.cut{n}.jsonl") for n in points]
    v1 = to_v1(session, tmp_path / "v1.jsonl")
    v1_lines = entry_lines(v1)
    v1_cuts = [write_cut(v1_lines, n, cwd, tmp_path / f"v1.cut{n}.jsonl") for n in points]
    assert "pi.session_v1_linear" in epochs(v1_cuts[-1])[-1].provenance.transformations
    sent = resume(version, tmp_path / "resume", v3_cuts + v1_cuts)
    problems = check_resumed(version, card, v3_cuts + v1_cuts, sent, day)
    assert not problems, "\n".join(problems[:5])
    # a v1 file and its current form are the same history to Pi and to harnessfit
    assert sent[: len(v3_cuts)] == sent[len(v3_cuts) :]

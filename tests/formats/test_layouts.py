"""Every layout a producing tool writes is read, detected by content: JSONL variants (property test over every real
file of ../shared/traces and ../shared/traces-extra), OpenHands V0 session folders and evaluation output, SWE-agent
YAML demos and RetryAgent attempts, LLaMA-Factory v1 content blocks and ShareGPT parallel calls, Claude Code
sidechains split by root."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harnessfit.convert import iter_convert
from harnessfit.core import Conversation, Rejection, Trajectory
from harnessfit.formats.registry import detect_format, get_reader, iter_units, read_unit
from harnessfit.harness.card import load_card

EXTRA = Path(__file__).resolve().parents[2].parent / "shared" / "traces-extra"
CARD = load_card("pi", "0.73.1")
# argument objects keep their order: it is data (Pi sends a call's arguments in the order the model wrote them)
KEEP_ORDER = {"arguments", "input"}


def _reorder(v: Any, keep: bool = False) -> Any:
    if isinstance(v, dict):
        items = list(v.items()) if keep else list(reversed(v.items()))
        return {k: _reorder(x, keep or k in KEEP_ORDER) for k, x in items}
    if isinstance(v, list):
        return [_reorder(x, keep) for x in v]
    return v


def _records(path: Path) -> tuple[str, Any]:
    """A JSONL file's records — every JSON value in it, in order, so a line holding two (a lost newline) gives both —
    or a document."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".jsonl":
        return "doc", json.loads(text)
    decoder, blank, recs = json.JSONDecoder(), re.compile(r"\s*"), []
    i = blank.match(text).end()
    while i < len(text):
        value, i = decoder.raw_decode(text, i)
        recs.append(value)
        i = blank.match(text, i).end()
    return "jsonl", recs


def _layouts(kind: str, recs: Any) -> dict[str, bytes]:
    def dump(v: Any, **kw: Any) -> str:
        return json.dumps(v, ensure_ascii=False, **kw)

    if kind == "jsonl":
        return {
            "pretty": "".join(dump(r, indent=2) + "\n" for r in recs).encode(),
            "array": dump(recs).encode(),
            "pretty array": dump(recs, indent=1).encode(),
            "crlf": "".join(dump(r) + "\r\n" for r in recs).encode(),
            "keys reordered": "".join(dump(_reorder(r)) + "\n" for r in recs).encode(),
        }
    return {
        "pretty": dump(recs, indent=2).encode(),
        "compact": dump(recs).encode(),
        "crlf": dump(recs, indent=2).replace("\n", "\r\n").encode(),
        "keys reordered": dump(_reorder(recs), indent=1).encode(),
    }


def _normalised(items: list[Conversation | Rejection]) -> list[dict[str, Any]]:
    """The conversion (records and exact prefixes) without what is derived from the raw bytes or their layout: ids
    (from the file's SHA-256), the file name, its hash and line numbers (see docs/extending.md, "Ids and
    provenance")."""
    out = []
    for it in items:
        d = it.model_dump(mode="json")
        if isinstance(it, Conversation):
            d.pop("id")
            for k in ("file", "sha256", "line_start", "line_end"):
                d["meta"].pop(k)
            if d["meta"]["prefix"]:
                d["meta"]["prefix"].pop("of")
        else:
            for k in ("record_id", "file", "line_start", "line_end", "kept_id"):
                d.pop(k)
        out.append(d)
    return out


def _files(root: Path) -> list[Path]:
    return [u.path for u in iter_units([root]) if u.path.name != "SOURCES.md" and u.path.is_file()]


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    [*_files(Path(__file__).resolve().parents[2].parent / "shared" / "traces"), *_files(EXTRA)],
    ids=lambda p: p.name[:50],
)
def test_real_files_convert_the_same_in_every_layout(path: Path, tmp_path: Path) -> None:
    base = _normalised(list(iter_convert([path], CARD, install_dir="/opt/pi", prefixes=True)))
    assert base
    kind, recs = _records(path)
    for name, data in _layouts(kind, recs).items():
        copy = tmp_path / name.replace(" ", "_") / path.name
        copy.parent.mkdir()
        copy.write_bytes(data)
        assert detect_format(copy) == detect_format(path), name
        assert _normalised(list(iter_convert([copy], CARD, install_dir="/opt/pi", prefixes=True))) == base, name


# ---------------------------------------------------------------------------------------------------- OpenHands
def _event(eid: int, **kw: Any) -> dict[str, Any]:
    return {"id": eid, "timestamp": "2025-07-09T13:49:35", **kw}


def test_openhands_v0_session_folder_is_one_trajectory_in_id_order(tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "abc123"
    (folder / "events").mkdir(parents=True)
    (folder / "event_cache").mkdir()
    events = [_event(0, source="user", action="message", args={"content": "make x"})]
    for k in range(1, 11):  # ten agent steps: ids 1..10, so 10.json sorts before 2.json by name
        events.append(_event(2 * k - 1, source="agent", action="run", args={"command": f"echo {k}", "thought": ""}))
        events.append(
            _event(
                2 * k,
                source="agent",
                observation="run",
                cause=2 * k - 1,
                content="",
                extras={"metadata": {"exit_code": 0, "working_dir": "/ws"}},
            )
        )
    events.append(_event(21, source="agent", action="finish", args={"final_thought": "Done.", "thought": ""}))
    for e in events:
        if e["id"] != 7:  # event 7 is only in its cache page, as the event store may leave it
            (folder / "events" / f"{e['id']}.json").write_text(json.dumps(e))
    (folder / "event_cache" / "0-25.json").write_text(json.dumps(events))
    (folder / "metadata.json").write_text(json.dumps({"conversation_id": "abc123", "created_at": "2025-07-09T00:00Z"}))
    assert detect_format(folder) == "openhands"
    units = iter_units([tmp_path / "sessions"])
    assert [u.path for u in units] == [folder]  # one unit, not a row per event file
    (traj,) = list(read_unit(units[0]))
    assert isinstance(traj, Trajectory)
    commands = [json.loads(json.dumps(c.arguments))["command"] for s in traj.steps for c in s.tool_calls]
    assert commands == [f"echo {k}" for k in range(1, 11)]
    assert traj.steps[-1].text == "Done." and traj.cwd == "/ws" and traj.date == "2025-07-09"


def test_openhands_v0_real_session_folder_without_a_user_turn_is_one_row() -> None:
    folder = EXTRA / "openhands" / "All-Hands-AI__OpenHands__3396c6f9bc024b81ad9bd57d9b9a6768"
    units = iter_units([folder.parent])
    unit = next(u for u in units if u.path == folder)
    (row,) = list(read_unit(unit))
    assert isinstance(row, Rejection) and row.reason == "empty" and row.source == "openhands"
    assert not any(u.path.parent == folder / "events" for u in units)


@pytest.mark.parametrize(
    "name,instances,shape",
    [
        ("All-Hands-AI__OpenHands__ProntoQA__output.jsonl", 6, "pairs"),
        ("All-Hands-AI__OpenHands__resolver_mock_output__output.jsonl", 2, "stripped"),
        ("OpenHands__benchmarks__output.jsonl", 2, "v1"),
    ],
)
def test_openhands_evaluation_output_is_a_trajectory_per_instance(name: str, instances: int, shape: str) -> None:
    path = EXTRA / "openhands" / name
    assert detect_format(path) == "openhands"
    trajs = list(get_reader("openhands").read(path))
    assert len(trajs) == instances and all(isinstance(t, Trajectory) for t in trajs)
    for t in trajs:
        assert t.steps[0].role == "user" and t.steps[1].role == "assistant"
        results = {s.tool_call_id for s in t.steps if s.role == "tool"}
        calls = {c.id for s in t.steps for c in s.tool_calls}
        assert results <= calls and calls
    if shape == "v1":  # the task is only in `instruction`
        assert all("instruction as the first user message" in " ".join(t.provenance.transformations) for t in trajs)


# ---------------------------------------------------------------------------------------------------- SWE-agent
DEMO_YAML = """\
# This is a demo file generated from trajectory file:
history:
  - role: system
    content: You are a helpful assistant.
    agent: main
    message_type: system_prompt
  - role: user
    content: |-
      Fix the bug.
    agent: main
    message_type: observation
  - role: assistant
    content: Let's create the file.
    agent: main
    tool_calls:
      - function:
          arguments: '{"command":"create","path":"/r/a.py","file_text":"x = 1\\n"}'
          name: str_replace_editor
        id: call_1
        type: function
    message_type: action
  - role: tool
    content: "File created successfully at: /r/a.py"
    agent: main
    message_type: observation
    tool_call_ids:
      - call_1
replay_config: '{"env": {}}'
"""


def test_swe_agent_yaml_demo_is_read(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(DEMO_YAML)
    assert detect_format(path) == "swe_agent"
    (traj,) = list(get_reader("swe_agent").read(path))
    assert [s.role for s in traj.steps] == ["system", "user", "assistant", "tool"]
    assert traj.steps[2].tool_calls[0].name == "str_replace_editor" and traj.steps[3].tool_call_id == "call_1"
    bad = tmp_path / "bad.yaml"
    bad.write_text(DEMO_YAML.replace("  - role: tool", "  - role: tool\n   oops: [", 1))
    (row,) = list(get_reader("swe_agent").read(bad))
    assert isinstance(row, Rejection) and row.reason == "parse_error" and "YAML" in row.detail


def test_swe_agent_retry_attempts_are_one_trajectory_each_and_demos_are_counted(tmp_path: Path) -> None:
    import yaml

    attempt = yaml.safe_load(DEMO_YAML)
    demo_call = {
        "role": "assistant",
        "content": "demo",
        "is_demo": True,
        "tool_calls": [{"id": "d", "function": {"name": "bash", "arguments": "{}"}}],
    }
    attempt["history"].insert(1, demo_call)
    attempt |= {"trajectory": [], "info": {}}
    doc = {"attempts": [attempt, attempt], **attempt}  # the chosen attempt is copied to the top
    path = tmp_path / "retry.traj"
    path.write_text(json.dumps(doc, indent=2))
    assert detect_format(path) == "swe_agent"
    trajs = list(get_reader("swe_agent").read(path))
    assert len(trajs) == 2 and len({t.id for t in trajs}) == 2
    assert all(t.skipped_calls == {"demonstration": 1} for t in trajs)


def test_openhands_eval_output_is_not_swe_agent(tmp_path: Path) -> None:
    rec = {
        "instance_id": "x",
        "instruction": "do it",
        "history": [{"action": "message", "source": "user", "args": {"content": "do it"}}],
    }
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert detect_format(path) == "openhands"


# ---------------------------------------------------------------------------------------------------- chat formats
def test_llamafactory_v1_content_blocks_are_text_reasoning_and_calls(tmp_path: Path) -> None:
    call = json.dumps({"name": "bash", "arguments": {"command": "ls"}})
    conv = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "value": "List "}, {"type": "text", "value": "files."}]},
            {
                "role": "assistant",
                "content": [{"type": "reasoning", "value": "ls will do"}, {"type": "tool_call", "value": call}],
            },
            {"role": "tool", "content": [{"type": "text", "value": "a.py"}]},
            {"role": "assistant", "content": [{"type": "text", "value": "One file: a.py."}]},
        ]
    }
    path = tmp_path / "v1.jsonl"
    path.write_text(json.dumps(conv) + "\n")
    assert detect_format(path) == "openai_chat"
    (traj,) = list(get_reader("openai_chat").read(path))
    assert traj.steps[0].text == "List files."
    assert traj.steps[1].reasoning == "ls will do" and traj.steps[1].tool_calls[0].name == "bash"
    assert traj.steps[2].tool_call_id == traj.steps[1].tool_calls[0].id  # paired by order
    (conv_out,) = list(iter_convert([path], CARD, install_dir="/opt/pi"))
    assert isinstance(conv_out, Conversation), conv_out


def test_sharegpt_parallel_function_calls(tmp_path: Path) -> None:
    calls = [{"name": "read", "arguments": {"path": "a"}}, {"name": "read", "arguments": {"path": "b"}}]
    conv = {
        "conversations": [
            {"from": "human", "value": "read a and b"},
            {"from": "function_call", "value": json.dumps(calls)},
            {"from": "observation", "value": "A"},
            {"from": "observation", "value": "B"},
            {"from": "gpt", "value": "done"},
        ]
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps([conv]))
    (traj,) = list(get_reader("openai_chat").read(path))
    turn = traj.steps[1]
    assert [c.arguments for c in turn.tool_calls] == [{"path": "a"}, {"path": "b"}]
    assert [s.tool_call_id for s in traj.steps[2:4]] == [c.id for c in turn.tool_calls]


def test_completion_log_response_is_the_last_turn() -> None:
    path = (
        EXTRA
        / "openai_chat"
        / "OpenHands__software-agent-sdk__litellm_proxy__deepseek__deepseek-chat-1757015054.055.json"
    )
    (traj,) = list(get_reader("openai_chat").read(path))
    assert isinstance(traj, Trajectory)
    assert traj.steps[-1].role == "assistant" and traj.steps[-1].tool_calls[0].name == "terminal"


# ---------------------------------------------------------------------------------------------------- Claude Code
def test_claude_code_inline_sidechains_are_split_by_root() -> None:
    path = EXTRA / "claude_code" / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    trajs = list(get_reader("claude_code").read(path))
    assert len(trajs) == 3 and all(isinstance(t, Trajectory) for t in trajs)
    main, *sides = trajs
    # each sidechain is a sub-agent's whole run, opening with the prompt its parent's Task call wrote: a trajectory of
    # its own (not flagged), in the split of the parent's root request
    assert not any("subagent" in t.flags for t in trajs)
    assert {t.root_request_id for t in trajs} == {main.root_request_id}
    tasks = [c.arguments for s in main.steps for c in s.tool_calls if c.name == "Task"]
    assert [s.steps[0].text for s in sides] == [a["prompt"] for a in tasks if "prompt" in a]
    assert all("claude.subagent_prompt_from_task" in s.provenance.transformations for s in sides)
    # the session opens with a prompt slash command: its expansion (an isMeta line) is the main thread's prompt
    assert main.steps[0].role == "user" and "claude.slash_command_prompt" in main.provenance.transformations
    assert [c.name for c in main.steps[1].tool_calls] == ["TodoWrite"]
    assert [s.steps[0].text.split()[0] for s in sides] == ["Examine", "Analyze"]  # each sidechain's own prompt
    assert sum(len(s.tool_calls) for t in trajs for s in t.steps) == 21  # every call, in exactly one trajectory
    assert len({t.id for t in trajs}) == 3

"""The oracle for re-rendered texts: the installed target Pi runs the same tool calls, and the text harnessfit makes
from an older Pi's wording of each (``harness.pi_texts.in_target_words``) must equal the text Pi sent — for write,
edit and read notices (a ``limit`` that stops early, and the 2000-line cap)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.harness.card import load_card
from harnessfit.harness.pi import install_pi, pi_command, pi_env, run_pi, write_pi_agent_config
from harnessfit.harness.pi.texts import WORDINGS, in_target_words
from harnessfit.harness.scripted import Reply, ScriptedEndpoint
from harnessfit.harness.versions import DEFAULT_PI_VERSION

pytestmark = [pytest.mark.pi, pytest.mark.slow]


def _old(key: str, until: str | None, **values: object) -> str:
    """The text the catalogue's wording ``key`` of the release range ending ``until`` makes with ``values``."""
    (w,) = [w for w in WORDINGS if w.key == key and w.until == until]
    return w.template.format(**values)


def test_re_rendered_texts_are_what_the_target_pi_writes(tmp_path: Path) -> None:
    version = DEFAULT_PI_VERSION
    install_pi(version)
    card = load_card("pi", version)
    cwd = tmp_path / "w"
    cwd.mkdir()
    short = "\n".join(f"l{i}" for i in range(1, 8))  # 7 lines, no final newline: every Pi counts 7
    long = "\n".join(f"row {i}" for i in range(1, 2101))  # over the 2000-line cap, under 50 KB
    (cwd / "short.txt").write_text(short)
    (cwd / "long.txt").write_text(long)
    (cwd / "note.txt").write_text("one\ntwo\n")
    calls = [
        ("write", {"path": "new.txt", "content": "héllo😀\n"}),
        ("edit", {"path": "note.txt", "edits": [{"oldText": "two", "newText": "2"}]}),
        ("read", {"path": "short.txt", "limit": 2}),
        ("read", {"path": "long.txt"}),
    ]
    script = [Reply(tool_calls=[(n, json.dumps(a)) for n, a in calls]), Reply(text="Done.")]
    with ScriptedEndpoint(script, model_id="m") as ep:
        write_pi_agent_config(tmp_path / "h" / ".pi" / "agent", ep.base_url, "m")
        run = run_pi(
            pi_command(version, "m", "Do it.", session_dir=tmp_path / "s"), cwd=cwd, env=pi_env(tmp_path / "h")
        )
    assert run.stop_reason() == "stop" and len(ep.requests) == 2
    sent = [m["content"] for m in ep.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(sent) == len(calls)

    head2, head2000 = "l1\nl2", "\n".join(f"row {i}" for i in range(1, 2001))
    older = {  # each call's result as older Pis worded it (the catalogue's templates, the values of this run)
        0: [_old("write", "0.84.0", bytes=7, path="new.txt")],  # content.length: UTF-16 code units
        1: [_old("edit", "0.30.2", path="note.txt", old_chars=3, new_chars=1), _old("edit", "0.63.1", path="note.txt")],
        2: [
            _old("read_more_lines", "0.49.3", content=head2, remaining=5, next_offset=3),
            _old("read_not_shown", "0.7.6", content=head2, remaining=5, next_offset=3),
        ],
        3: [
            _old("read_truncated_lines", "0.49.3", content=head2000, start=1, end=2000, total=2100, next_offset=2001),
            _old("read_not_shown", "0.7.6", content=head2000, remaining=100, next_offset=2001),
        ],
    }
    for k, texts in older.items():
        name, arguments = calls[k]
        for text in texts:
            assert text != sent[k]
            assert in_target_words(card, name, text, arguments) == sent[k], (name, text[-120:], sent[k][-120:])

"""The harness install folder named in the system prompt: fixable for machine-independent builds, recorded in the
manifest and reused by ``verify``, and never rewritten by redaction."""

import json
from pathlib import Path

from test_real_traces import _all_bytes, _pi_head

from _helpers.conversations import make_conv
from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.dataset.redact import Redactor
from harnessfit.dataset.verify import verify_dataset
from harnessfit.harness.card import load_card

FIXED = "/opt/pi/node_modules/@mariozechner/pi-coding-agent"


def _system_prompts(out: Path) -> list[str]:
    prompts = []
    for p in sorted((out / "conversations").glob("*.jsonl")):
        for line in p.read_text().splitlines():
            prompts.append(json.loads(line)["messages"][0]["content"])
    return prompts


def test_fixed_install_dir_gives_identical_bytes_under_two_homes(tmp_path, traces_dir, monkeypatch):
    src = _pi_head(traces_dir, tmp_path / "in" / "pi.jsonl")
    outs = []
    for home in ("homeA", "homeB"):
        monkeypatch.setenv("HARNESSFIT_HOME", str(tmp_path / home))
        out = tmp_path / home / "out"
        build_dataset(config_from_values(inputs=[str(src)], install_dir=FIXED, parquet=False), tmp_path, out=out)
        outs.append(out)
    a, b = _all_bytes(outs[0]), _all_bytes(outs[1])
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []
    prompts = _system_prompts(outs[0])
    assert prompts and all(FIXED + "/README.md" in p for p in prompts)
    assert all(str(tmp_path) not in p for p in prompts)
    m = json.loads(a["manifest.json"])
    assert m["config"]["install_dir"] == FIXED == m["harness_card"]["install_dir"]


def test_default_install_dir_is_recorded_and_verify_reuses_it(tmp_path, traces_dir, monkeypatch):
    src = _pi_head(traces_dir, tmp_path / "in" / "pi.jsonl")
    monkeypatch.setenv("HARNESSFIT_HOME", str(tmp_path / "homeA"))
    card = load_card("pi", "0.73.1")
    default = card.default_install_dir()
    out = tmp_path / "out"
    build_dataset(config_from_values(inputs=[str(src)], harness="pi@0.73.1", parquet=False), tmp_path, out=out)
    m = json.loads((out / "manifest.json").read_text())
    assert m["config"]["install_dir"] == default and default.startswith(str(tmp_path / "homeA"))
    assert all(default in p for p in _system_prompts(out))
    # on another machine (another HARNESSFIT_HOME) verify rebuilds with the recorded folder, not its own
    monkeypatch.setenv("HARNESSFIT_HOME", str(tmp_path / "homeB"))
    assert card.default_install_dir() != default
    res = verify_dataset(out)
    assert res.ok, res.message()


def test_home_path_install_dir_is_not_redacted_but_the_cwd_is(tmp_path):
    install = "/home/alice/.cache/harnessfit/harness/pi/0.73.1/node_modules/@mariozechner/pi-coding-agent"
    card = load_card("pi", "0.73.1")
    conv = make_conv(
        "fix the bug in /home/alice/proj/app.py",
        [("read", {"path": "/home/alice/proj/app.py"}, "x = 1\n")],
        answer="done",
        salt="alice",
    )
    prompt = card.render_system_prompt("/home/alice/proj", "2026-01-01", install_dir=install)
    data = conv.model_dump()
    data["messages"][0]["content"] = prompt
    data["meta"]["cwd"] = "/home/alice/proj"
    conv = type(conv).model_validate(data)

    red = Redactor(keep=[install]).redact(conv).conversation
    system = red.messages[0]["content"]
    assert install in system and system.count(install) == prompt.count(install)
    assert "/home/alice/proj" not in system and "/home/user1/proj" in system
    assert red.meta.cwd == "/home/user1/proj"
    assert "/home/user1/proj/app.py" in red.messages[2]["tool_calls"][0]["function"]["arguments"]
    assert "/home/user1/proj/app.py" in red.messages[1]["content"][0]["text"]
    # without the exemption the prompt would no longer be what Pi sends
    plain = Redactor().redact(conv).conversation.messages[0]["content"]
    assert install not in plain and "/home/user1/.cache/harnessfit" in plain


def test_build_keeps_a_home_path_install_dir(tmp_path, traces_dir):
    src = _pi_head(traces_dir, tmp_path / "in" / "pi.jsonl")
    install = "/home/alice/.cache/harnessfit/harness/pi/0.73.1/node_modules/@mariozechner/pi-coding-agent"
    out = tmp_path / "out"
    build_dataset(config_from_values(inputs=[str(src)], install_dir=install, parquet=False), tmp_path, out=out)
    prompts = _system_prompts(out)
    assert prompts and all(install + "/README.md" in p for p in prompts)


def test_the_harness_profile_is_chosen_in_the_config_and_recorded(tmp_path, traces_dir):
    """``harness_profile = "tools"``: the build renders the profile's card (its prompt names grep/find/ls) and the
    manifest records that card and its tools; an unknown profile is a one-line error."""
    import pytest

    from harnessfit.errors import UserError

    src = _pi_head(traces_dir, tmp_path / "in" / "pi.jsonl")
    out = tmp_path / "out"
    build_dataset(
        config_from_values(
            inputs=[str(src)], install_dir=FIXED, parquet=False, harness="pi@0.73.1", harness_profile="tools"
        ),
        tmp_path,
        out=out,
    )
    m = json.loads((out / "manifest.json").read_bytes())
    card = load_card("pi", "0.73.1", "tools")
    assert m["harness_card"]["id"] == card.id and m["harness_card"]["tools"] == card.default_tools
    assert m["config"]["harness_profile"] == "tools" and m["config"]["harness"] == "pi@0.73.1+tools"
    prompts = _system_prompts(out)
    assert prompts and all("- grep:" in p for p in prompts)
    with pytest.raises(UserError, match="unknown harness profile"):
        config_from_values(inputs=[str(src)], harness_profile="nope")

"""The version registry (scope rule, committed cards, one default), the card format check, and the version-aware
pieces of the install (node ranges, ``pi --help`` parsing, isolation flags) — no Pi run needed."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from harnessfit.errors import UserError
from harnessfit.harness.card import CARD_FORMAT, card_from_json, card_path, load_card
from harnessfit.harness.pi.cli import _satisfies, isolation_flags, parse_help
from harnessfit.harness.versions import (
    DEFAULT_PI_VERSION,
    NEW_SCOPE_PACKAGE,
    NEWEST_PI_VERSION,
    OLD_SCOPE_PACKAGE,
    PI_CARD_VERSIONS,
    PROFILES,
    harness_profile,
    harness_spec,
    parse_harness,
    parse_version,
    pi_package,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "harnessfit"


@pytest.mark.parametrize(
    ("version", "package"),
    [
        ("0.73.1", OLD_SCOPE_PACKAGE),
        ("0.73.9", OLD_SCOPE_PACKAGE),
        ("0.62.0", OLD_SCOPE_PACKAGE),
        ("0.74.0", NEW_SCOPE_PACKAGE),
        ("0.79.10", NEW_SCOPE_PACKAGE),
        ("1.6.0", NEW_SCOPE_PACKAGE),
        ("0.74.0-rc.1", NEW_SCOPE_PACKAGE),
    ],
)
def test_scope_follows_the_version(version: str, package: str) -> None:
    assert pi_package(version) == package


@pytest.mark.parametrize("bad", ["latest", "0.82", "^1.0.0", "", "v1.6.0 extra"])
def test_only_exact_versions(bad: str) -> None:
    with pytest.raises(UserError, match="exact Pi version"):
        parse_version(bad)


def test_parse_harness_spec() -> None:
    assert parse_harness("pi@0.82.0") == ("pi", "0.82.0")
    assert parse_harness("pi") == ("pi", DEFAULT_PI_VERSION) == parse_harness(None)
    with pytest.raises(UserError, match=r"unknown harness .claude."):
        parse_harness("claude@1.0.0")
    with pytest.raises(UserError, match="exact Pi version"):
        parse_harness("pi@newest")


def test_committed_cards_are_the_listed_versions() -> None:
    folder = card_path("pi", DEFAULT_PI_VERSION).parent
    on_disk = sorted(p.name for p in folder.glob("pi-*.json"))
    profiles = [f"pi-{v}+{name}.json" for v in PI_CARD_VERSIONS for name in PROFILES]
    assert on_disk == sorted([f"pi-{v}.json" for v in PI_CARD_VERSIONS] + profiles)
    assert DEFAULT_PI_VERSION in PI_CARD_VERSIONS and PI_CARD_VERSIONS[-1] == NEWEST_PI_VERSION
    assert [parse_version(v) for v in PI_CARD_VERSIONS] == sorted(parse_version(v) for v in PI_CARD_VERSIONS)
    for version in PI_CARD_VERSIONS:
        card = load_card("pi", version)
        assert card.format == CARD_FORMAT and card.version == version and card.package == pi_package(version)
        assert card.to_json_bytes() == card_path("pi", version).read_bytes()
        assert "--no-extensions" in card.cli["isolation_flags"] and card.cli["run_env"]["PI_OFFLINE"] == "1"
        assert card.session["version"] == 3 and "message" in card.session["entries"]
        assert card.default_install_dir().endswith(card.package)
        for name, tools in PROFILES.items():  # a profile is the same Pi with other tools
            variant = load_card("pi", version, name)
            assert variant.id == f"pi-{version}+{name}" and variant.version == version and variant.profile == name
            assert variant.default_tools == list(tools) and variant.cli == card.cli
            assert variant.to_json_bytes() == card_path("pi", version, name).read_bytes()
            assert variant.default_install_dir() == card.default_install_dir()


def test_a_harness_spec_names_a_profile() -> None:
    assert parse_harness("pi@0.82.0+tools") == ("pi", "0.82.0") and harness_profile("pi@0.82.0+tools") == "tools"
    assert harness_profile("pi@0.82.0") is None and harness_profile(None) is None
    assert harness_spec("0.82.0", profile="tools") == "pi@0.82.0+tools"
    with pytest.raises(UserError, match="unknown harness profile"):
        parse_harness("pi@0.82.0+nope")
    with pytest.raises(UserError, match="--profile tools"):
        load_card("pi", "0.50.0", "tools")


def test_the_version_literal_lives_in_versions_py_only() -> None:
    # one source of truth: no quoted version literal in code outside the registry (docstrings may name versions)
    pattern = re.compile(r"""["'](?:0\.73\.1|0\.79\.10|0\.82\.0|1\.6\.0)["']""")
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if p.name != "versions.py" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    makefile = (SRC.parents[1] / "Makefile").read_text(encoding="utf-8")
    assert "0.73.1" not in makefile


def test_unknown_card_format_is_one_clear_line() -> None:
    data = orjson.loads(card_path("pi", DEFAULT_PI_VERSION).read_bytes())
    with pytest.raises(UserError, match=r"card format 99, this harnessfit reads format 2: .*upgrade harnessfit"):
        card_from_json(orjson.dumps({**data, "format": 99}), "x.json")
    old = {k: v for k, v in data.items() if k not in ("format", "package", "engines_node", "cli", "session")}
    with pytest.raises(UserError, match=r"card format 1, .*re-capture it"):
        card_from_json(orjson.dumps(old), "old.json")
    with pytest.raises(UserError, match="not JSON"):
        card_from_json(b"{nope", "bad.json")
    with pytest.raises(UserError, match=r"no harness card for pi 9\.9\.9 \(committed: 0\.73\.1"):
        load_card("pi", "9.9.9")


@pytest.mark.parametrize(
    ("node", "spec", "ok"),
    [
        ((20, 20, 2), ">=20.6.0", True),
        ((20, 20, 2), ">=22.19.0", False),
        ((22, 23, 5), ">=22.19.0", True),
        ((22, 19, 0), ">=22.19.0", True),
        ((22, 18, 9), ">=22.19", False),
        ((20, 1, 0), "^20.6 || >=22", False),
        ((23, 0, 0), "^20.6 || >=22", True),
        ((20, 7, 0), "^20.6 || >=22", True),
        ((21, 0, 0), "20.x", False),
        ((20, 3, 0), "20", True),
        ((18, 0, 0), ">=16 <19", True),
        ((19, 0, 0), ">=16 <19", False),
        ((20, 0, 0), "~20.1", False),
        ((20, 1, 9), "~20.1", True),
        ((20, 2, 0), "~20.1", False),
    ],
)
def test_node_ranges(node: tuple[int, int, int], spec: str, ok: bool) -> None:
    assert _satisfies(node, spec) is ok


def test_unknown_range_form_is_not_guessed() -> None:
    assert _satisfies((20, 0, 0), "18 - 22") is None


HELP = """pi - AI coding assistant

Options:
  --provider <name>              Provider name
  --mode <mode>                  Output mode: text (default), json, or rpc
  --no-extensions, -ne           Disable extension discovery
  --no-approve, -na              Ignore project-local files for this run
  --                             End option parsing

Environment Variables:
  OPENAI_API_KEY                   - OpenAI key
  PI_OFFLINE                       - Disable startup network operations
  PI_TELEMETRY                     - Override install telemetry
"""


def test_parse_help_reads_options_and_pi_variables() -> None:
    cli = parse_help(HELP)
    assert cli.options == ("--provider", "--mode", "--no-extensions", "--no-approve")
    assert cli.env == ("PI_OFFLINE", "PI_TELEMETRY")


def test_isolation_flags_follow_what_the_cli_offers() -> None:
    base = ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files"]
    assert isolation_flags(base) == base[:4]
    assert isolation_flags([*base, "--no-mcp", "--approve", "--no-approve"]) == [*base[:4], "--no-approve", "--no-mcp"]
    with pytest.raises(UserError, match="no --no-skills"):
        isolation_flags([f for f in base if f != "--no-skills"])

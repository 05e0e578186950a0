"""The real Pi CLI (``@mariozechner/pi-coding-agent`` up to 0.73.x, ``@earendil-works/pi-coding-agent`` from
0.74.0; ``harness.versions``): install it into harnessfit's own folder, configure it for a
local OpenAI-compatible endpoint, and run it unattended.

Everything here is about running the genuine npm package, never a re-implementation: the harness card, the
validator test and the eval runner all drive this binary. Each run gets its own HOME (``pi_env``) so the user's
own Pi settings, sessions and API keys never leak into a capture or an eval.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.harness.versions import (
    DEFAULT_PI_VERSION,
    PRIVATE_NODE_VERSION,
    parse_version,
    pi_package,
    private_node_package,
)
from harnessfit.npm import install_npm_folder, npm_install, write_package_json
from harnessfit.paths import harness_dir

__all__ = [
    "DEFAULT_PI_VERSION",
    "PiRun",
    "PiCli",
    "install_pi",
    "installed_package",
    "pi_binary",
    "pi_package_dir",
    "pi_version",
    "pi_cli",
    "parse_help",
    "isolation_flags",
    "run_flags",
    "write_pi_agent_config",
    "pi_env",
    "pi_command",
    "run_pi",
]

_PROVIDER = "local"
_RECORD = "harnessfit-install.json"
_WRAPPER = "pi"


def _dot_bin(folder: Path) -> Path:
    return folder / "node_modules" / ".bin" / "pi"


def _entry(folder: Path) -> Path:
    """What runs Pi in an install folder: harnessfit's wrapper (Pi on the private node) or npm's ``.bin/pi``."""
    wrapper = folder / _WRAPPER
    return wrapper if wrapper.is_file() else _dot_bin(folder)


def pi_version(binary: Path, env: dict[str, str] | None = None) -> str | None:
    """What ``pi --version`` prints (stripped), or None when it does not run."""
    try:
        proc = subprocess.run(
            [str(binary), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    out = (proc.stdout or proc.stderr).strip().splitlines()
    return out[-1].strip() if out else None


# -- node version ranges (``engines.node``): the comparator forms npm's semver accepts that Pi uses ----------

_COMPARATOR = re.compile(r"(>=|<=|>|<|=|\^|~)?\s*v?(\d+)(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?")


def _satisfies(version: tuple[int, int, int], spec: str) -> bool | None:
    """Whether ``version`` satisfies the npm range ``spec`` (``>=22.19.0``, ``^20.6 || >=22``); None when the range
    uses a form this reader does not know (hyphen ranges, pre-release tags)."""
    if "-" in spec:  # a hyphen range or a pre-release tag
        return None
    for alt in (alt.strip() for alt in spec.split("||")):
        ok = True
        for token in re.findall(r"(?:>=|<=|>|<|=|\^|~)?\s*v?[0-9][0-9A-Za-z.*]*", alt) or ["*"]:
            if token == "*":
                continue
            m = _COMPARATOR.fullmatch(token.strip())
            if m is None:
                return None
            op, parts = m.group(1) or "=", [m.group(i) for i in (2, 3, 4)]
            wild = next((i for i, p in enumerate(parts) if p is None or p in "xX*"), 3)
            base = tuple(int(p) if i < wild else 0 for i, p in enumerate(parts))
            if op == "=" and wild < 3:  # "22" is ^22, "22.19" is ~22.19
                op = "~" if wild >= 2 else "^"
            if op == ">=":
                ok &= version >= base
            elif op == ">":
                ok &= version > base
            elif op == "<=":
                ok &= version <= base
            elif op == "<":
                ok &= version < base
            elif op == "=":
                ok &= version == base
            elif op == "^":
                lead = next((i for i, p in enumerate(base) if p != 0), 2)
                upper = tuple(list(base[:lead]) + [base[lead] + 1] + [0] * (2 - lead))
                ok &= base <= version < upper
            elif op == "~":
                upper = (base[0] + 1, 0, 0) if wild == 1 else (base[0], base[1] + 1, 0)
                ok &= base <= version < upper
        if ok:
            return True
    return False


def _node_version(node: str | Path = "node") -> tuple[int, int, int] | None:
    try:
        proc = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", proc.stdout.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m and proc.returncode == 0 else None


def _vtext(v: tuple[int, int, int] | None) -> str:
    return "none" if v is None else "v" + ".".join(map(str, v))


def _read_record(folder: Path) -> dict[str, Any] | None:
    try:
        record = orjson.loads((folder / _RECORD).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return record if isinstance(record, dict) else None


def installed_package(version: str) -> str:
    """The npm package installed for Pi ``version`` (what ``--package`` chose; otherwise the scope rule)."""
    record = _read_record(harness_dir("pi", version))
    if record and isinstance(record.get("package"), str):
        return record["package"]
    return pi_package(version)


def pi_package_dir(version: str) -> Path:
    """The installed Pi package folder (the ``install_dir`` Pi names in its system prompt)."""
    return harness_dir("pi", version) / "node_modules" / installed_package(version)


def _install_ok(folder: Path, version: str, package: str) -> bool:
    binary = _entry(folder)
    if not binary.exists():
        return False
    record = _read_record(folder)
    got = record.get("package") if record else pi_package(version)  # installs made before the record existed
    return got == package and pi_version(binary) == version


def install_pi(
    version: str = DEFAULT_PI_VERSION,
    *,
    package: str | None = None,
    node: str = "auto",
    say: Callable[[str], None] | None = None,
) -> Path:
    """Install Pi ``version`` from npm into ``harness_dir("pi", version)`` and return the command that runs it.

    ``package`` overrides the npm package (default: ``pi_package(version)``, the scope that version is published
    under). When the package's ``engines.node`` asks for more than the machine's ``node``, ``node="auto"`` adds
    Node.js ``PRIVATE_NODE_VERSION`` from npm (``node-<os>-<arch>``, a package that ships the binary) to the same
    folder and writes a ``pi`` wrapper that runs Pi on it; ``node="system"`` refuses with one line instead.

    Idempotent (a working install of the same package is kept) and safe under concurrency: one file lock per
    version, npm runs in a temporary sibling folder that is renamed into place only after ``pi --version``
    printed ``version``. ``harnessfit-install.json`` in the folder records the package and the node it runs on.
    """
    parse_version(version)
    if node not in ("auto", "system"):
        raise UserError(f"--node must be auto or system, got {node!r}")
    pkg = package or pi_package(version)
    tell = say or (lambda _msg: None)
    record: dict[str, Any] = {}

    def add_node_if_needed(tmp: Path) -> None:
        meta = orjson.loads((tmp / "node_modules" / pkg / "package.json").read_bytes())
        engines = str((meta.get("engines") or {}).get("node") or "")
        system = _node_version()
        record.update(
            {"package": pkg, "version": version, "engines_node": engines or None, "node": f"system {_vtext(system)}"}
        )
        fits = _satisfies(system, engines) if engines and system else True
        if fits is False:
            private = private_node_package()
            if node == "system":
                raise UserError(
                    f"{pkg}@{version} needs node {engines} but this machine has {_vtext(system)}: "
                    f"install a newer Node.js or use --node auto (node {PRIVATE_NODE_VERSION} "
                    f"from npm into harnessfit's folder)"
                )
            if _satisfies(parse_version(PRIVATE_NODE_VERSION), engines) is False:
                raise UserError(
                    f"{pkg}@{version} needs node {engines}, which neither this machine's node "
                    f"({_vtext(system)}) nor harnessfit's private node {PRIVATE_NODE_VERSION} has"
                )
            tell(
                f"{pkg}@{version} needs node {engines} (this machine: {_vtext(system)}): "
                f"installing {private}@{PRIVATE_NODE_VERSION} from npm beside it"
            )
            write_package_json(tmp, "harnessfit-pi", {pkg: version, private: PRIVATE_NODE_VERSION})
            npm_install(tmp, f"{private}@{PRIVATE_NODE_VERSION}")
            _write_wrapper(tmp, pkg, meta, private)
            record["node"] = f"{private}@{PRIVATE_NODE_VERSION}"
        (tmp / _RECORD).write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2))

    def verify(folder: Path) -> str | None:
        if _install_ok(folder, version, pkg):
            return None
        got = pi_version(_entry(folder)) if _entry(folder).exists() else None
        return f"`pi --version` printed {got!r}"

    target = install_npm_folder(
        harness_dir("pi", version), {pkg: version}, verify=verify, name="harnessfit-pi", prepare=add_node_if_needed
    )
    return _entry(target)


def _write_wrapper(folder: Path, pkg: str, meta: dict[str, Any], private: str) -> None:
    """``<folder>/pi``: runs the package's ``bin.pi`` script on the private node (paths relative to the folder, so
    the atomic rename and a moved ``$HARNESSFIT_HOME`` keep it working)."""
    bins = meta.get("bin")
    script = bins if isinstance(bins, str) else (bins or {}).get("pi")
    if not isinstance(script, str):
        raise UserError(f"{pkg} declares no `pi` binary in its package.json")
    node_rel = f"node_modules/{private}/bin/node"
    if not (folder / node_rel).is_file():
        raise UserError(f"{private}@{PRIVATE_NODE_VERSION} installed without its bin/node")
    cli_rel = f"node_modules/{pkg}/{script.removeprefix('./')}"
    text = (
        "#!/bin/sh\n"
        f"# written by harnessfit: {pkg} runs on {private}@{PRIVATE_NODE_VERSION} (its engines.node asks for more\n"
        "# than this machine's node)\n"
        'here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)\n'
        f'exec "$here/{node_rel}" "$here/{cli_rel}" "$@"\n'
    )
    wrapper = folder / _WRAPPER
    wrapper.write_text(text, encoding="utf-8")
    wrapper.chmod(0o755)


def pi_binary(version: str = DEFAULT_PI_VERSION) -> Path:
    """Path of an installed Pi binary; a UserError that says how to install it when it is missing."""
    binary = _entry(harness_dir("pi", version))
    if not binary.exists():
        raise UserError(f"Pi {version} is not installed: run `harnessfit harness install pi --version {version}`")
    return binary


# -- the CLI's own switches (``pi --help``) ------------------------------------------------------------------

_BASE_ISOLATION = ("--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes")
_ISOLATION_IF_OFFERED = (
    "--no-approve",  # 0.79+: ignore project-local .pi/ files (settings, extensions) instead of the trust prompt
    "--no-mcp",  # 1.x: no built-in MCP servers or mcp__ tools
)


@dataclass(frozen=True)
class PiCli:
    """What ``pi --help`` documents: long options (``--no-approve`` …) and Pi's own environment variables."""

    options: tuple[str, ...]
    env: tuple[str, ...]


def parse_help(text: str) -> PiCli:
    """Long option names and ``PI_*`` environment variables from ``pi --help``, in the order printed."""
    options: list[str] = []
    env: list[str] = []
    for line in text.splitlines():
        m = re.match(r"\s{2}(--[a-z][a-z0-9-]*)\b", line)
        if m and m.group(1) not in options and m.group(1) != "--":
            options.append(m.group(1))
        m = re.match(r"\s{2}(PI_[A-Z0-9_]+)\s+-\s", line)
        if m and m.group(1) not in env:
            env.append(m.group(1))
    return PiCli(tuple(options), tuple(env))


@functools.cache
def pi_cli(version: str) -> PiCli:
    """The installed Pi ``version``'s documented switches (``pi --help`` run once per process, isolated HOME)."""
    binary = pi_binary(version)
    with tempfile.TemporaryDirectory(prefix="harnessfit-help-") as tmp:
        try:
            proc = subprocess.run(
                [str(binary), "--help"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
                env=pi_env(Path(tmp)),
                cwd=tmp,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UserError(f"`pi --help` of Pi {version} did not run: {exc}") from exc
    cli = parse_help(proc.stdout + "\n" + proc.stderr)  # 0.73.1 prints its help on stderr, 1.x on stdout
    if proc.returncode != 0 or "--mode" not in cli.options:
        raise UserError(f"`pi --help` of Pi {version} printed no option list (exit {proc.returncode})")
    return cli


def isolation_flags(options: Sequence[str]) -> list[str]:
    """The switches of an unattended run for a CLI offering ``options``: no extension/skill/template/theme
    discovery, plus ``--no-approve`` / ``--no-mcp`` where the version has them."""
    missing = [flag for flag in (*_BASE_ISOLATION, "--no-context-files") if flag not in options]
    if missing:
        raise UserError(f"this Pi has no {', '.join(missing)}: harnessfit cannot run it isolated")
    return [*_BASE_ISOLATION, *(flag for flag in _ISOLATION_IF_OFFERED if flag in options)]


@functools.cache
def run_flags(version: str) -> tuple[str, ...]:
    """The isolation flags of unattended runs of Pi ``version``: the committed card's (captured from this CLI's
    ``--help`` and re-checked against it in CI), else derived from the installed CLI's ``--help``."""
    # harness.card pulls jsonschema: harness.pi stays light for the source formats (see harness/pi/__init__.py)
    from harnessfit.harness.card import card_path, load_card

    if card_path("pi", version).is_file():
        card = load_card("pi", version)
        if card.package == installed_package(version):
            return tuple(card.cli["isolation_flags"])
    return tuple(isolation_flags(pi_cli(version).options))


def write_pi_agent_config(
    agent_dir: Path,
    base_url: str,
    model_id: str,
    *,
    context_window: int = 32768,
    max_tokens: int = 4096,
    eval_settings: bool = True,
    reasoning: bool = False,
    api_key: str = "dummy",
) -> None:
    """Write ``models.json`` (one ``local`` provider pointing at ``base_url``) and ``settings.json`` into ``agent_dir``.

    ``eval_settings`` turns off retries and auto-compaction so that one model reply is one request (otherwise an
    HTTP 500 turns into a dozen retried requests and compaction sends summarisation requests of its own).
    """
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            _PROVIDER: {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": api_key,
                "compat": {
                    "supportsDeveloperRole": False,
                    "supportsStore": False,
                    "supportsReasoningEffort": False,
                    "maxTokensField": "max_tokens",
                },
                "models": [
                    {
                        "id": model_id,
                        "reasoning": reasoning,
                        "contextWindow": context_window,
                        "maxTokens": max_tokens,
                    }
                ],
            }
        }
    }
    settings: dict[str, Any] = {"quietStartup": True}
    if eval_settings:
        settings = {
            "retry": {"enabled": False, "provider": {"maxRetries": 0}},
            "compaction": {"enabled": False},
            "quietStartup": True,
        }
    (agent_dir / "models.json").write_bytes(orjson.dumps(models, option=orjson.OPT_INDENT_2))
    (agent_dir / "settings.json").write_bytes(orjson.dumps(settings, option=orjson.OPT_INDENT_2))


def pi_env(home: Path, agent_dir: Path | None = None) -> dict[str, str]:
    """An isolated environment for one Pi run: its own HOME, offline mode, PATH (and locale/timezone) kept."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PI_OFFLINE": "1",  # no update checks or downloads
        "PI_TELEMETRY": "0",  # no install telemetry (documented by every captured version's --help)
        "PI_CODING_AGENT_DIR": str(agent_dir if agent_dir is not None else home / ".pi" / "agent"),
        "NO_COLOR": "1",
    }
    for key in ("LANG", "LC_ALL", "TZ", "TMPDIR", "NODE_OPTIONS"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def pi_command(
    version: str,
    model_id: str,
    prompt: str,
    *,
    session_dir: Path | str | None = None,
    tools: Sequence[str] = ("read", "bash", "edit", "write"),
    extra_args: Sequence[str] = (),
    context_files: bool = False,
) -> list[str]:
    """The argument list of one unattended json-mode run: the isolation flags this version offers
    (``isolation_flags``), ``-nc`` unless ``context_files``."""
    cmd = [str(pi_binary(version)), "--mode", "json", *run_flags(version)]
    if not context_files:
        cmd.append("-nc")
    cmd += ["--model", f"{_PROVIDER}/{model_id}", "--tools", ",".join(tools)]
    if session_dir is not None:
        cmd += ["--session-dir", str(session_dir)]
    cmd += list(extra_args)
    cmd.append(prompt)
    return cmd


@dataclass
class PiRun:
    """What one Pi run left: exit code, the json-mode events in order, stderr, and whether it timed out."""

    returncode: int
    events: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""
    timed_out: bool = False
    unparsed: list[str] = field(default_factory=list)

    def messages(self) -> list[dict[str, Any]]:
        """Messages from ``message_end`` events (assistant turns and tool results), in order."""
        return [e["message"] for e in self.events if e.get("type") == "message_end" and "message" in e]

    def tool_results(self) -> list[dict[str, Any]]:
        """``tool_execution_end`` events: ``toolCallId``, ``toolName``, ``result``, ``isError``."""
        return [e for e in self.events if e.get("type") == "tool_execution_end"]

    def stop_reason(self) -> str | None:
        """``stopReason`` of the last assistant message (json mode exits 0 even when the endpoint failed)."""
        for msg in reversed(self.messages()):
            if msg.get("role") == "assistant":
                return msg.get("stopReason")
        return None


def run_pi(cmd: Sequence[str], *, cwd: Path, env: dict[str, str], timeout: float = 120.0) -> PiRun:
    """Run a ``pi_command`` with stdin from /dev/null and parse its json event stream."""
    try:
        proc = subprocess.run(
            list(cmd), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout
        )
        out, err, code, timed_out = proc.stdout, proc.stderr, proc.returncode, False
    except subprocess.TimeoutExpired as exc:
        out, err, code, timed_out = exc.stdout or b"", exc.stderr or b"", 124, True
    except OSError as exc:
        raise UserError(f"could not start Pi ({cmd[0]}): {exc}") from exc
    run = PiRun(returncode=code, stderr=err.decode("utf-8", "replace"), timed_out=timed_out)
    for line in out.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            run.unparsed.append(line)
            continue
        if isinstance(event, dict):
            run.events.append(event)
        else:
            run.unparsed.append(line)
    return run

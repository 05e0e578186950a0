"""CLI commands of the harness stage (thin: parse options, call the stage's public functions, print)."""

from __future__ import annotations

import datetime as _dt
import difflib
import re
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.markup import escape

from harnessfit.errors import UserError
from harnessfit.harness.card import card_path, load_card, load_harness
from harnessfit.harness.diff import card_diff
from harnessfit.harness.pi import install_pi, installed_package
from harnessfit.harness.pi.capture import capture_pi
from harnessfit.harness.versions import DEFAULT_PI_VERSION

__all__ = ["register"]

harness_app = typer.Typer(
    name="harness",
    help="Install the real agent harness (Pi), capture its HarnessCard, render its exact prompt, validate tool calls.",
    no_args_is_help=True,
)

HarnessArg = Annotated[str, typer.Argument(help="Harness name (only `pi` so far).")]
VersionOpt = Annotated[str, typer.Option("--version", "-v", help="Harness version.")]


def _check_harness(name: str) -> None:
    if name != "pi":
        raise UserError(f"unknown harness {name!r}: only `pi` is supported")


@harness_app.command("install")
def install_cmd(
    harness: HarnessArg = "pi",
    version: VersionOpt = DEFAULT_PI_VERSION,
    package: Annotated[
        str | None,
        typer.Option(
            "--package",
            help="npm package to install (default: the scope the version is published under: "
            "@mariozechner/pi-coding-agent up to 0.73.x, @earendil-works/pi-coding-agent from 0.74.0).",
        ),
    ] = None,
    node: Annotated[
        str,
        typer.Option(
            "--node",
            help="auto: when the version's engines.node asks for more than this machine's node, "
            "install Node.js from npm beside it; system: refuse instead.",
        ),
    ] = "auto",
) -> None:
    """Install the harness CLI from npm into harnessfit's own folder (idempotent) and check `pi --version`."""
    _check_harness(harness)
    console = Console(stderr=True)
    binary = install_pi(
        version,
        package=package,
        node=node,
        say=lambda msg: console.print(f"[dim]install:[/] {escape(msg)}", highlight=False, soft_wrap=True),
    )
    typer.echo(f"pi {version} installed ({installed_package(version)}): {binary}")


@harness_app.command("capture")
def capture_cmd(
    harness: HarnessArg = "pi",
    version: VersionOpt = DEFAULT_PI_VERSION,
    out: Annotated[Path | None, typer.Option("--out", help="Write the captured card JSON here.")] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 when the capture differs from the committed card (or none exists).")
    ] = False,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            help="Capture a card profile: 'tools' runs Pi with its optional "
            "grep/find/ls tools on (needs ripgrep and fd).",
        ),
    ] = None,
) -> None:
    """Run the real harness against a scripted endpoint, build its HarnessCard, and diff it with the committed one."""
    _check_harness(harness)
    console = Console(stderr=True)
    card = capture_pi(
        version, profile=profile, progress=lambda msg: console.print(f"[dim]capture:[/] {escape(msg)}", highlight=False)
    )
    data = card.to_json_bytes()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        typer.echo(f"wrote {out}")
    committed = card_path(harness, version, profile)
    typer.echo(
        f"{card.id} sha256 {card.sha256}: {len(card.tools)} tools, "
        f"{len(card.results)} result texts, {len(card.errors)} error texts"
    )
    if not committed.is_file():
        typer.echo(f"no committed card for {card.id}; comparing with the default version's card")
        committed = card_path(harness, DEFAULT_PI_VERSION)
        if check:
            _print_diff(committed.read_bytes(), data, committed.name)
            raise typer.Exit(1)
    old = committed.read_bytes()
    if old == data:
        typer.echo(f"capture equals the committed card {committed.name}")
        return
    _print_diff(old, data, committed.name)
    typer.echo(f"capture differs from the committed card {committed.name}")
    if check:
        raise typer.Exit(1)


def _print_diff(old: bytes, new: bytes, name: str) -> None:
    diff = difflib.unified_diff(
        old.decode().splitlines(), new.decode().splitlines(), f"committed/{name}", "captured", lineterm=""
    )
    typer.echo("\n".join(diff))


def _card_of(spec: str):
    if "@" not in spec:
        raise UserError(f"give a harness version as pi@VERSION, got {spec!r}")
    return load_harness(spec)


@harness_app.command("diff")
def diff_cmd(
    a: Annotated[str, typer.Argument(help="The card a trace or model was made for, e.g. pi@0.73.1.")],
    b: Annotated[str, typer.Argument(help="The card to compare it with, e.g. pi@1.6.0.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as one JSON object.")] = False,
) -> None:
    """What differs between two committed harness cards, section by section (prompt as a unified diff, tools,
    serialisation, result and error texts, probe behaviour, CLI switches, session format)."""
    diff = card_diff(_card_of(a), _card_of(b))
    if as_json:
        typer.echo(orjson.dumps(diff.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        typer.echo(diff.render())


@harness_app.command("render")
def render_cmd(
    cwd: Annotated[Path | None, typer.Option("--cwd", help="Working directory Pi runs in (default: current).")] = None,
    date: Annotated[str | None, typer.Option("--date", help="Date in the prompt, YYYY-MM-DD (default: today).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print {system, tools} as one JSON object.")] = False,
    context_file: Annotated[
        list[Path] | None, typer.Option("--context-file", help="A context file (AGENTS.md…) to append; repeatable.")
    ] = None,
    install_dir: Annotated[
        str | None, typer.Option("--install-dir", help="Pi package folder named in the prompt (default: harnessfit's).")
    ] = None,
    harness: Annotated[str, typer.Option("--harness", help="Harness name.")] = "pi",
    version: VersionOpt = DEFAULT_PI_VERSION,
) -> None:
    """Print the exact system prompt and tools the harness would send for a working directory and date."""
    _check_harness(harness)
    card = load_card(harness, version)
    day = date or _dt.date.today().isoformat()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        raise UserError(f"--date must look like YYYY-MM-DD, got {day!r}")
    where = str((cwd or Path.cwd()).expanduser().absolute())
    files = []
    for path in context_file or []:
        if not path.is_file():
            raise UserError(f"context file not found: {path}")
        files.append((str(path.expanduser().absolute()), path.read_text(encoding="utf-8")))
    prompt = card.render_system_prompt(where, day, files, install_dir=install_dir)
    if as_json:
        typer.echo(
            orjson.dumps({"card": card.id, "system": prompt, "tools": card.tools}, option=orjson.OPT_INDENT_2).decode()
        )
    else:
        typer.echo(prompt)
        typer.echo("\n--- tools (JSON, as sent) ---")
        typer.echo(orjson.dumps(card.tools, option=orjson.OPT_INDENT_2).decode())


@harness_app.command("card")
def card_cmd(
    harness: HarnessArg = "pi",
    version: VersionOpt = DEFAULT_PI_VERSION,
) -> None:
    """Print a summary of the committed HarnessCard (id, hash, tools, result and error texts)."""
    _check_harness(harness)
    card = load_card(harness, version)
    typer.echo(f"card     {card.id}  ({card_path(harness, version)})")
    typer.echo(f"sha256   {card.sha256}")
    typer.echo(f"package  {card.package} (node {card.engines_node or 'any'}; card format {card.format})")
    typer.echo(f"flags    {' '.join(card.cli.get('isolation_flags', []))}")
    typer.echo(f"request  {', '.join(card.request['keys'])}")
    typer.echo(f"prompt   variables: {', '.join(card.system_prompt.variables)}")
    typer.echo(f"tools    {', '.join(card.default_tools)}")
    typer.echo(f"results  {', '.join(card.results)}")
    typer.echo(f"errors   {', '.join(card.errors)}")


@harness_app.command("validate")
def validate_cmd(
    name: Annotated[str, typer.Argument(help="Tool name, e.g. read.")],
    arguments: Annotated[str, typer.Argument(help='Raw arguments text, e.g. \'{"path":"a.txt"}\'.')],
    harness: Annotated[str, typer.Option("--harness", help="Harness name.")] = "pi",
    version: VersionOpt = DEFAULT_PI_VERSION,
) -> None:
    """Check one tool call against the card; exit 1 when the harness would refuse it (errors), 0 otherwise."""
    _check_harness(harness)
    found = load_card(harness, version).validate_call(name, arguments)
    if not found:
        typer.echo("ok")
    for v in found:
        typer.echo(f"{v.severity:7} {v.code}: {v.detail}")
    if any(v.severity == "error" for v in found):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.add_typer(harness_app, name="harness")

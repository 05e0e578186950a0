"""Mapping registry: source format → mapping object (lazy import strings, one line per format)."""

from __future__ import annotations

import importlib
from functools import cache

from harnessfit.convert.mappings.base import Mapping
from harnessfit.errors import UserError

__all__ = ["MAPPINGS", "get_mapping"]

MAPPINGS: dict[str, str] = {
    "pi": "harnessfit.convert.mappings.pi:PiMapping",
    "claude_code": "harnessfit.convert.mappings.claude_code:ClaudeCodeMapping",
    "codex": "harnessfit.convert.mappings.codex:CodexMapping",
    "swe_agent": "harnessfit.convert.mappings.swe_agent:SweAgentMapping",
    "openhands": "harnessfit.convert.mappings.openhands:OpenHandsMapping",
    "openai_chat": "harnessfit.convert.mappings.openai_chat:OpenAIChatMapping",
}
"""format name (same names as ``harnessfit.traces.readers.registry.FORMATS``) → ``module:Class``."""


@cache
def _load(fmt: str) -> Mapping:
    module_name, _, cls_name = MAPPINGS[fmt].partition(":")
    return getattr(importlib.import_module(module_name), cls_name)()


def get_mapping(fmt: str) -> Mapping:
    """The mapping for a source format; ``UserError`` for an unknown format name."""
    if fmt not in MAPPINGS:
        raise UserError(f"no mapping registered for format {fmt!r}")
    return _load(fmt)

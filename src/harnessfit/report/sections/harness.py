"""Harness section: the harness card(s) the run captured (``harness/<harness>-<version>.json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from harnessfit.harness.card import HarnessCard, card_path
from harnessfit.report.sections._files import copy_in
from harnessfit.report.site import Section, render

__all__ = ["section"]


def _card_facts(path: Path) -> dict[str, Any]:
    data = orjson.loads(path.read_bytes())
    facts: dict[str, Any] = {
        "file": path.name,
        "harness": data.get("harness"),
        "version": data.get("version"),
        "default_tools": data.get("default_tools") or [],
        "sha256": None,
        "equals_committed": None,
        "params": (data.get("request") or {}).get("params") or {},
    }
    try:
        card = HarnessCard.model_validate(data)
        facts["id"], facts["sha256"] = card.id, card.sha256
        committed = card_path(card.harness, card.version)
        if committed.is_file():
            facts["equals_committed"] = committed.read_bytes() == path.read_bytes()
    except Exception:  # noqa: BLE001 - a card of another layout is still shown from its JSON
        facts["id"] = f"{facts['harness']}-{facts['version']}"
    tools = []
    for t in data.get("tools") or []:
        fn = t.get("function", t) if isinstance(t, dict) else {}
        params = fn.get("parameters") or {}
        required = set(params.get("required") or [])
        tools.append(
            {
                "name": fn.get("name"),
                "description": (fn.get("description") or "").split("\n")[0],
                "params": [(p, p in required) for p in (params.get("properties") or {})],
            }
        )
    facts["tools"] = tools
    parts = (data.get("system_prompt") or {}).get("parts") or []
    facts["system_prompt"] = "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in parts)
    facts["examples"] = len(data.get("examples") or [])
    facts["errors"] = len(data.get("errors") or {})
    return facts


def section(run_dir: Path) -> Section | None:
    cards = sorted((run_dir / "harness").glob("*.json")) if (run_dir / "harness").is_dir() else []
    if not cards:
        return None
    files: dict = {}
    facts = []
    for path in cards:
        f = _card_facts(path)
        f["link"] = copy_in(files, run_dir, path)
        facts.append(f)
    first = facts[0]
    summary = f"card {first['id']}, {len(first['tools'])} tools"
    if first["equals_committed"] is not None:
        summary += ", equals the committed card" if first["equals_committed"] else ", DIFFERS from the committed card"
    return Section(
        "harness", "Harness card", render("sections/harness.html.jinja", cards=facts), summary=summary, files=files
    )

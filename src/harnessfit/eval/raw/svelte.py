"""The Svelte 5 checker: the real compiler in runes mode, and a modern-Svelte policy (harnessfit's rules over the
compiler's AST plus the issues of ``@sveltejs/mcp``'s autofixer), from harnessfit's pinned toolchain.

- compile: ``compile(code, {runes: true})``. An error (with its code, e.g. ``legacy_export_invalid``) or any warning
  (e.g. ``a11y_missing_attribute``, ``non_reactive_update``) makes it unclean; ``compiles`` counts error-free code.
- policy: the rules of ``harnessfit.eval.raw.svelte_rules`` (judged on the parse, so also for code that does not
  compile) and the autofixer's issues other than compiler warnings (it runs only on code that compiles). The
  autofixer's suggestions are recorded as notes and do not count. Code the parser cannot read has no policy to
  judge: its policy check fails with ``unparseable``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from importlib import resources
from typing import Any

from harnessfit.errors import UserError
from harnessfit.eval.raw.checkers import BaseChecker, CodeChecks
from harnessfit.eval.raw.findings import Check, Diagnostic
from harnessfit.eval.raw.svelte_rules import POLICY_RULES, policy_findings
from harnessfit.eval.raw.toolchain import SVELTE_MCP_VERSION, SVELTE_VERSION, svelte_toolchain

__all__ = ["SvelteChecker"]

_TIMEOUT_S = 600


def _script() -> str:
    return (resources.files("harnessfit.eval.raw") / "svelte_check.mjs").read_text(encoding="utf-8")


def _diag(d: dict[str, Any], severity: str) -> Diagnostic:
    return Diagnostic(
        code=str(d.get("code") or "unknown"),
        message=str(d.get("message") or ""),
        severity=severity,
        source="svelte",
        line=d.get("line"),
        column=d.get("column"),
    )


class SvelteChecker(BaseChecker):
    language = "svelte"
    tags = ("svelte", "html")

    def __init__(self, *, autofixer: bool = True) -> None:
        self.autofixer = autofixer
        self.node_versions: dict[str, str] = {}

    def describe(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "fence_tags": list(self.tags),
            "svelte": SVELTE_VERSION,
            "@sveltejs/mcp": SVELTE_MCP_VERSION if self.autofixer else None,
            **self.node_versions,
            "compile": "compile(code, {runes: true, generate: 'client'}); errors and warnings count",
            "policy_rules": POLICY_RULES,
            "policy_autofixer": "svelteAutofixer issues except compiler warnings; suggestions are notes"
            if self.autofixer
            else "disabled",
        }

    def run_node(self, codes: Sequence[str]) -> dict[str, Any]:
        """The raw JSON the Node checker prints for ``codes`` (ids are their indexes)."""
        folder = svelte_toolchain()
        request = {"items": [{"id": str(i), "code": c} for i, c in enumerate(codes)], "autofixer": self.autofixer}
        try:
            proc = subprocess.run(
                ["node", "--input-type=module", "-e", _script()],
                cwd=folder,
                input=json.dumps(request).encode(),
                capture_output=True,
                timeout=_TIMEOUT_S,
            )
        except FileNotFoundError as exc:
            raise UserError("node not found on PATH: the Svelte checker needs Node.js >= 20.6") from exc
        except subprocess.TimeoutExpired as exc:
            raise UserError(f"the Svelte checker took over {_TIMEOUT_S} s on {len(codes)} answers") from exc
        if proc.returncode != 0:
            tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
            raise UserError(f"the Svelte checker failed (exit {proc.returncode}): {' | '.join(tail)}")
        try:
            return json.loads(proc.stdout)
        except ValueError as exc:
            raise UserError(f"the Svelte checker printed no JSON ({exc})") from exc

    def check(self, codes: Sequence[str]) -> list[CodeChecks | str]:
        if not codes:
            return []
        data = self.run_node(codes)
        self.node_versions = {"node": data["versions"]["node"]}
        if data["versions"]["svelte"] != SVELTE_VERSION:
            raise UserError(f"the Svelte toolchain loaded svelte {data['versions']['svelte']}, not {SVELTE_VERSION}")
        by_id = {r["id"]: r for r in data["results"]}
        return [self._one(code, by_id.get(str(i))) for i, code in enumerate(codes)]

    def _one(self, code: str, result: dict[str, Any] | None) -> CodeChecks | str:
        if result is None:
            return "the Svelte checker returned nothing for this answer"
        if "crash" in result:
            return f"the Svelte checker crashed: {str(result['crash']).splitlines()[0]}"
        comp = result["compile"]
        compile_findings = ([_diag(comp["error"], "error")] if comp["error"] else []) + [
            _diag(w, "warning") for w in comp["warnings"]
        ]
        parse = result["parse"]
        if parse["ast"] is None:
            err = parse["error"]
            policy = [
                Diagnostic(
                    code="unparseable",
                    source="svelte",
                    line=err.get("line"),
                    column=err.get("column"),
                    message=f"the parser cannot read the component: {err.get('code')}: {err.get('message')}",
                )
            ]
        else:
            policy = policy_findings(parse["ast"], code)
        fixer = result.get("autofixer") or {}
        policy += [Diagnostic(code="autofixer_issue", message=m, source="autofixer") for m in fixer.get("issues", [])]
        policy += [
            Diagnostic(code="autofixer_suggestion", message=m, severity="note", source="autofixer")
            for m in fixer.get("suggestions", [])
        ]
        return CodeChecks(compile=Check.of(compile_findings), policy=Check.of(policy), compiles=not comp["error"])

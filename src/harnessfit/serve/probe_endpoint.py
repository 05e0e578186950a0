"""Start-up probe: can this endpoint feed a trainer that learns from what it sampled? Asked before rollouts are spent.

An endpoint served without the capture options still answers every request with text and a 200; the missing token
ids or unprocessed logprobs show up only as a run that trains on nothing, or on a wrong importance ratio. So, like
OpenEnv's ``harbor_env`` start-up check (``openenv/core/harness/capture/validate_llm.py`` in OpenEnv 0.10.0: a live
completion graded for ids, the top-2 logprob gap compared at two temperatures, a tool prompt), three live checks:

1. **token ids** (fatal): a non-streaming completion asked with vLLM's ``return_token_ids`` and ``logprobs`` returns
   the prompt's ids (``prompt_token_ids``), the sampled ids (``choices[0].token_ids``) and one finite, non-positive
   logprob per sampled id (``choices[0].logprobs.content``) — the fields ``serve.token_api`` documents.
2. **processed logprobs** (fatal): the logprob gap between two of the most likely first tokens of one prompt, asked
   at temperature 1 and 2. Processed logprobs are ``log_softmax(logits / T)``, so the gap is ``(a - b) / T`` and
   halves; raw (pre-temperature) logprobs — vLLM's default ``raw_logprobs`` mode — keep it. OpenEnv compares the top
   two; this compares the first and the last of the top five, the same test, and one that a small model's flat
   first-token distribution (SmolLM2-135M: top-2 gap 0.23) does not make unmeasurable. A gap too small to divide
   (< 0.5) or a sentinel (|logprob| > 100) is no evidence either way: a warning, not a failure.
3. **tool call** (warning only): a trivial prompt offering one tool comes back with a parsed tool call. A weak
   model may answer in prose; rollouts still run, so it does not stop anything.

A failed fatal check is one line naming what the endpoint lacks and the fix (``ProbeReport.problem``);
``require_training_endpoint`` raises it as a ``UserError`` for trainers to call before their first rollout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import httpx

from harnessfit.errors import UserError

__all__ = ["VLLM_FLAGS", "ProbeCheck", "ProbeReport", "probe_endpoint", "require_training_endpoint", "served_model"]

VLLM_FLAGS = "--return-tokens-as-token-ids --logprobs-mode processed_logprobs"
_SENTINEL = 100.0  # above this a "logprob" is an engine's stand-in for -inf (vLLM writes -9999), not a value
_MIN_GAP = 0.5  # a flatter top-2 makes the T=1 / T=2 ratio noise
_TOOL = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]


@dataclass
class ProbeCheck:
    """One check: its name, whether it passed, whether failing it stops training, and what was seen."""

    name: str
    ok: bool
    fatal: bool
    detail: str


@dataclass
class ProbeReport:
    base_url: str
    model_id: str
    checks: list[ProbeCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks if c.fatal)

    @property
    def problem(self) -> str | None:
        """The first failed fatal check as one line, or None."""
        failed = next((c for c in self.checks if c.fatal and not c.ok), None)
        return None if failed is None else f"endpoint {self.base_url} ({self.model_id}): {failed.detail}"

    @property
    def warnings(self) -> list[str]:
        return [f"{c.name}: {c.detail}" for c in self.checks if not c.fatal and not c.ok]


def _post(client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    reply = client.post(url, json=body, headers=headers)
    if reply.status_code != 200:
        raise ValueError(f"HTTP {reply.status_code}: {reply.text[:200]}")
    return reply.json()


def _check_ids(payload: dict[str, Any]) -> ProbeCheck:
    choice = (payload.get("choices") or [{}])[0]
    prompt, sampled = payload.get("prompt_token_ids"), choice.get("token_ids")
    content = (choice.get("logprobs") or {}).get("content") or []
    fix = f"serve vLLM with {VLLM_FLAGS} (the request sends return_token_ids), or use `harnessfit serve`"
    if not prompt or not sampled:
        lacks = " and ".join(n for n, v in (("prompt_token_ids", prompt), ("choices[0].token_ids", sampled)) if not v)
        return ProbeCheck("token_ids", False, True, f"returns no {lacks}; {fix}")
    if any(type(t) is not int or t < 0 for t in [*prompt, *sampled]):
        return ProbeCheck("token_ids", False, True, "returns token ids that are not non-negative integers")
    values = [e.get("logprob") if isinstance(e, dict) else None for e in content]
    if len(values) != len(sampled):
        return ProbeCheck(
            "token_ids",
            False,
            True,
            f"returns {len(values)} logprobs for {len(sampled)} sampled ids "
            f"(logprobs.content must align with token_ids); {fix}",
        )
    if any(isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v > 0 for v in values):
        return ProbeCheck("token_ids", False, True, "returns logprobs that are not finite non-positive numbers")
    return ProbeCheck("token_ids", True, True, f"{len(prompt)} prompt ids, {len(sampled)} sampled ids with logprobs")


def _top_gap(payload: dict[str, Any]) -> float | None:
    entries = ((payload.get("choices") or [{}])[0].get("logprobs") or {}).get("content") or []
    alternatives = (entries[0] or {}).get("top_logprobs") if entries else None
    values = sorted(
        (
            float(t["logprob"])
            for t in alternatives or []
            if isinstance(t, dict) and isinstance(t.get("logprob"), int | float)
        ),
        reverse=True,
    )
    if len(values) < 2 or abs(values[-1]) > _SENTINEL:
        return None
    return values[0] - values[-1]


def _check_processed(client: httpx.Client, url: str, model_id: str, headers: dict[str, str]) -> ProbeCheck:
    gaps = []
    for temperature in (1.0, 2.0):
        body = {
            "model": model_id,
            "messages": [{"role": "user", "content": "Reply with exactly: hello"}],
            "max_tokens": 1,
            "temperature": temperature,
            "logprobs": True,
            "top_logprobs": 5,
        }
        gaps.append(_top_gap(_post(client, url, body, headers)))
    if gaps[0] is None or gaps[1] is None or gaps[0] < _MIN_GAP:
        return ProbeCheck(
            "processed_logprobs",
            False,
            False,
            "could not tell processed from raw logprobs (no top-2 "
            "alternatives, or a first-token distribution too flat or too peaked to measure)",
        )
    ratio = gaps[1] / gaps[0]
    seen = f"top-1/top-5 gap {gaps[0]:.3f} at T=1, {gaps[1]:.3f} at T=2 (ratio {ratio:.2f})"
    if abs(ratio - 1.0) < abs(ratio - 0.5):
        return ProbeCheck(
            "processed_logprobs",
            False,
            True,
            f"returns raw (pre-temperature) logprobs: {seen}; serve vLLM with {VLLM_FLAGS}",
        )
    return ProbeCheck("processed_logprobs", True, True, seen)


def _check_tool_call(
    client: httpx.Client, url: str, model_id: str, headers: dict[str, str], max_tokens: int
) -> ProbeCheck:
    body = {
        "model": model_id,
        "messages": [{"role": "user", "content": "Use the bash tool to list the files in /tmp."}],
        "tools": _TOOL,
        "tool_choice": "auto",
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    choice = (_post(client, url, body, headers).get("choices") or [{}])[0]
    if (choice.get("message") or {}).get("tool_calls"):
        return ProbeCheck("tool_call", True, False, "a parsed tool call came back")
    why = "the reply was cut at max_tokens" if choice.get("finish_reason") == "length" else "it answered in prose"
    return ProbeCheck(
        "tool_call",
        False,
        False,
        f"no tool call for a trivial tool prompt ({why}); a weak model "
        "may still learn to call tools, but its first rollouts will likely stall",
    )


def probe_endpoint(
    base_url: str,
    model_id: str,
    *,
    api_key: str | None = None,
    timeout: float = 120.0,
    tool_max_tokens: int = 128,
    client: httpx.Client | None = None,
) -> ProbeReport:
    """Run the three checks against ``base_url`` (an OpenAI-compatible root ending in ``/v1``) for ``model_id``.

    ``client``: an ``httpx.Client`` to send through (tests pass an in-process one); by default a new one with
    ``timeout``. An endpoint that cannot be reached or refuses a probe request fails the check that asked.
    """
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {api_key or 'harnessfit-probe'}"}
    own = client is None
    http = client or httpx.Client(timeout=timeout)
    report = ProbeReport(base_url, model_id)
    try:
        try:
            body = {
                "model": model_id,
                "messages": [{"role": "user", "content": "Reply with the single word: ok"}],
                "max_tokens": 8,
                "temperature": 0,
                "logprobs": True,
                "top_logprobs": 0,
                "return_token_ids": True,
            }
            report.checks.append(_check_ids(_post(http, url, body, headers)))
        except (httpx.HTTPError, ValueError) as exc:
            report.checks.append(
                ProbeCheck("token_ids", False, True, f"a completion asking for token ids failed: {exc}")
            )
            return report
        for name, fatal, run in (
            ("processed_logprobs", True, lambda: _check_processed(http, url, model_id, headers)),
            ("tool_call", False, lambda: _check_tool_call(http, url, model_id, headers, tool_max_tokens)),
        ):
            try:
                report.checks.append(run())
            except (httpx.HTTPError, ValueError) as exc:
                report.checks.append(ProbeCheck(name, False, fatal, f"the probe request failed: {exc}"))
    finally:
        if own:
            http.close()
    return report


def served_model(base_url: str, timeout: float = 30.0) -> str:
    """The first model id ``GET /models`` lists; a one-line ``UserError`` when there is none or no answer."""
    try:
        reply = httpx.get(base_url.rstrip("/") + "/models", timeout=timeout)
        data = reply.json().get("data") if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        raise UserError(f"cannot list the models of {base_url}: {exc} (give --model-id)") from None
    if not data or not isinstance(data[0], dict) or not data[0].get("id"):
        raise UserError(f"{base_url}/models lists no model (give --model-id)")
    return str(data[0]["id"])


def require_training_endpoint(base_url: str, model_id: str, **options: Any) -> ProbeReport:
    """``probe_endpoint``, raising a one-line ``UserError`` when a fatal check failed (a trainer calls this before
    its first rollout); warnings are left in the returned report for the caller to print."""
    report = probe_endpoint(base_url, model_id, **options)
    if report.problem is not None:
        raise UserError(report.problem)
    return report

"""What the judge is asked and how its answers are read: the blinded pairwise prompt, the standalone rubric, and the
two parsers. Both texts are versioned; results record each version, its text and its SHA-256, so two reports
compare only when they asked the same questions.

Blinding: the judge sees the request and two responses called "Response 1" and "Response 2" — never a model name,
a results path or a check result — and each pair is asked twice with the order reversed.

Parsing: the *last* ``VERDICT: 1|2|TIE`` (``SCORE: 1..5``) line of the answer counts (case-insensitive, optional
Markdown bold); an answer without one is *unparseable*, which is counted and kept out of wins, ties and means.
"""

from __future__ import annotations

import re
from typing import Literal

from harnessfit.core.jsonio import sha256_bytes

__all__ = [
    "PAIRWISE_VERSION",
    "PAIRWISE_SYSTEM",
    "PAIRWISE_TEMPLATE",
    "RUBRIC_VERSION",
    "RUBRIC_TEXT",
    "pairwise_messages",
    "rubric_messages",
    "parse_verdict",
    "parse_score",
    "prompt_versions",
]

PAIRWISE_VERSION = 1
PAIRWISE_SYSTEM = (
    "You are a strict, impartial reviewer of code written in answer to a request. You judge only "
    "what the responses contain, never their order or their length."
)
PAIRWISE_TEMPLATE = """Request:
<request>
{request}
</request>

<response_1>
{first}
</response_1>

<response_2>
{second}
</response_2>

Which response answers the request better: correct and complete code, idiomatic for the requested language and
version, in the requested output shape? Reason briefly if you need to, then end with exactly one line:
VERDICT: 1, VERDICT: 2, or VERDICT: TIE."""

RUBRIC_VERSION = 1
RUBRIC_TEXT = """Score the response to the request on this scale:
5 - correct and complete; idiomatic for the requested language and version; exactly the requested output shape.
4 - correct and complete, with minor problems of style or output shape.
3 - mostly works, but has a real defect: a missed requirement, a bug in an edge case, or outdated idioms.
2 - substantially wrong or incomplete, though it addresses the request.
1 - does not address the request, or is not code."""
RUBRIC_TEMPLATE = """{rubric}

Request:
<request>
{request}
</request>

<response>
{response}
</response>

Reason briefly if you need to, then end with exactly one line: SCORE: n (n is 1, 2, 3, 4 or 5)."""

_VERDICT = re.compile(r"verdict\s*:\s*\**\s*(1|2|tie)\b", re.IGNORECASE)
_SCORE = re.compile(r"score\s*:\s*\**\s*([0-9]+)\b", re.IGNORECASE)

PairVerdict = Literal["1", "2", "tie"]  # which answer of a pair the judge prefers


def pairwise_messages(request: str, first: str, second: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": PAIRWISE_SYSTEM},
        {"role": "user", "content": PAIRWISE_TEMPLATE.format(request=request, first=first, second=second)},
    ]


def rubric_messages(request: str, response: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": PAIRWISE_SYSTEM},
        {"role": "user", "content": RUBRIC_TEMPLATE.format(rubric=RUBRIC_TEXT, request=request, response=response)},
    ]


def parse_verdict(text: str) -> PairVerdict | None:
    """``"1"``, ``"2"`` or ``"tie"`` from the last verdict line; None when there is none."""
    found = _VERDICT.findall(text or "")
    return found[-1].lower() if found else None


def parse_score(text: str) -> int | None:
    """The last ``SCORE: n`` with n in 1..5; None when there is none or it is off the scale."""
    found = _SCORE.findall(text or "")
    if not found:
        return None
    value = int(found[-1])
    return value if 1 <= value <= 5 else None


def prompt_versions() -> dict[str, object]:
    """What a results file records about the questions asked."""
    return {
        "pairwise_version": PAIRWISE_VERSION,
        "pairwise_sha256": sha256_bytes((PAIRWISE_SYSTEM + "\n" + PAIRWISE_TEMPLATE).encode()),
        "pairwise_template": PAIRWISE_TEMPLATE,
        "rubric_version": RUBRIC_VERSION,
        "rubric_sha256": sha256_bytes((RUBRIC_TEXT + "\n" + RUBRIC_TEMPLATE).encode()),
        "rubric_text": RUBRIC_TEXT,
    }

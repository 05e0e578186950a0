"""Pi's history rules: how Pi turns a stored history into the request it sends, for the card's Pi version.

Every conversation harnessfit writes is a history that Pi would replay, so the rules Pi applies when it replays one
apply to every source format, not only to Pi sessions. They live in ``pi-ai``'s ``transformMessages``
(``providers/transform-messages.js``, from 0.82 ``api/transform-messages.js``) and ``convertMessages``
(``openai-completions.js``), and hold for any model other than the one that wrote the history (a trained model
never is that one: the ``isSameModel`` branches never apply):

- an assistant turn that ended ``error`` or ``aborted`` is skipped (``transformMessages``, second pass); its tool
  results stay and answer nothing;
- a tool call without a result gets the synthetic result "No result provided" (``isError``; the card's
  ``errors["no_result"]``), inserted where the next assistant or user message starts or at the end, after the
  results that exist (``insertSyntheticToolResults``, ``closePendingToolCalls`` from 1.x);
- thinking of another model is sent as a text block before 1.3.0 and dropped from 1.3.0 (``transformMessages``,
  CHANGELOG 1.3.0 "Changed model switching to drop thinking blocks…"); the assistant's non-blank text blocks are
  then joined with ``""`` (``convertMessages``);
- a tool result's text blocks are joined with ``"\\n"``; an empty text is ``(see attached image)`` before 0.80.4,
  then ``(no tool output)`` unless the result has an image (CHANGELOG 0.80.4); from 1.4.0 a whitespace-only text
  counts as empty (``textResult.trim()``, CHANGELOG 1.4.0);
- user text parts with empty text are left out from 0.87.1 (CHANGELOG 0.87.1, "image-only user messages … empty
  text part"); a user message whose content is a plain string is sent as that string;
- a tool-call id containing ``|`` (OpenAI Responses ``call_id|item_id``) is shortened: before 0.81.0 to its
  ``call_id`` part, from 0.81.0 to ``call_id_item_id`` or, when longer than 40, a prefix and ``shortHash``
  (``normalizeToolCallId`` in ``convertMessages``; CHANGELOG 0.81.0 "keep tool call IDs unique");
- an older compaction inside the range a newer compaction kept is sent as a second summary message by the versions
  whose ``buildSessionContext`` maps every selected entry with ``sessionEntryToContextMessages`` (first published in
  0.80.6 — 0.80.4 and 0.80.5 never reached npm —, up to 0.86.1); 0.87.0 keeps only the newest summary
  (``buildSessionProjection``: "Only the newest compaction at index zero contributes"), and before 0.80.4
  ``appendMessage`` skipped compaction entries (checked in the npm tarballs of 0.80.3, 0.80.6, 0.86.1 and 0.87.0).

Thresholds come from the CHANGELOG of the coding agent (which lists the pi-ai changes it inherits) and were checked
against the sources of every committed card's version (0.73.1, 0.79.10, 0.82.0, 1.6.0); the oracle test
(``tests/harness/test_pi_history_oracle.py``) resumes real sessions in each of those Pi versions and compares.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harnessfit.harness.versions import parse_version

if TYPE_CHECKING:
    from harnessfit.core.trajectory import Step
    from harnessfit.harness.card import HarnessCard

__all__ = ["PiHistory", "history_rules", "short_hash", "assistant_blocks"]

_ID_BAD = re.compile(r"[^a-zA-Z0-9_-]")
_U32 = 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    """``Math.imul``: the low 32 bits of the product, as an unsigned number."""
    return (a * b) & _U32


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def short_hash(text: str) -> str:
    """pi-ai's ``shortHash`` (``utils/hash.js``): two 32-bit multiplicative hashes over the UTF-16 code units,
    each printed in base 36."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    units = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(units), 2):
        ch = units[i] | (units[i + 1] << 8)
        h1 = _imul(h1 ^ ch, 2654435761)
        h2 = _imul(h2 ^ ch, 1597334677)
    h1 = _imul(h1 ^ (h1 >> 16), 2246822507) ^ _imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _imul(h2 ^ (h2 >> 16), 2246822507) ^ _imul(h1 ^ (h1 >> 13), 3266489909)
    return _base36(h2 & _U32) + _base36(h1 & _U32)


@dataclass(frozen=True)
class PiHistory:
    """The history rules of one Pi version (see the module docstring for each rule and where it is in Pi)."""

    version: tuple[int, int, int]
    no_result: str
    foreign_thinking: Literal["text", "drop"]
    empty_result: str
    blank_result_is_empty: bool
    drop_empty_user_text: bool
    unique_pipe_ids: bool
    nested_compaction_summary: bool

    def call_id(self, call_id: str) -> str:
        """``normalizeToolCallId`` of ``convertMessages`` (ids without ``|`` pass unchanged for a local provider)."""
        if "|" not in call_id:
            return call_id
        head, _, tail = call_id.partition("|")
        call = _ID_BAD.sub("_", head)
        if not self.unique_pipe_ids:
            return call[:40]
        item = _ID_BAD.sub("_", tail)
        combined = f"{call}_{item}" if item else call
        if len(combined) <= 40:
            return combined
        digest = short_hash(call_id)[:8]
        return f"{call[: max(1, 40 - len(digest) - 1)]}_{digest}"

    def assistant_content(self, blocks: list[tuple[str, str]]) -> str | None:
        """The ``content`` of a replayed assistant message from its text and thinking blocks in order: thinking as
        text or dropped (``transformMessages``), then the non-blank texts joined with ``""`` (``convertMessages``);
        ``None`` when nothing is left."""
        texts = []
        for kind, text in blocks:
            if kind == "thinking" and (self.foreign_thinking == "drop" or not text.strip()):
                continue  # empty thinking is skipped in every version
            if text.strip():
                texts.append(text)
        return "".join(texts) or None

    def tool_content(self, text: str, images: int = 0) -> str:
        """A tool message's ``content`` for a result whose text blocks joined with ``"\\n"`` are ``text``."""
        has_text = bool(text.strip()) if self.blank_result_is_empty else bool(text)
        if has_text:
            return text
        return "(see attached image)" if images or self.empty_result == "(see attached image)" else self.empty_result

    def user_parts(self, parts: list[str]) -> list[str]:
        """The text parts of a user message as sent (empty ones dropped from 0.87.1)."""
        return [p for p in parts if p] if self.drop_empty_user_text else list(parts)


@functools.cache
def _rules(version: str, no_result: str) -> PiHistory:
    v = parse_version(version)
    return PiHistory(
        version=v,
        no_result=no_result,
        foreign_thinking="drop" if v >= (1, 3, 0) else "text",
        empty_result="(no tool output)" if v >= (0, 80, 4) else "(see attached image)",
        blank_result_is_empty=v >= (1, 4, 0),
        drop_empty_user_text=v >= (0, 87, 1),
        unique_pipe_ids=v >= (0, 81, 0),
        nested_compaction_summary=(0, 80, 4) <= v < (0, 87, 0),
    )


def history_rules(card: HarnessCard) -> PiHistory:
    """The history rules of the card's Pi version; the synthetic result text is the card's (captured from Pi)."""
    return _rules(card.version, card.errors["no_result"])


def assistant_blocks(step: Step) -> list[tuple[str, str]]:
    """An assistant step's text and thinking blocks in the source's order: ``meta["blocks"]`` when the reader kept
    them apart (Pi sessions), else the reasoning before the text (the order in which a model streams them)."""
    blocks: Any = step.meta.get("blocks")
    if isinstance(blocks, list):
        return [(str(k), str(t)) for k, t in blocks]
    out: list[tuple[str, str]] = []
    if step.reasoning:
        out.append(("thinking", step.reasoning))
    if step.text:
        out.append(("text", step.text))
    return out

"""Redaction of the build's other files: the same rules and placeholders as the conversations get, applied to the
bytes of every file the build writes that is not made from redacted conversations (the ledger, whose details quote
rejected calls; its summary; the manifest; the card; any file added later). The dataset sink calls it on every
write (``Sink.open``), so a new output file is covered without anyone remembering to.

- JSON (``.json``) and JSON Lines (``.jsonl``, line by line): every string, keys included, is scanned *decoded*
  (an escaped quote or newline hides nothing), and each finding is replaced where it sits in the text in its
  escaped form, so the layout (indentation, key order) is kept byte for byte; should a replacement ever leave
  invalid JSON, the decoded value is redacted and written compactly instead.
- Any other text is scanned as it is.
- Bytes that are not UTF-8 cannot be redacted: ``ValueError``. A binary output must be written from redacted
  records (the Parquet copies are) and opened as such.

Placeholders are numbered within one record: a JSON line, a whole JSON document, one text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson

from harnessfit.dataset.redact.redactor import Redactor
from harnessfit.dataset.redact.substitute import redact_text_values

__all__ = ["Scrubber"]


def _json_escape(value: str) -> str:
    return orjson.dumps(value).decode("utf-8")[1:-1]


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(k)
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def _redact_keys_and_values(value: Any, sub: Callable[[str], str]) -> Any:
    if isinstance(value, dict):
        return {sub(k): _redact_keys_and_values(v, sub) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_keys_and_values(v, sub) for v in value]
    return redact_text_values(value, sub)


class Scrubber:
    """Redacts texts, JSON texts and whole output files with ``redactor``; ``replaced`` counts what it replaced,
    per kind."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.replaced: Counter[str] = Counter()

    def text(self, text: str) -> str:
        """``text`` with every finding replaced (one record)."""
        ph = self.redactor.placeholders([text])
        return self.redactor.substituter(ph, self.replaced)(text) if ph else text  # type: ignore[return-value]

    def json_text(self, raw: str) -> str:
        """A JSON text with every finding in its strings replaced, layout kept (see the module docstring)."""
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return self.text(raw)
        strings: list[str] = []
        _strings(value, strings)
        ph = self.redactor.placeholders(strings)
        if not ph:
            return raw
        trial: Counter[str] = Counter()
        out = self.redactor.substituter(ph, trial, escape=_json_escape)(raw)
        try:
            orjson.loads(out)  # type: ignore[arg-type]
        except orjson.JSONDecodeError:  # a value that straddled the JSON syntax: redact the decoded value instead
            trial = Counter()
            sub = self.redactor.substituter(ph, trial)
            out = orjson.dumps(_redact_keys_and_values(value, sub)).decode("utf-8")  # type: ignore[arg-type]
        self.replaced.update(trial)
        return out  # type: ignore[return-value]

    def file_bytes(self, relpath: str, data: bytes) -> bytes:
        """``data`` about to be written to ``relpath``, redacted as that kind of file (by its suffix)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{relpath}: binary output cannot be redacted; write it from redacted records") from None
        if relpath.endswith(".jsonl"):
            lines = text.split("\n")
            out = "\n".join(self.json_text(line) if line.strip() else line for line in lines)
        elif relpath.endswith(".json"):
            out = self.json_text(text)
        else:
            out = self.text(text)
        return data if out == text else out.encode("utf-8")

"""The one JSONL reader: ``iter_jsonl`` is the only loop over JSONL records in harnessfit, in every layout a JSONL
writer produces (``_RecordReader``). Its options cover every caller:

- trace readers stream a file with a record-size cap and want each bad record *reported* (as a ``BadLine`` they turn
  into a ledger row): ``iter_jsonl(fh, max_line_bytes=…, bad_lines="report")``;
- files harnessfit wrote itself must be valid: ``core.jsonio.read_jsonl(path)`` raises on a bad line;
- files a killed process may have cut (an eval episode's event stream) are read tolerantly:
  ``read_jsonl(path, bad_lines="skip", objects_only=True, missing_ok=True)``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from harnessfit.core.jsonl_scan import BOM, SCALAR_END, SKIP_BLOCK, STRING, Scan, feed_line, parses_alone, skip_ws

__all__ = ["JsonLine", "BadLine", "BadLines", "iter_jsonl"]

BadLines = Literal["raise", "skip", "report"]


@dataclass(frozen=True, slots=True)
class JsonLine:
    """One JSON record of a JSONL file: ``lineno`` is the 1-based line it starts on, ``value`` the parsed JSON (any
    type)."""

    lineno: int
    value: Any


@dataclass(frozen=True, slots=True)
class BadLine:
    """A record (a non-blank line, or a value spread over several lines) that holds no JSON value, and why:
    ``too_long`` (over ``max_line_bytes``, never held in memory), ``not_utf8``, ``invalid_json``, or ``truncated``
    (the file ends inside the record: the writer stopped mid-record). ``lineno`` is the line the record starts on;
    ``detail`` says it in one line, naming the line(s)."""

    lineno: int
    kind: Literal["too_long", "not_utf8", "invalid_json", "truncated"]
    detail: str


def iter_jsonl(
    source: Path | IO[bytes],
    *,
    max_line_bytes: int | None = None,
    bad_lines: BadLines = "raise",
) -> Iterator[JsonLine | BadLine]:
    """Every JSON record of a JSONL file (a path, or a binary file object read from where it is), in order.

    The layouts a JSONL writer produces in practice are all read the same way (``_RecordReader``):

    - one value per line (the ordinary case, and the fast path: each line is parsed once, as a whole);
    - values spread over several lines (pretty-printed objects, one after the other);
    - several values on one line (``{…}{…}``: a writer that lost a newline);
    - one top-level array holding the records (``[{…}, {…}]``, on one line or pretty-printed): its elements are the
      records;
    - CRLF line ends, and a UTF-8 byte-order mark at the start.

    ``max_line_bytes`` bounds one *record*, whatever its layout: a longer record is skipped without being held whole
    and reported ``too_long``. ``bad_lines``: ``"raise"`` raises on the first bad record (``orjson.JSONDecodeError``;
    ``ValueError`` for a record over ``max_line_bytes``), ``"skip"`` leaves bad records out, ``"report"`` yields a
    ``BadLine`` for each. A broken line never swallows the good lines after it: when a value that seemed to go on
    over several lines turns out not to parse, the lines after its first one are read again on their own."""
    if isinstance(source, Path):
        with source.open("rb") as fh:
            yield from iter_jsonl(fh, max_line_bytes=max_line_bytes, bad_lines=bad_lines)
        return
    for item in _RecordReader(source, max_line_bytes).records():
        if type(item) is BadLine:
            if bad_lines == "raise":
                if item.kind == "too_long":
                    raise ValueError(item.detail)
                raise orjson.JSONDecodeError(item.detail, "", 0)
            if bad_lines == "report":
                yield item
            continue
        yield item


class _RecordReader:
    """The records of one JSONL stream, in every layout ``iter_jsonl`` lists.

    Fast path: a line that parses on its own is one record. Only a line that does not parse is looked at more
    closely (``_values``): a structure scan (``Scan``) finds where each value on it ends, reading further lines while
    a value is open. A value that ends and parses is a record; one that ends and does not parse, or that the file
    ends inside, is one bad record, and when one of the lines it took in parses on its own those lines are read again
    (so a broken line costs only itself). A file whose first record starts with ``[`` and is not a complete value on
    its line, or that is one complete array and nothing else, is a top-level array: its elements are the records."""

    def __init__(self, fh: IO[bytes], cap: int | None) -> None:
        self.fh = fh
        self.cap = cap
        self.lineno = 0
        self.back: deque[tuple[int, bytes]] = deque()

    # -- lines ---------------------------------------------------------------------------------------------------
    def _next(self) -> tuple[int, bytes]:
        """The next line (``b""`` at the end); a line over the cap comes back as its first ``cap + 1`` bytes,
        without its newline (``_is_long``)."""
        if self.back:
            return self.back.popleft()
        line = self.fh.readline(-1 if self.cap is None else self.cap + 1)
        if line:
            self.lineno += 1
        return self.lineno, line

    def _is_long(self, line: bytes) -> bool:
        return self.cap is not None and len(line) > self.cap and not line.endswith(b"\n")

    def _skip_long(self, scan: Scan | None) -> tuple[int, bool]:
        """Read the rest of a line over the cap in blocks, feeding ``scan`` (if any) until its value ends. Returns
        (bytes read, whether the value ended on this line)."""
        size = 0
        ended = False
        while True:
            more = self.fh.readline(SKIP_BLOCK)
            size += len(more)
            if scan is not None and not ended and more:
                try:
                    ended = scan.feed(more, 0) >= 0
                except ValueError:
                    scan, ended = None, True
            if not more or more.endswith(b"\n"):
                return size, ended or scan is None

    # -- records -------------------------------------------------------------------------------------------------
    def records(self) -> Iterator[JsonLine | BadLine]:
        # the first record decides whether the file is a top-level array
        while True:
            n, line = self._next()
            if not line:
                return
            if n == 1 and line.startswith(BOM):
                line = line[3:]
            if line.strip():
                break
        if not self._is_long(line) and line.lstrip()[:1] == b"[":
            yield from self._array_start(n, line)
        else:
            yield from self._line(n, line)
        # the rest, one line at a time (the loop every ordinary JSONL file spends its time in)
        readline, back, loads, cap = self.fh.readline, self.back, orjson.loads, self.cap
        size = -1 if cap is None else cap + 1
        while True:
            if back:
                n, line = back.popleft()
            else:
                line = readline(size)
                if not line:
                    return
                self.lineno += 1
                n = self.lineno
            if cap is None or len(line) <= cap or line.endswith(b"\n"):
                try:
                    yield JsonLine(n, loads(line))  # orjson accepts only valid UTF-8: no decode check needed
                    continue
                except orjson.JSONDecodeError:
                    if not line.strip():
                        continue
            yield from self._line(n, line)

    def _line(self, n: int, line: bytes) -> Iterator[JsonLine | BadLine]:
        """A line that is not one value by itself (or is over the cap): what values it starts."""
        if not self._is_long(line):
            try:
                yield JsonLine(n, orjson.loads(line))
                return
            except orjson.JSONDecodeError:
                if not line.strip():
                    return
        yield from self._values(n, line, skip_ws(line, 0, False), base=0)

    def _array_start(self, n: int, line: bytes) -> Iterator[JsonLine | BadLine]:
        """The first record starts with ``[``: a whole array on this line (its elements are the records when
        nothing else follows in the file; otherwise every line is one record), or a top-level array spread over
        several lines (its elements are the records)."""
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            yield from self._values(n, line, line.index(b"[") + 1, base=1)
            return
        while True:  # is there anything after the array?
            m, nxt = self._next()
            if not nxt:
                for element in value:
                    yield JsonLine(n, element)
                return
            if nxt.strip():
                self.back.appendleft((m, nxt))
                yield JsonLine(n, value)
                return

    def _values(self, n: int, line: bytes, i: int, *, base: int) -> Iterator[JsonLine | BadLine]:
        """The values from offset ``i`` of line ``n`` on: top-level values (``base=0``; returns at the first line end
        with no value open), or the elements of a top-level array (``base=1``; after the array closes, what follows
        is read as top-level values)."""
        while True:
            i = skip_ws(line, i, base == 1)
            if i >= len(line):
                if base == 0:
                    return
                n, line = self._next()
                i = 0
                if not line:
                    yield BadLine(n, "truncated", f"line {n}: the file ends inside the top-level array")
                    return
                continue
            c = line[i]
            if base == 1 and c == 0x5D:  # ]: the array is closed
                base, i = 0, i + 1
                continue
            if c in (0x7B, 0x5B):  # { [
                after = yield from self._structured(n, line, i)
            else:
                after = yield from self._scalar(n, line, i)
            if after is None:  # a bad record: go on with the next line
                if base == 0:
                    return
                n, line, i = *self._next(), 0
                if not line:
                    return
                continue
            n, line, i = after

    def _scalar(self, n: int, line: bytes, i: int):  # -> Generator[JsonLine | BadLine, None, tuple | None]
        """A string, number or literal at offset ``i``: it ends on its line."""
        if line[i] == 0x22:
            m = STRING.match(line, i)
            j = m.end() if m else -1
        else:
            m = SCALAR_END.search(line, i)
            j = m.start() if m else len(line)
        if j > i:
            try:
                value = orjson.loads(line[i:j])
            except orjson.JSONDecodeError:
                pass
            else:
                yield JsonLine(n, value)
                return n, line, j
        if self._is_long(line):
            size, _ = self._skip_long(None)
            yield BadLine(n, "too_long", f"line {n} is {len(line) + size} bytes (limit {self.cap})")
            return None
        yield self._bad(n, n, line, last_line=not line.endswith(b"\n"))
        return None

    def _structured(self, n: int, line: bytes, i: int):  # -> Generator[JsonLine | BadLine, None, tuple | None]
        """One value that starts with ``{``/``[`` at offset ``i`` of line ``n``, read over as many lines as it
        takes. Returns (line number, line, offset) just past it, or ``None`` after a bad record."""
        scan = Scan()
        pieces: list[bytes] | None = []  # None once the value is over the cap (then it is only scanned)
        taken: list[tuple[int, bytes]] = []  # the lines after line n it took in (read again if it is bad)
        size = 0
        cur_n, cur, off = n, line, i
        while True:
            try:
                end = feed_line(scan, cur, off)
            except ValueError:
                if pieces is None:
                    yield self._too_long(n, cur_n, size + len(cur) - off)
                    return None
                yield from self._recover(n, cur_n, line, taken)
                return None
            if self._is_long(cur):  # a line over the cap: the record is too long, whatever else it holds
                rest, ended = (0, True) if end >= 0 else self._skip_long(scan)
                size += len(cur) - off + rest
                if ended:
                    yield self._too_long(n, cur_n, size)
                    return cur_n, b"", 0
                pieces, taken = None, []
            else:
                chunk = cur[off:] if end < 0 else cur[off:end]
                size += len(chunk)
                if pieces is not None:
                    if self.cap is not None and size > self.cap:
                        if any(parses_alone(t) for _, t in taken):  # a broken line took in good ones
                            yield from self._recover(n, cur_n, line, taken)
                            return None
                        pieces, taken = None, []
                    else:
                        pieces.append(chunk)
                if end >= 0:
                    if pieces is None:
                        yield self._too_long(n, cur_n, size)
                        return cur_n, cur, end
                    try:
                        value = orjson.loads(pieces[0] if len(pieces) == 1 else b"".join(pieces))
                    except orjson.JSONDecodeError as exc:
                        yield from self._recover(n, cur_n, line, taken, exc)
                        return None
                    yield JsonLine(n, value)
                    return cur_n, cur, end
            cur_n, cur = self._next()
            off = 0
            if not cur:  # the file ends inside the value
                if pieces is None:
                    yield self._too_long(n, cur_n, size)
                    return None
                yield from self._recover(n, cur_n, line, taken, truncated=True)
                return None
            if cur[:1] in (b"{", b"[") and parses_alone(cur):
                # a complete record at the start of a line while a value is open: the open value was broken (in
                # pretty-printed JSON the lines inside a value are indented, and none of them is a whole record)
                if pieces is not None:
                    yield from self._recover(n, cur_n, line, [*taken, (cur_n, cur)])
                else:
                    self.back.appendleft((cur_n, cur))
                    yield BadLine(
                        n,
                        "invalid_json",
                        f"lines {n}-{cur_n - 1}: a value opens on line {n} and does "
                        f"not close before the record on line {cur_n}",
                    )
                return None
            if pieces is not None:
                taken.append((cur_n, cur))

    def _too_long(self, start_n: int, end_n: int, size: int) -> BadLine:
        where = f"line {start_n}" if end_n == start_n else f"the record at lines {start_n}-{end_n}"
        return BadLine(start_n, "too_long", f"{where} is {size} bytes (limit {self.cap})")

    def _recover(
        self,
        start_n: int,
        end_n: int,
        first: bytes,
        taken: list[tuple[int, bytes]],
        exc: Exception | None = None,
        truncated: bool = False,
    ) -> Iterator[BadLine]:
        """A value that began on line ``start_n`` is not JSON. If a line it took in parses on its own, only line
        ``start_n`` is bad and the others are read again; otherwise the whole span is one bad record."""
        if taken and any(parses_alone(t) for _, t in taken):
            self.back.extendleft(reversed(taken))
            yield self._bad(start_n, start_n, first, last_line=False)
            return
        if truncated:
            where = f"line {start_n}" if end_n == start_n else f"the record at lines {start_n}-{end_n}"
            yield BadLine(start_n, "truncated", f"{where}: the file ends inside the record")
            return
        text = first if not taken else first + b"".join(t for _, t in taken)
        yield self._bad(start_n, end_n, text, last_line=not text.endswith(b"\n"), exc=exc)

    @staticmethod
    def _bad(start_n: int, end_n: int, text: bytes, *, last_line: bool, exc: Exception | None = None) -> BadLine:
        """Why ``text`` (lines ``start_n``-``end_n``) is not a record: invalid UTF-8, cut off by the end of the file
        (``last_line``: it has no newline), or invalid JSON (orjson's message)."""
        try:
            text.decode("utf-8")
        except UnicodeDecodeError as bad:
            return BadLine(start_n, "not_utf8", f"line {start_n}: invalid UTF-8 at byte {bad.start}")
        if exc is None:
            try:
                orjson.loads(text)
                why = "more than one value, or not one JSON value"
            except orjson.JSONDecodeError as e:
                why = str(e)[:120]
        else:
            why = str(exc)[:120]
        where = f"line {start_n}" if end_n == start_n else f"lines {start_n}-{end_n}"
        if last_line:
            return BadLine(start_n, "truncated", f"{where}: invalid JSON ({why})")
        return BadLine(start_n, "invalid_json", f"{where}: invalid JSON ({why})")

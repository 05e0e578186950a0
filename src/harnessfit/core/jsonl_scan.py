"""The byte-level scanning under ``core.jsonl._RecordReader``: where a JSON value spread over lines ends (``Scan``,
``feed_line``), whitespace and separators between values, and whether one line parses alone."""

from __future__ import annotations

import re

import orjson

__all__ = ["BOM", "WS", "STRING", "SCALAR_END", "SKIP_BLOCK", "Scan", "feed_line", "skip_ws", "parses_alone"]

BOM = b"\xef\xbb\xbf"
WS = b" \t\r\n"
# outside strings, the bytes that change the structure; inside a string, the bytes that end or escape it (a raw
# newline cannot be inside a JSON string, so meeting one there means the text is not JSON)
STRUCT = re.compile(rb'[\[\]{}"]')
IN_STRING = re.compile(rb'["\\\n]')
SCALAR_END = re.compile(rb"[\s,\]}]")
STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
# what may stand outside strings between brackets and quotes: separators, numbers and the literals' letters
GAP = re.compile(rb"[\s,:0-9eE+\-.truefalsn]*")
GAP_LINE = re.compile(rb"[\s,:0-9eE+\-.truefalsn\[\]{}]*")
SKIP_BLOCK = 1 << 20


class Scan:
    """Where a JSON value that starts with ``{`` or ``[`` ends, found incrementally over chunks of text: the
    nesting depth and whether the scan is inside a string (and right after a backslash). ``feed`` returns the
    offset just past the value's last byte in this chunk, ``-1`` when the value goes on, or raises ``ValueError``
    when the text cannot be JSON (a newline inside a string, a closing bracket that closes nothing, text outside a
    string that no JSON token is made of)."""

    __slots__ = ("depth", "in_string", "escaped")

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False

    def feed(self, chunk: bytes, i: int) -> int:
        n = len(chunk)
        while i < n:
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                    i += 1
                    continue
                m = IN_STRING.search(chunk, i)
                if m is None:
                    return -1
                c = chunk[m.start()]
                i = m.end()
                if c == 0x22:  # "
                    self.in_string = False
                elif c == 0x5C:  # backslash: the next byte is escaped (it may be in the next chunk)
                    self.escaped = True
                else:
                    raise ValueError("a line ends inside a string")
                continue
            m = STRUCT.search(chunk, i)
            if m is None:
                if GAP.fullmatch(chunk, i) is None:
                    raise ValueError("text outside a string that is not JSON")
                return -1
            if m.start() > i and GAP.fullmatch(chunk, i, m.start()) is None:
                raise ValueError("text outside a string that is not JSON")
            c = chunk[m.start()]
            i = m.end()
            if c == 0x22:
                self.in_string = True
            elif c in (0x7B, 0x5B):  # { [
                self.depth += 1
            else:
                self.depth -= 1
                if self.depth == 0:
                    return i
                if self.depth < 0:
                    raise ValueError("a closing bracket closes nothing")
        return -1


def feed_line(scan: Scan, line: bytes, off: int) -> int:
    """``scan.feed`` for a whole line, with a shortcut for the lines inside a value: with its strings taken out, a
    line that closes fewer brackets than are open cannot end the value, so only its bracket counts matter (three C
    calls instead of a loop over its tokens). Other lines, and pieces of a line, go through ``scan.feed``."""
    if off == 0 and scan.depth > 0 and not scan.in_string and line.endswith(b"\n"):
        bare = STRING.sub(b"", line)
        closes = bare.count(b"}") + bare.count(b"]")
        if closes < scan.depth:
            if b'"' in bare:
                raise ValueError("a line ends inside a string")
            if GAP_LINE.fullmatch(bare) is None:
                raise ValueError("text outside a string that is not JSON")
            scan.depth += bare.count(b"{") + bare.count(b"[") - closes
            return -1
    return scan.feed(line, off)


def skip_ws(line: bytes, i: int, commas: bool) -> int:
    n = len(line)
    while i < n and (line[i] in WS or (commas and line[i] == 0x2C)):
        i += 1
    return i


def parses_alone(line: bytes) -> bool:
    s = line.lstrip()
    if not s or s[0] not in (0x7B, 0x5B):
        return False
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True

"""Record shapes written by a build: conversation lines, per-action SFT records, decision points, Parquet copies.

Parquet note: messages, tools, actions and states are stored as JSON *text* columns. Arrow gives every struct in
a column the union of all keys, so heterogeneous tool arguments would silently gain ``null`` fields
(``{"path": …, "command": null}``) that a trainer would then learn; JSON text keeps each record byte-exact.
Decode with ``json.loads`` after ``datasets.load_dataset("parquet", data_files=…)``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from harnessfit.core.records import DecisionPoint, SFTRecord
from harnessfit.dataset.sink import OutFile
from harnessfit.core.ids import content_id

__all__ = ["sft_records", "decision_points", "ConversationExport", "ParquetOut", "PARQUET_SCHEMAS", "conversation_row", "sft_row",
           "dp_row", "write_exports"]


def _parse_args(call: dict[str, Any]) -> dict[str, Any]:
    fn = dict(call.get("function") or {})
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            fn["arguments"] = orjson.loads(args)
        except orjson.JSONDecodeError:
            pass
    return {**call, "function": fn}


def sft_records(conv: dict[str, Any], split: str) -> Iterator[SFTRecord]:
    """One record per assistant message: the context before it (system prompt first) and the action, wire form."""
    msgs = conv["messages"]
    meta = conv["meta"]
    k = 0
    for i, m in enumerate(msgs):
        if m.get("role") != "assistant":
            continue
        yield SFTRecord(id=content_id("sft", conv["id"], str(i)), conversation_id=conv["id"], split=split,
                        action_index=k, messages=msgs[:i], tools=conv["tools"], action=m, source=meta["source"],
                        group=meta["root_request_id"])
        k += 1


def decision_points(conv: dict[str, Any], split: str) -> Iterator[DecisionPoint]:
    """One per assistant turn: the state before it, the turn with tool-call arguments parsed to objects, and the
    tool results that answered its calls in the trace."""
    msgs = conv["messages"]
    meta = conv["meta"]
    k = 0
    for i, m in enumerate(msgs):
        if m.get("role") != "assistant":
            continue
        turn = dict(m)
        if m.get("tool_calls"):
            turn["tool_calls"] = [_parse_args(tc) for tc in m["tool_calls"]]
        ids = {tc.get("id") for tc in m.get("tool_calls") or []}
        results = []
        for nxt in msgs[i + 1:]:
            if nxt.get("role") != "tool":
                break
            if nxt.get("tool_call_id") in ids:
                results.append(nxt)
        yield DecisionPoint(id=content_id("dp", conv["id"], str(i)), conversation_id=conv["id"], split=split,
                            turn_index=k, state=msgs[:i], tools=conv["tools"], next_turn=turn, tool_results=results,
                            source=meta["source"], group=meta["root_request_id"])
        k += 1


def _j(v: Any) -> str:
    return orjson.dumps(v).decode("utf-8")


PARQUET_SCHEMAS: dict[str, pa.Schema] = {
    "conversations": pa.schema([("id", pa.string()), ("messages", pa.string()), ("tools", pa.string()),
                                ("meta", pa.string()), ("source", pa.string()), ("group", pa.string())]),
    "sft": pa.schema([("id", pa.string()), ("conversation_id", pa.string()), ("split", pa.string()),
                      ("action_index", pa.int64()), ("messages", pa.string()), ("tools", pa.string()),
                      ("action", pa.string()), ("source", pa.string()), ("group", pa.string())]),
    "decision_points": pa.schema([("id", pa.string()), ("conversation_id", pa.string()), ("split", pa.string()),
                                  ("turn_index", pa.int64()), ("state", pa.string()), ("tools", pa.string()),
                                  ("next_turn", pa.string()), ("tool_results", pa.string()), ("source", pa.string()),
                                  ("group", pa.string())]),
}


def conversation_row(conv: dict[str, Any]) -> dict[str, Any]:
    return {"id": conv["id"], "messages": _j(conv["messages"]), "tools": _j(conv["tools"]), "meta": _j(conv["meta"]),
            "source": conv["meta"]["source"], "group": conv["meta"]["root_request_id"]}


def sft_row(r: SFTRecord) -> dict[str, Any]:
    return {"id": r.id, "conversation_id": r.conversation_id, "split": r.split, "action_index": r.action_index,
            "messages": _j(r.messages), "tools": _j(r.tools), "action": _j(r.action), "source": r.source, "group": r.group}


def dp_row(d: DecisionPoint) -> dict[str, Any]:
    return {"id": d.id, "conversation_id": d.conversation_id, "split": d.split, "turn_index": d.turn_index,
            "state": _j(d.state), "tools": _j(d.tools), "next_turn": _j(d.next_turn),
            "tool_results": _j(d.tool_results), "source": d.source, "group": d.group}


class ParquetOut:
    """Buffers rows and writes them as row groups through an ``OutFile``: a row group closes at ``batch`` rows or
    once its text columns reach ``max_chars`` characters, whichever comes first. The size bound keeps memory flat
    when rows are huge (one SFT row per action carries the whole context before it, so 512 rows of a long session
    are gigabytes). Deterministic bytes: fixed schema, boundaries decided by the rows' content only, no timestamps
    in Parquet metadata."""

    def __init__(self, out: OutFile, schema: pa.Schema, batch: int = 512, max_chars: int = 16 * 2**20) -> None:
        self.out = out
        self.schema = schema
        self.batch = batch
        self.max_chars = max_chars
        self._rows: list[dict[str, Any]] = []
        self._chars = 0
        self._writer = pq.ParquetWriter(pa.PythonFile(out, mode="w"), schema, compression="zstd")

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        self._chars += sum(len(v) for v in row.values() if isinstance(v, str))
        if len(self._rows) >= self.batch or self._chars >= self.max_chars:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            self.out.mark(self._rows[0]["id"])
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self.schema))
            self._rows = []
            self._chars = 0

    def close(self) -> None:
        self._flush()
        self._writer.close()
        self.out.close()


# -- fast path used by the build: the same bytes as ``orjson.dumps(record.model_dump())``, but the context prefix of
# each action is assembled from per-message bytes instead of re-serialising it (output stays quadratic in actions,
# the serialisation work does not).

def _obj(pairs: list[tuple[str, bytes]]) -> bytes:
    return b"{" + b",".join(orjson.dumps(k) + b":" + v for k, v in pairs) + b"}"


def _arr(items: list[bytes]) -> bytes:
    return b"[" + b",".join(items) + b"]"


class ConversationExport:
    """Pre-serialised pieces of one conversation, from which every export line is assembled."""

    def __init__(self, conv: dict[str, Any], split: str) -> None:
        self.conv = conv
        self.split = split
        self.msgs = conv["messages"]
        self.mb = [orjson.dumps(m) for m in self.msgs]
        self.tools = orjson.dumps(conv["tools"])
        self.cid = orjson.dumps(conv["id"])
        self.src = orjson.dumps(conv["meta"]["source"])
        self.grp = orjson.dumps(conv["meta"]["root_request_id"])
        self.sp = orjson.dumps(split)
        self.actions = [i for i, m in enumerate(self.msgs) if m.get("role") == "assistant"]

    def sft(self) -> Iterator[tuple[str, bytes, dict[str, Any]]]:
        """(record id, JSONL line without newline, Parquet row) per assistant action."""
        for k, i in enumerate(self.actions):
            rid = content_id("sft", self.conv["id"], str(i))
            ctx = _arr(self.mb[:i])
            line = _obj([("id", orjson.dumps(rid)), ("conversation_id", self.cid), ("split", self.sp),
                         ("action_index", orjson.dumps(k)), ("messages", ctx), ("tools", self.tools),
                         ("action", self.mb[i]), ("source", self.src), ("group", self.grp)])
            row = {"id": rid, "conversation_id": self.conv["id"], "split": self.split, "action_index": k,
                   "messages": ctx.decode(), "tools": self.tools.decode(), "action": self.mb[i].decode(),
                   "source": self.conv["meta"]["source"], "group": self.conv["meta"]["root_request_id"]}
            yield rid, line, row

    def decision_points(self) -> Iterator[tuple[str, bytes, dict[str, Any]]]:
        for k, i in enumerate(self.actions):
            m = self.msgs[i]
            rid = content_id("dp", self.conv["id"], str(i))
            turn = dict(m)
            if m.get("tool_calls"):
                turn["tool_calls"] = [_parse_args(tc) for tc in m["tool_calls"]]
            ids = {tc.get("id") for tc in m.get("tool_calls") or []}
            res: list[bytes] = []
            for j in range(i + 1, len(self.msgs)):
                if self.msgs[j].get("role") != "tool":
                    break
                if self.msgs[j].get("tool_call_id") in ids:
                    res.append(self.mb[j])
            state, nt, tr = _arr(self.mb[:i]), orjson.dumps(turn), _arr(res)
            line = _obj([("id", orjson.dumps(rid)), ("conversation_id", self.cid), ("split", self.sp),
                         ("turn_index", orjson.dumps(k)), ("state", state), ("tools", self.tools), ("next_turn", nt),
                         ("tool_results", tr), ("source", self.src), ("group", self.grp)])
            row = {"id": rid, "conversation_id": self.conv["id"], "split": self.split, "turn_index": k,
                   "state": state.decode(), "tools": self.tools.decode(), "next_turn": nt.decode(),
                   "tool_results": tr.decode(), "source": self.conv["meta"]["source"],
                   "group": self.conv["meta"]["root_request_id"]}
            yield rid, line, row


_KINDS = ("conversations", "sft", "decision_points")


def write_exports(sink: Any, spool: list[tuple[str, str, bytes, str]], assignment: dict[str, str],
                  split_groups: dict[str, set[str]], *, parquet: bool, bar: Any = None,
                  prefixes: Any = None) -> tuple[dict[str, dict[str, int]], Counter[str]]:
    """The export stage: for each split, the kept conversations (``spool``: id, group, line, source) whose group
    ``assignment`` puts there, with their SFT records and decision points, as JSONL (and Parquet copies); then the
    SFT records and decision points of the split's exact prefixes (``prefixes``: a ``dataset.prefixes.PrefixSpool``),
    counted in ``sft`` / ``decision_points`` and apart as ``prefix_sft`` / ``prefix_decision_points``. Returns the
    counts per split and the kept conversations per source."""
    per_split: dict[str, dict[str, int]] = {}
    kept_by_source: Counter[str] = Counter()
    task = bar.add_task("export", total=len(spool)) if bar is not None else None
    for split in split_groups:
        files = {k: sink.open(f"{k}/{split}.jsonl") for k in _KINDS}
        pq_out = ({k: ParquetOut(sink.open(f"parquet/{k}/{split}.parquet"), PARQUET_SCHEMAS[k]) for k in _KINDS}
                  if parquet else {})
        n = {"groups": len(split_groups[split]), **dict.fromkeys(_KINDS, 0)}
        for cid, group, body, source in spool:
            if assignment[group] != split:
                continue
            conv = orjson.loads(body)
            files["conversations"].mark(cid)
            files["conversations"].write(body + b"\n")
            n["conversations"] += 1
            kept_by_source[source] += 1
            ex = ConversationExport(conv, split)
            for kind, rows in (("sft", ex.sft()), ("decision_points", ex.decision_points())):
                for rid, line, row in rows:
                    files[kind].mark(rid)
                    files[kind].write(line + b"\n")
                    n[kind] += 1
                    if pq_out:
                        pq_out[kind].add(row)
            if pq_out:
                pq_out["conversations"].add(conversation_row(conv))
            if task is not None:
                bar.advance(task)
        if prefixes is not None:
            n["prefix_sft"], n["prefix_decision_points"] = prefixes.export(split, assignment, files, pq_out)
            n["sft"] += n["prefix_sft"]
            n["decision_points"] += n["prefix_decision_points"]
        for f in files.values():
            f.close()
        for p in pq_out.values():
            p.close()
        per_split[split] = n
    return per_split, kept_by_source

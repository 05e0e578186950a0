"""Record shapes written by a build: conversation lines, per-action SFT records, decision points, Parquet copies.

The JSONL files keep Pi's exact wire form (what the audit renders and ``verify`` checks byte for byte). The Parquet
copies hold the same records in the shape the Hugging Face ecosystem takes as it is, so
``datasets.load_dataset("parquet", data_files=…)`` goes straight into TRL's ``SFTTrainer``:

- every message is a dict in chat-template form (``models.messages.to_template_message``: text parts joined into a
  string, tool-call ``arguments`` parsed to the JSON object the model wrote, only the keys templates read);
- SFT rows are TRL's conversational prompt-completion (``prompt``: the context, ``completion``: the action), so the
  loss covers the action only; decision points carry their state as ``prompt``; ``tools`` are JSON-schema dicts;
- each message, tool, and the other objects are stored as Arrow ``json`` values (a JSON text per element, with the
  ``datasets`` feature ``Json()`` named in the file's metadata). Why not Arrow structs: a struct column has the union
  of every row's keys, so one call's ``arguments`` would gain every other tool's keys as nulls
  (``{"path": "a.py", "command": None}``), which a template renders as wrong JSON.

A conversation whose messages a template cannot take (a non-text content part, such as an image a tool returned)
has its JSONL records but no Parquet rows; the build counts them (``parquet_skipped``) per split.

Fidelity tiers (``convert.policy.FIDELITY_TIERS``): a build at tier ``content`` ends each SFT record and decision point
(JSONL and Parquet) with ``fidelity`` (``"byte"``, or ``"content"`` when its context holds a result rendered from
output the source agent altered: ``meta.altered`` of its conversation) and the ``alterations`` that context holds; a
build at tier ``byte`` writes neither (its records are written as before tiers existed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from harnessfit.core.conversation import context_fidelity
from harnessfit.core.ids import content_id
from harnessfit.core.records import DecisionPoint, SFTRecord
from harnessfit.dataset.sink import OutFile
from harnessfit.models.messages import MessageError, to_template_message

__all__ = [
    "sft_records",
    "decision_points",
    "ConversationExport",
    "ParquetOut",
    "PARQUET_SCHEMAS",
    "TIERED_PARQUET_SCHEMAS",
    "write_exports",
]


def _parse_args(call: dict[str, Any]) -> dict[str, Any]:
    fn = dict(call.get("function") or {})
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            fn["arguments"] = orjson.loads(args)
        except orjson.JSONDecodeError:
            pass
    return {**call, "function": fn}


def _labels(conv: dict[str, Any]) -> list[int]:
    """Indices of the assistant messages that are labels: from ``meta.labels_from`` on (the ones before it are
    history only, e.g. what a Pi compaction kept), except those in ``meta.context_only`` (a call Pi refused, kept
    with its refusal)."""
    first = conv["meta"].get("labels_from") or 0
    skip = set(conv["meta"].get("context_only") or ())
    return [i for i, m in enumerate(conv["messages"]) if m.get("role") == "assistant" and i >= first and i not in skip]


def _tier(conv: dict[str, Any], i: int, tiers: bool) -> dict[str, Any]:
    """The record fields ``fidelity`` and ``alterations`` of the context ``messages[:i]`` (none unless ``tiers``)."""
    if not tiers:
        return {}
    fidelity, names = context_fidelity(conv["meta"].get("altered"), i)
    return {"fidelity": fidelity, "alterations": names}


def sft_records(conv: dict[str, Any], split: str, *, tiers: bool = False) -> Iterator[SFTRecord]:
    """One record per assistant message that is a label: the context before it (system prompt first) and the
    action, wire form; with ``tiers`` (a build at tier ``content``) its fidelity and alterations."""
    msgs = conv["messages"]
    meta = conv["meta"]
    for k, i in enumerate(_labels(conv)):
        m = msgs[i]
        yield SFTRecord(
            id=content_id("sft", conv["id"], str(i)),
            conversation_id=conv["id"],
            split=split,
            action_index=k,
            messages=msgs[:i],
            tools=conv["tools"],
            action=m,
            source=meta["source"],
            group=meta["root_request_id"],
            **_tier(conv, i, tiers),
        )


def decision_points(conv: dict[str, Any], split: str, *, tiers: bool = False) -> Iterator[DecisionPoint]:
    """One per assistant turn that is a label: the state before it, the turn with tool-call arguments parsed to
    objects, and the tool results that answered its calls in the trace; with ``tiers``, as ``sft_records``."""
    msgs = conv["messages"]
    meta = conv["meta"]
    for k, i in enumerate(_labels(conv)):
        m = msgs[i]
        turn = dict(m)
        if m.get("tool_calls"):
            turn["tool_calls"] = [_parse_args(tc) for tc in m["tool_calls"]]
        ids = {tc.get("id") for tc in m.get("tool_calls") or []}
        results = []
        for nxt in msgs[i + 1 :]:
            if nxt.get("role") != "tool":
                break
            if nxt.get("tool_call_id") in ids:
                results.append(nxt)
        yield DecisionPoint(
            id=content_id("dp", conv["id"], str(i)),
            conversation_id=conv["id"],
            split=split,
            turn_index=k,
            state=msgs[:i],
            tools=conv["tools"],
            next_turn=turn,
            tool_results=results,
            source=meta["source"],
            group=meta["root_request_id"],
            **_tier(conv, i, tiers),
        )


def _j(v: Any) -> str:
    return orjson.dumps(v).decode("utf-8")


_J = pa.json_(pa.string())  # one JSON text per value; ``datasets`` reads it back as the object (feature ``Json()``)
_JL = pa.list_(_J)
_SL = pa.list_(pa.string())


def _hf_schema(fields: list[tuple[str, pa.DataType]]) -> pa.Schema:
    """An Arrow schema plus the ``datasets`` features it stands for (its ``huggingface`` metadata), so
    ``load_dataset("parquet", …)`` decodes each JSON value into the object."""

    def feature(t: pa.DataType) -> dict[str, Any]:
        if t == _J:
            return {"_type": "Json"}
        if t == _JL:
            return {"feature": {"_type": "Json"}, "_type": "List"}
        if t == _SL:
            return {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"}
        return {"dtype": "int64" if t == pa.int64() else "string", "_type": "Value"}

    meta = {"info": {"features": {name: feature(t) for name, t in fields}}}
    return pa.schema(fields, metadata={"huggingface": orjson.dumps(meta).decode()})


def _storage_type(t: pa.DataType) -> pa.DataType:
    if t == _J:
        return pa.string()
    if t == _JL:
        return pa.list_(pa.string())
    return t


_IDS = [("id", pa.string()), ("conversation_id", pa.string()), ("split", pa.string())]
_ORIGIN = [("source", pa.string()), ("group", pa.string())]
PARQUET_SCHEMAS: dict[str, pa.Schema] = {
    "conversations": _hf_schema([("id", pa.string()), ("messages", _JL), ("tools", _JL), ("meta", _J), *_ORIGIN]),
    "sft": _hf_schema(
        [*_IDS, ("action_index", pa.int64()), ("prompt", _JL), ("completion", _JL), ("tools", _JL), *_ORIGIN]
    ),
    "decision_points": _hf_schema(
        [
            *_IDS,
            ("turn_index", pa.int64()),
            ("prompt", _JL),
            ("tools", _JL),
            ("next_turn", _J),
            ("tool_results", _JL),
            *_ORIGIN,
        ]
    ),
}
_TIER = [("fidelity", pa.string()), ("alterations", _SL)]
TIERED_PARQUET_SCHEMAS: dict[str, pa.Schema] = {
    **PARQUET_SCHEMAS,
    **{k: _hf_schema([*((f.name, f.type) for f in PARQUET_SCHEMAS[k]), *_TIER]) for k in ("sft", "decision_points")},
}
"""The schemas of a build at tier ``content``: SFT rows and decision points end with ``fidelity`` and
``alterations``."""


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
        # rows are built with the JSON columns as plain strings, then cast to Arrow's json type (from_pylist cannot
        # build an extension column from Python values)
        self._storage = pa.schema([f.with_type(_storage_type(f.type)) for f in schema], metadata=schema.metadata)
        self._writer = pq.ParquetWriter(pa.PythonFile(out, mode="w"), schema, compression="zstd")

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        self._chars += sum(
            len(v) if isinstance(v, str) else sum(map(len, v)) for v in row.values() if isinstance(v, (str, list))
        )
        if len(self._rows) >= self.batch or self._chars >= self.max_chars:
            self._flush()

    def _flush(self) -> None:
        if self._rows:
            self.out.mark(self._rows[0]["id"])
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self._storage).cast(self.schema))
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
    """Pre-serialised pieces of one conversation, from which every export line and Parquet row is assembled."""

    def __init__(self, conv: dict[str, Any], split: str, *, tiers: bool = False) -> None:
        self.conv = conv
        self.tiers = tiers  # a build at tier content: each record ends with its fidelity and alterations
        self.split = split
        self.msgs = conv["messages"]
        self.mb = [orjson.dumps(m) for m in self.msgs]
        self.tools = orjson.dumps(conv["tools"])
        self.cid = orjson.dumps(conv["id"])
        self.src = orjson.dumps(conv["meta"]["source"])
        self.grp = orjson.dumps(conv["meta"]["root_request_id"])
        self.sp = orjson.dumps(split)
        self.actions = _labels(conv)
        self._tm: list[str] | None = None
        self._tm_failed = False

    @property
    def template_messages(self) -> list[str] | None:
        """Each message in chat-template form as JSON text (the Parquet rows' elements); None when a message cannot
        be given to a template (``to_template_message`` refused it)."""
        if self._tm is None and not self._tm_failed:
            try:
                self._tm = [_j(to_template_message(m)) for m in self.msgs]
            except MessageError:
                self._tm_failed = True
        return self._tm

    def _origin(self) -> dict[str, Any]:
        return {"source": self.conv["meta"]["source"], "group": self.conv["meta"]["root_request_id"]}

    def _tool_list(self) -> list[str]:
        return [_j(t) for t in self.conv["tools"]]

    def tier_counts(self) -> Counter[str]:
        """Its labels per fidelity tier, as ``sft_<tier>`` (empty unless ``tiers``)."""
        if not self.tiers:
            return Counter()
        return Counter(f"sft_{_tier(self.conv, i, True)['fidelity']}" for i in self.actions)

    def _tier(self, i: int) -> tuple[list[tuple[str, bytes]], dict[str, Any]]:
        """The context ``msgs[:i]``'s tier as JSONL pairs and as Parquet fields (both empty unless ``tiers``)."""
        fields = _tier(self.conv, i, self.tiers)
        return [(k, orjson.dumps(v)) for k, v in fields.items()], fields

    def conversation_row(self) -> dict[str, Any] | None:
        tm = self.template_messages
        if tm is None:
            return None
        return {
            "id": self.conv["id"],
            "messages": tm,
            "tools": self._tool_list(),
            "meta": _j(self.conv["meta"]),
            **self._origin(),
        }

    def sft(self) -> Iterator[tuple[str, bytes, dict[str, Any] | None]]:
        """(record id, JSONL line without newline, Parquet row or None) per assistant action."""
        tm = self.template_messages
        tools = self._tool_list() if tm is not None else []
        for k, i in enumerate(self.actions):
            rid = content_id("sft", self.conv["id"], str(i))
            ctx = _arr(self.mb[:i])
            pairs, tier = self._tier(i)
            line = _obj(
                [
                    ("id", orjson.dumps(rid)),
                    ("conversation_id", self.cid),
                    ("split", self.sp),
                    ("action_index", orjson.dumps(k)),
                    ("messages", ctx),
                    ("tools", self.tools),
                    ("action", self.mb[i]),
                    ("source", self.src),
                    ("group", self.grp),
                    *pairs,
                ]
            )
            row = (
                None
                if tm is None
                else {
                    "id": rid,
                    "conversation_id": self.conv["id"],
                    "split": self.split,
                    "action_index": k,
                    "prompt": tm[:i],
                    "completion": [tm[i]],
                    "tools": tools,
                    **self._origin(),
                    **tier,
                }
            )
            yield rid, line, row

    def decision_points(self) -> Iterator[tuple[str, bytes, dict[str, Any] | None]]:
        tm = self.template_messages
        tools = self._tool_list() if tm is not None else []
        for k, i in enumerate(self.actions):
            m = self.msgs[i]
            rid = content_id("dp", self.conv["id"], str(i))
            turn = dict(m)
            if m.get("tool_calls"):
                turn["tool_calls"] = [_parse_args(tc) for tc in m["tool_calls"]]
            ids = {tc.get("id") for tc in m.get("tool_calls") or []}
            res: list[int] = []
            for j in range(i + 1, len(self.msgs)):
                if self.msgs[j].get("role") != "tool":
                    break
                if self.msgs[j].get("tool_call_id") in ids:
                    res.append(j)
            state, nt, tr = _arr(self.mb[:i]), orjson.dumps(turn), _arr([self.mb[j] for j in res])
            pairs, tier = self._tier(i)
            line = _obj(
                [
                    ("id", orjson.dumps(rid)),
                    ("conversation_id", self.cid),
                    ("split", self.sp),
                    ("turn_index", orjson.dumps(k)),
                    ("state", state),
                    ("tools", self.tools),
                    ("next_turn", nt),
                    ("tool_results", tr),
                    ("source", self.src),
                    ("group", self.grp),
                    *pairs,
                ]
            )
            row = (
                None
                if tm is None
                else {
                    "id": rid,
                    "conversation_id": self.conv["id"],
                    "split": self.split,
                    "turn_index": k,
                    "prompt": tm[:i],
                    "tools": tools,
                    "next_turn": tm[i],
                    "tool_results": [tm[j] for j in res],
                    **self._origin(),
                    **tier,
                }
            )
            yield rid, line, row


_KINDS = ("conversations", "sft", "decision_points")


def _write_records(
    ex: ConversationExport,
    files: dict[str, Any],
    pq_out: dict[str, Any],
    n: Counter[str] | dict,
    tier_counts: Counter[str],
) -> None:
    """The one export of training records: one conversation's (or exact prefix's) SFT records and decision points
    into the split's open files and Parquet outputs, counted into ``n`` and its labels' tiers into ``tier_counts``."""
    tier_counts.update(ex.tier_counts())
    for kind, rows in (("sft", ex.sft()), ("decision_points", ex.decision_points())):
        for rid, line, row in rows:
            files[kind].mark(rid)
            files[kind].write(line + b"\n")
            n[kind] += 1
            if pq_out and row is not None:  # None: a message no template takes (counted as parquet_skipped)
                pq_out[kind].add(row)


def write_exports(
    sink: Any,
    spool: list[tuple[str, str, bytes, str]],
    assignment: dict[str, str],
    split_groups: dict[str, set[str]],
    *,
    parquet: bool,
    bar: Any = None,
    prefixes: Any = None,
    tiers: bool = False,
) -> tuple[dict[str, dict[str, int]], Counter[str]]:
    """The export stage: for each split, the kept conversations (``spool``: id, group, line, source) whose group
    ``assignment`` puts there, with their SFT records and decision points, as JSONL (and Parquet copies); then the
    SFT records and decision points of the split's exact prefixes (``prefixes``: a ``dataset.prefixes.PrefixSpool``;
    never a conversation line), written and counted by the same ``_write_records``: in ``sft`` / ``decision_points``
    and apart as ``prefix_sft`` / ``prefix_decision_points``. With ``tiers`` (a build at tier ``content``) each
    record says its fidelity, and the counts per tier are ``sft_<tier>``. Returns the counts per split (the one set
    of counts: the prefixes' summary sums its ``prefix_*``) and the kept conversations per source."""
    per_split: dict[str, dict[str, int]] = {}
    kept_by_source: Counter[str] = Counter()
    task = bar.add_task("export", total=len(spool)) if bar is not None else None
    for split in split_groups:
        # every byte of these files comes from the spool, which the redact stage wrote
        files = {k: sink.open(f"{k}/{split}.jsonl", redacted_records=True) for k in _KINDS}
        schemas = TIERED_PARQUET_SCHEMAS if tiers else PARQUET_SCHEMAS
        pq_out = (
            {
                k: ParquetOut(sink.open(f"parquet/{k}/{split}.parquet", redacted_records=True), schemas[k])
                for k in _KINDS
            }
            if parquet
            else {}
        )
        n = {"groups": len(split_groups[split]), **dict.fromkeys(_KINDS, 0)}
        tier_counts: Counter[str] = Counter()
        for cid, group, body, source in spool:
            if assignment[group] != split:
                continue
            files["conversations"].mark(cid)
            files["conversations"].write(body + b"\n")
            n["conversations"] += 1
            kept_by_source[source] += 1
            ex = ConversationExport(orjson.loads(body), split, tiers=tiers)
            _write_records(ex, files, pq_out, n, tier_counts)
            if pq_out:
                row = ex.conversation_row()
                if row is None:
                    n["parquet_skipped"] = n.get("parquet_skipped", 0) + 1
                else:
                    pq_out["conversations"].add(row)
            if task is not None:
                bar.advance(task)
        if prefixes is not None:
            of_prefixes: Counter[str] = Counter()
            for body in prefixes.in_split(split, assignment):
                _write_records(
                    ConversationExport(orjson.loads(body), split, tiers=tiers), files, pq_out, of_prefixes, tier_counts
                )
            n["prefix_sft"], n["prefix_decision_points"] = of_prefixes["sft"], of_prefixes["decision_points"]
            n["sft"] += n["prefix_sft"]
            n["decision_points"] += n["prefix_decision_points"]
        if tiers:
            n.update({f"sft_{t}": tier_counts[f"sft_{t}"] for t in ("byte", "content")})
        for f in files.values():
            f.close()
        for p in pq_out.values():
            p.close()
        per_split[split] = n
    return per_split, kept_by_source

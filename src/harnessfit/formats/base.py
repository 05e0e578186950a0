"""The two contracts a source format implements: a reader (a file → trajectories) and a mapping (a source tool call →
Pi tool calls). A format is one folder, ``formats/<name>/`` with ``reader.py`` and ``mapping.py``, plus one entry in
``formats.registry.FORMATS``.

**Reader** (subclass ``BaseTraceReader``; implement ``detect`` and ``read_file``). A reader turns one input *unit*
(a file, or a folder for formats stored one-file-per-event such as OpenHands V1) into canonical ``Trajectory``
records, and ``Rejection`` records for whatever it could not read. The base class owns what every reader needs and
none should repeat: hashing the unit, the file-level checks (unreadable / empty / binary), JSONL streaming with a
line-size cap (``json_lines``) and whole-document loading (``load_document``), an exception from ``read_file``
turned into a ``parse_error`` rejection (records already yielded stay), and relabelling records with the unit's
stable label. So ``read_file(path, sha)`` only parses:

- ``detect(path) -> bool``: cheap, by *content* (sniff the first bytes / first JSON keys with ``reading.sniff`` or
  ``reading.first_json_line``), never only by file name. Called on files *and* folders during the walk: return
  ``True`` for a folder only if the folder itself is one unit of your format. Must not raise.
- ``read_file(path, sha) -> Iterator[Trajectory | Rejection]``: every record in a deterministic order; ids from
  content (``self.trajectory`` and ``self.reject`` derive them from ``sha`` and a position), never from the path,
  the clock or the host. A bad line is a rejection and reading goes on.

Readers keep the *source's* tool names and argument shapes in the Trajectory. Facts a gate turns into a rejection
go into ``Trajectory.flags``: ``subagent``, ``side_branch`` (a non-active branch of a session tree), ``lines_lost``
(some lines could not be read: each got its own Rejection, and the gate rejects the trajectory too, because a
conversation with a hole must not be trained), ``truncated`` (the unit ended mid-record), ``user_rejected_tool``.
Accounting: every record a reader yields is one "read" record; the converter turns each Trajectory into exactly one
Conversation or one Rejection and passes reader Rejections through, so ``read = accepted + rejected``.

**Mapping** (a ``Mapping``: one method, ``map_call(call, result, ctx)``). A mapping never guesses. For each source
call it returns exactly one outcome:

- ``PiCall`` (or a list of them, when one source call is exactly several Pi calls, e.g. a patch over two files):
  the Pi tool ``name``, the ``arguments`` *object* (a dict, key order as Pi's schema lists them), the Pi-format
  ``result`` text (what Pi's tool would have returned; ``None`` only when the source has no result step for the
  call, which the converter answers with Pi's synthetic "No result provided" as Pi does; a ``Failure`` when the
  call is exact but its result cannot be rendered as Pi's — the call can then still be a training label, the
  context after it cannot: use :func:`result_failure`; an ``Altered`` when the environment's output is known except
  for an alteration the source agent is documented to make, such as whitespace it trimmed: the content tier renders
  Pi's text from it, the byte tier treats it as its ``failure``), and the ``transformations`` done (short stable strings such
  as ``"claude.Read->read"``, ``"read_result.strip_line_numbers"``; the converter appends them, de-duplicated and in
  first-seen order, to the conversation's provenance).
- ``Drop``: the call and its result are removed under a documented policy (UI-only tools that change nothing in the
  workspace and that Pi would never see: TodoWrite, update_plan…). ``policy`` becomes a transformation string
  (``"drop:<policy>"``). The converter drops it only where that changes no later context the model saw (the
  ``convert.policy.ConvertPolicy`` rules); elsewhere the call is a ``ui_only_call`` blocker.
- ``Failure`` (``harnessfit.core``): the *call* has no exact Pi equivalent — a closed ``Reason``
  (``unsupported_tool``, ``unmappable_arguments``, ``arguments_double_encoded``…), a one-line ``detail`` computed from
  the data and a ``repair_hint`` that fits the case. The call is no training label, nor is anything after it.

The converter (not the mapping) then validates every mapped call against the card (``card.validate_call``); the
gates reject errors, result images, orphans and (outside Pi sessions) results a later turn saw that the trace lost.
Helpers here are shared by every mapping:
:func:`parse_arguments` (object / JSON text / double-encoded), :func:`arg_failure`, :func:`result_failure`,
:func:`unsupported`, :func:`with_result`. Pi's result wording lives in ``harnessfit.harness.pi_results``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import orjson

from harnessfit.core.ids import content_id, root_request_id
from harnessfit.core.jsonl import BadLine, JsonLine, iter_jsonl
from harnessfit.core.rejection import Failure, Reason, Rejection, excerpt, reject
from harnessfit.core.trajectory import Provenance, Step, ToolCall, Trajectory
from harnessfit.formats.reading import file_problem, file_sha256, load_json_document, max_record_bytes

if TYPE_CHECKING:
    from harnessfit.harness.card import HarnessCard

__all__ = [
    "BaseTraceReader",
    "PiCall",
    "Altered",
    "Drop",
    "Failure",
    "MapOutcome",
    "MapContext",
    "Mapping",
    "parse_arguments",
    "arg_failure",
    "result_failure",
    "unsupported",
    "unsupported_hint",
    "with_result",
    "result_text",
]


@dataclass(frozen=True, slots=True)
class Altered:
    """A result whose environment output the source recorded except for an alteration its agent is documented to make
    (fidelity tier ``content``): ``text`` is Pi's result text rendered from the recorded content (the framing is the
    target Pi's own; a ``Failure`` when even the content tier cannot render it, e.g. output over Pi's limits),
    ``alterations`` name what the source agent did to the output (stable names such as
    ``claude_code.bash_edges_trimmed``; each mapping's docstring cites where the agent does it), and ``failure`` is
    why the byte tier cannot render it (``unmappable_result``), used as the result when the build keeps every byte."""

    text: str | Failure
    alterations: tuple[str, ...]
    failure: Failure


@dataclass(frozen=True, slots=True)
class PiCall:
    """One Pi tool call and the Pi-format text its result would have had (``None``: the source has no result; a
    ``Failure``: the call is exact, its result cannot be rendered; an ``Altered``: rendered from content the source
    agent altered in a documented way)."""

    name: str
    arguments: dict[str, Any]
    result: str | Failure | Altered | None
    transformations: tuple[str, ...] = ()
    refused: bool = False
    """Pi refused the call before running it and ``result`` is that refusal in the target Pi's words: the call stays
    in the context as the target Pi replays it (so the turns after it are exact and show the recovery), and is never
    a label."""


@dataclass(frozen=True, slots=True)
class Drop:
    """Remove this call and its result under a documented policy: a UI-only tool Pi would never see (``policy`` names
    it), or, with ``ends_episode``, the source's end-of-episode call (SWE-agent's ``submit``: Pi ends a run with an
    answer, so the turn's text is the final answer). The converter decides whether the drop changes a later context
    the model saw (``convert.policy``); where it would, the call is a blocker instead."""

    policy: str
    ends_episode: bool = False


MapOutcome = PiCall | Sequence[PiCall] | Drop | Failure


@dataclass(slots=True)
class MapContext:
    """What a mapping may look at besides the call: the harness card (``card.format_result``, ``card.tools``),
    the trajectory (for ``cwd`` and source details), and the cwd the system prompt will show (after defaults)."""

    card: HarnessCard
    trajectory: Trajectory
    cwd: str


@runtime_checkable
class Mapping(Protocol):
    """Maps one source format's tool calls to Pi; registered beside its reader in ``formats.registry.FORMATS``."""

    def map_call(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome: ...


def parse_arguments(raw: Any, tool: str) -> dict[str, Any] | Failure:
    """Source arguments → a dict, or a Failure.

    - a dict is returned as is;
    - a string holding a JSON object is parsed (the ordinary OpenAI wire form);
    - a string holding a JSON *string* (a string of a string) is ``arguments_double_encoded`` — Pi rejects such
      calls rather than unwrapping them, so training on them would teach a call Pi refuses;
    - anything else (broken JSON, a list, a number) is ``unmappable_arguments``. ``None`` / ``""`` mean ``{}``.
    """
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return Failure(
                Reason.unmappable_arguments,
                f"{tool}: arguments are not valid JSON ({excerpt(raw, 80)!r})",
                "re-emit the call with a complete JSON object",
            )
        if isinstance(value, str):
            return Failure(
                Reason.arguments_double_encoded,
                f"{tool}: arguments are a JSON string holding JSON ({excerpt(raw, 80)!r})",
                "decode the inner string once so arguments is a JSON object",
            )
        if isinstance(value, dict):
            return value
        return Failure(
            Reason.unmappable_arguments,
            f"{tool}: arguments are JSON {type(value).__name__}, not an object",
            "arguments must be a JSON object",
        )
    return Failure(
        Reason.unmappable_arguments,
        f"{tool}: arguments of type {type(raw).__name__}",
        "arguments must be a JSON object",
    )


def arg_failure(tool: str, detail: str, hint: str) -> Failure:
    """``unmappable_arguments`` for ``tool`` with a detail and a repair hint."""
    return Failure(Reason.unmappable_arguments, f"{tool}: {detail}", hint)


def result_failure(tool: str, detail: str, hint: str) -> Failure:
    """``unmappable_result`` for ``tool``: the call maps, its result cannot be rendered as Pi's (put it in
    ``PiCall.result``)."""
    return Failure(Reason.unmappable_result, f"{tool} result: {detail}", hint)


def with_result(outcome: MapOutcome, result: str | Failure | Altered | None) -> MapOutcome:
    """``outcome`` with its (single) Pi call's result replaced, e.g. by a ``Failure`` found after mapping."""
    if isinstance(outcome, PiCall):
        return PiCall(outcome.name, outcome.arguments, result, outcome.transformations)
    return outcome


_SUBAGENT_TOOLS = frozenset({"Task", "Agent", "spawn_agent", "wait_agent", "delegate", "task"})
_SEARCH_TOOLS = frozenset(
    {
        "Glob",
        "Grep",
        "LS",
        "grep",
        "find",
        "ls",
        "find_file",
        "search_dir",
        "search_file",
        "glob",
        "list_dir",
        "list_directory",
    }
)
_WEB_TOOLS = frozenset({"WebFetch", "WebSearch", "web_search", "fetch_url", "web_fetch", "browser"})
_USER_TOOLS = frozenset({"AskUserQuestion", "request_user_input", "ask_user"})


def unsupported_hint(tool: str) -> str:
    """A repair hint that fits the kind of tool Pi lacks."""
    if tool.startswith("mcp__"):
        return (
            "an MCP server's tool: Pi's card has no MCP tools; keep sessions that do not call it, or convert with "
            "a card that includes the server's tools"
        )
    if tool in _SUBAGENT_TOOLS:
        return "Pi has no sub-agents: keep sessions that do not delegate, or train with a harness that has a Task tool"
    if tool in _SEARCH_TOOLS:
        return "Pi's default tools search with bash: re-run the search as a bash command"
    if tool in _WEB_TOOLS:
        return "Pi has no web tools: keep sessions that do not browse, or give the agent the pages as files"
    if tool in _USER_TOOLS:
        return "the call hands control to the user mid-turn; in Pi the agent ends its turn with a question instead"
    return "re-run the task with only read/bash/edit/write, or express the call as a bash command by hand"


def unsupported(tool: str, why: str = "Pi has no such tool", hint: str | None = None) -> Failure:
    """``unsupported_tool``: the source used a tool Pi's card does not offer (the hint fits the kind of tool)."""
    return Failure(Reason.unsupported_tool, f"tool {tool!r}: {why}", hint or unsupported_hint(tool))


def result_text(result: Step | None) -> str | None:
    """The source result text (``None`` when there is no result step)."""
    if result is None:
        return None
    return result.text or ""


# ------------------------------------------------------------------------------------------------ readers
_BAD_LINE_REASONS = {
    "too_long": Reason.record_too_large,
    "not_utf8": Reason.not_utf8,
    "invalid_json": Reason.parse_error,
    "truncated": Reason.truncated_file,
}
_BAD_LINE_HINTS = {
    "too_long": "split or trim the oversized record (usually an embedded file or image)",
    "not_utf8": "re-encode the file as UTF-8",
    "invalid_json": "fix or remove the line",
    "truncated": "the file ends mid-record: drop the partial last line",
}


class BaseTraceReader(ABC):
    """One source format's reader. Why a base class: hashing, file checks, streaming, errors and relabelling are the
    same for every format and were once repeated in each reader; here a reader only parses (``read_file``).

    ``read(path, label)`` is the entry point the registry calls; subclasses implement ``detect`` and ``read_file``
    and use the helpers (``json_lines``, ``load_document``, ``reject``, ``trajectory``)."""

    name: ClassVar[str]
    """The format name: the registry key, ``Trajectory.source`` and ``Provenance.format``."""

    @abstractmethod
    def detect(self, path: Path) -> bool:
        """Whether ``path`` (a file, or a folder that is one unit) is this format, by content. Must not raise."""

    @abstractmethod
    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        """Parse one unit that passed the file checks; ``sha`` is its SHA-256 (``reading.file_sha256``)."""

    def read(self, path: Path, label: str | None = None) -> Iterator[Trajectory | Rejection]:
        """Every record of one unit: hashed, checked, parsed, and relabelled with ``label`` (the unit's stable
        name; ``None`` keeps ``str(path)``). An exception ``read_file`` lets escape becomes one ``parse_error``
        rejection after the records already yielded, so one odd file never stops a run."""
        sha = file_sha256(path)
        count = 0
        try:
            problem = file_problem(path, self.name, sha) if path.is_file() else None
            if problem is not None:
                yield _relabel(problem, label)
                return
            for record in self.read_file(path, sha):
                count += 1
                yield _relabel(record, label)
        except Exception as exc:  # noqa: BLE001 - a reader bug on odd data: keep going, say so in the ledger
            yield _relabel(
                self.reject(
                    path,
                    sha,
                    Reason.parse_error,
                    f"reader {self.name} failed after {count} record(s): {type(exc).__name__}: {excerpt(str(exc), 200)}",
                    "inspect the file; the reader could not make sense of its structure",
                ),
                label,
            )

    # -------------------------------------------------------------------------------- helpers for read_file
    def json_lines(self, path: Path, sha: str) -> Iterator[JsonLine | Rejection]:
        """Stream a JSONL file: ``JsonLine`` for each good record, a ``Rejection`` for each bad one (with its line).

        Every layout ``core.jsonl.iter_jsonl`` reads is accepted (one object per line, pretty-printed objects one
        after the other, several on a line, a top-level array, CRLF); ``JsonLine.lineno`` is the line a record
        starts on. Blank lines are skipped. A record over ``reading.max_record_bytes()`` is skipped without being held in memory
        (``record_too_large``); invalid UTF-8 is ``not_utf8``; invalid JSON is ``parse_error``, except where the file
        ends inside the record, which is ``truncated_file`` (the writer stopped mid-record)."""
        try:
            fh = path.open("rb")
        except OSError as exc:
            yield self.reject(path, sha, Reason.parse_error, f"cannot open: {exc.strerror}", "check permissions")
            return
        with fh:
            for item in iter_jsonl(fh, max_line_bytes=max_record_bytes(), bad_lines="report"):
                if type(item) is BadLine:
                    yield self.reject(
                        path,
                        sha,
                        _BAD_LINE_REASONS[item.kind],
                        item.detail,
                        _BAD_LINE_HINTS[item.kind],
                        line=item.lineno,
                    )
                else:
                    yield item  # type: ignore[misc]

    def load_document(self, path: Path, sha: str, *, checked: bool = True) -> Any | Rejection:
        """A whole-file JSON document, or a Rejection saying why not (``reading.load_json_document``).
        ``checked=False`` for a file inside a folder unit, which the base has not checked."""
        return load_json_document(path, self.name, sha, checked=checked)

    def reject(
        self,
        path: Path,
        sha: str,
        reason: Reason,
        detail: str,
        hint: str,
        *,
        line: int | None = None,
        line_start: int | None = None,
        line_end: int | None = None,
        record_id: str | None = None,
    ) -> Rejection:
        """A Rejection of (part of) this unit; ``line`` is shorthand for a one-line span."""
        if line is not None:
            line_start = line_end = line
        return reject(
            path,
            reason,
            detail,
            hint,
            source=self.name,
            sha256=sha,
            line_start=line_start,
            line_end=line_end,
            record_id=record_id,
        )

    def trajectory(
        self,
        path: Path,
        sha: str,
        *,
        key: str,
        steps: list[Step],
        cwd: str | None = None,
        date: str | None = None,
        repository: str | None = None,
        source_harness_version: str | None = None,
        flags: Sequence[str] = (),
        line_start: int | None = None,
        line_end: int | None = None,
        transformations: Sequence[str] = (),
    ) -> Trajectory:
        """A Trajectory with content-derived ids.

        ``key`` distinguishes several trajectories of one unit (a branch leaf id, an index); ``id`` hashes the
        format, the unit's SHA-256 and the key. ``root_request_id`` groups runs that start from the same first user
        prompt in the same repository (``repository`` falls back to ``cwd``)."""
        first_prompt = next((s.text or "" for s in steps if s.role == "user"), "")
        return Trajectory(
            id=content_id("traj", self.name, sha, key),
            source=self.name,
            steps=steps,
            cwd=cwd,
            date=date,
            repository=repository,
            root_request_id=root_request_id(first_prompt, repository or cwd),
            source_harness_version=source_harness_version,
            flags=sorted(set(flags)),
            provenance=Provenance(
                format=self.name,
                file=str(path),
                sha256=sha,
                line_start=line_start,
                line_end=line_end,
                transformations=list(transformations),
            ),
        )


def _relabel(record: Trajectory | Rejection, label: str | None) -> Trajectory | Rejection:
    """Replace the reader's path with the unit's stable label (in place)."""
    if label is not None:
        if isinstance(record, Trajectory):
            record.provenance.file = label
        else:
            record.file = label
    return record

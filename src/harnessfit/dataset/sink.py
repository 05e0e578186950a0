"""Where a build's bytes go: to disk (``DiskSink``) or compared against disk (``CompareSink``, used by verify).

The build writes every output through one of these, record by record, so ``verify`` re-runs the exact same code
path and can name the first record whose bytes differ, without holding the dataset in memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import orjson

from harnessfit.pipeline.output import StagedFolder, unlisted_entries

if TYPE_CHECKING:
    from harnessfit.dataset.redact import Scrubber

__all__ = ["OutFile", "Sink", "DiskSink", "CompareSink", "Mismatch", "MANIFEST_FORMAT", "dataset_problem"]

MANIFEST_FORMAT = "harnessfit-dataset/1"


class OutFile:
    """One output file being produced: ``mark(record_id)`` before each record, then ``write`` its bytes (whole
    records per call: ``scrub``, when set, redacts each call's bytes on their own)."""

    def __init__(self, relpath: str) -> None:
        self.relpath = relpath
        self._h = hashlib.sha256()
        self.size = 0
        self.records = 0
        self.current: str | None = None
        self.closed = False
        self.scrub: Callable[[bytes], bytes] | None = None

    def mark(self, record_id: str) -> None:
        self.records += 1
        self.current = record_id

    def write(self, data: bytes) -> int:
        n = len(data)
        if self.scrub is not None:
            data = self.scrub(data)
        self._h.update(data)
        self.size += len(data)
        self._emit(data)
        return n

    def _emit(self, data: bytes) -> None:  # overridden
        pass

    def close(self) -> None:
        self.closed = True

    # pyarrow writes through file-like objects
    def flush(self) -> None:
        pass

    def tell(self) -> int:
        return self.size

    @property
    def sha256(self) -> str:
        return self._h.hexdigest()


class Mismatch:
    """First difference found in one file: which record (id and 1-based line/row position) and why."""

    def __init__(self, relpath: str, record_id: str | None, position: int, detail: str) -> None:
        self.relpath, self.record_id, self.position, self.detail = relpath, record_id, position, detail

    def __str__(self) -> str:
        rec = f" record {self.record_id} (record #{self.position})" if self.record_id else ""
        return f"{self.relpath}:{rec} {self.detail}"


class Sink:
    """Base: collects the produced files in order (for the manifest), and is the build's one redaction choke point:
    with a ``scrubber`` set, every byte written to a file passes through it, unless the file is opened with
    ``redacted_records=True`` (its bytes are made only from conversations the redact stage produced: the JSONL
    exports and their Parquet copies)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.files: list[OutFile] = []
        self.scrubber: Scrubber | None = None

    def open(self, relpath: str, *, redacted_records: bool = False) -> OutFile:
        f = self._open(relpath)
        if self.scrubber is not None and not redacted_records:
            scrub = self.scrubber.file_bytes
            f.scrub = lambda data: scrub(relpath, data)
        self.files.append(f)
        return f

    def _open(self, relpath: str) -> OutFile:
        raise NotImplementedError

    def finish(self) -> None:
        pass

    def abort(self) -> None:
        """The run failed: drop what was produced (a disk sink removes its staged folder)."""


class _DiskFile(OutFile):
    def __init__(self, relpath: str, fh: BinaryIO) -> None:
        super().__init__(relpath)
        self._fh = fh

    def _emit(self, data: bytes) -> None:
        self._fh.write(data)

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()


def dataset_problem(folder: Path) -> str | None:
    """Why the non-empty ``folder`` is not a dataset a build may replace (``None``: it is one harnessfit built, and
    every file in it is one its manifest lists). Only harnessfit's own manifest format counts: a web app's or
    another tool's ``manifest.json`` does not make a folder ours."""
    path = folder / "manifest.json"
    try:
        manifest = orjson.loads(path.read_bytes()) if path.is_file() and not path.is_symlink() else None
    except (OSError, orjson.JSONDecodeError):
        manifest = None
    outputs = manifest.get("outputs") if isinstance(manifest, dict) else None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT or not isinstance(outputs, list):
        return f"is not empty and is not a harnessfit dataset (no manifest.json of format {MANIFEST_FORMAT})"
    listed = {o.get("path") for o in outputs if isinstance(o, dict)} | {"manifest.json"}
    extra = unlisted_entries(folder, listed)  # type: ignore[arg-type]
    if extra:
        return f"holds {len(extra)} file(s) its manifest does not list, e.g. {extra[0]}"
    return None


class DiskSink(Sink):
    """Writes the dataset ``root`` through a ``StagedFolder``: into a hidden sibling, swapped in by ``finish``
    (``abort`` removes it), so the previous dataset stays whole until the new one is complete. An existing folder
    is replaced only when it is a dataset harnessfit built (``dataset_problem``); ``inputs`` must lie outside it."""

    def __init__(self, root: Path, *, inputs: Sequence[Path] = ()) -> None:
        super().__init__(root)
        self._staged = StagedFolder(self.root, problem=dataset_problem, inputs=inputs)
        self._dir = self._staged.path

    def _open(self, relpath: str) -> OutFile:
        p = self._dir / relpath
        p.parent.mkdir(parents=True, exist_ok=True)
        return _DiskFile(relpath, p.open("wb"))

    def finish(self) -> None:
        for f in self.files:
            f.close()
        self._staged.commit()

    def abort(self) -> None:
        for f in self.files:
            f.close()
        self._staged.abort()


class _CompareFile(OutFile):
    def __init__(self, relpath: str, path: Path, sink: CompareSink) -> None:
        super().__init__(relpath)
        self._sink = sink
        self._fh = path.open("rb") if path.is_file() else None
        if self._fh is None:
            sink.report(Mismatch(relpath, None, 0, "missing on disk"))

    def _emit(self, data: bytes) -> None:
        if self._fh is None or self.relpath in self._sink.mismatches:
            return
        disk = self._fh.read(len(data))
        if disk != data:
            self._sink.report(Mismatch(self.relpath, self.current, self.records, "differs from the rebuilt bytes"))

    def close(self) -> None:
        if not self.closed and self._fh is not None:
            if self.relpath not in self._sink.mismatches and self._fh.read(1):
                self._sink.report(Mismatch(self.relpath, None, self.records, "has extra bytes after the last record"))
            self._fh.close()
        super().close()


class CompareSink(Sink):
    """Compares the rebuilt bytes with the files under ``root``; writes nothing."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.mismatches: dict[str, Mismatch] = {}

    def report(self, m: Mismatch) -> None:
        self.mismatches.setdefault(m.relpath, m)

    def _open(self, relpath: str) -> OutFile:
        return _CompareFile(relpath, self.root / relpath, self)

    def first_mismatch(self) -> Mismatch | None:
        for f in self.files:  # production order = manifest order
            if f.relpath in self.mismatches:
                return self.mismatches[f.relpath]
        return next(iter(self.mismatches.values()), None)

"""``verify``: rebuild a dataset in memory from its manifest (inputs + config) and compare byte for byte.

Nothing is written: the rebuild streams through a ``CompareSink`` that reads the files on disk alongside. Inputs
are checked first (present, unchanged) so a changed input is reported as such, not as a differing record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from harnessfit.dataset.build import MANIFEST_FORMAT, input_files, run_build
from harnessfit.dataset.config import BuildConfig
from harnessfit.dataset.sink import CompareSink
from harnessfit.errors import UserError
from harnessfit.core.jsonio import sha256_file

__all__ = ["VerifyResult", "verify_dataset", "read_manifest"]


class VerifyResult(BaseModel):
    """``ok`` or the first differing file, with the record id and its position when the file holds records."""

    ok: bool
    file: str | None = None
    record_id: str | None = None
    position: int | None = None
    detail: str | None = None
    files_checked: int = 0

    def message(self) -> str:
        if self.ok:
            return f"OK: {self.files_checked} files identical to a fresh rebuild"
        rec = f", record {self.record_id} (#{self.position})" if self.record_id else ""
        return f"MISMATCH: {self.file}{rec}: {self.detail}"


def read_manifest(folder: Path) -> dict[str, Any]:
    path = Path(folder) / "manifest.json"
    if not path.is_file():
        raise UserError(f"no manifest.json in {folder}: not a harnessfit dataset folder")
    try:
        m = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        raise UserError(f"{path} is not valid JSON") from None
    if not isinstance(m, dict) or m.get("format") != MANIFEST_FORMAT:
        raise UserError(f"{path}: unknown manifest format (expected {MANIFEST_FORMAT})")
    return m


def _check_inputs(folder: Path, manifest: dict[str, Any], config: BuildConfig) -> None:
    listed = {(folder / r["path"]).resolve(): r for r in manifest["inputs"]}
    for p, row in listed.items():
        if not p.is_file():
            raise UserError(f"input missing: {row['path']} (listed in the manifest, resolved to {p})")
        if sha256_file(p) != row["sha256"]:
            raise UserError(f"input changed since the build: {row['path']} (sha256 differs from the manifest)")
    now = set(input_files(config.resolved_inputs(folder)))
    extra = sorted(now - set(listed))
    if extra:
        raise UserError(f"input folder has a file the build did not see: {extra[0]}")


def verify_dataset(folder: Path, *, workers: int = 1, progress: bool = False) -> VerifyResult:
    folder = Path(folder).resolve()
    manifest = read_manifest(folder)
    cfg = dict(manifest["config"])
    cfg["workers"] = workers
    try:
        config = BuildConfig.model_validate(cfg)
    except Exception as exc:  # noqa: BLE001 — a hand-edited manifest
        raise UserError(f"manifest config is not valid: {str(exc).splitlines()[0]}") from None
    for i in config.inputs:
        if not (folder / i.path).exists():
            raise UserError(f"input missing: {i.path} (resolved to {(folder / i.path).resolve()})")
    _check_inputs(folder, manifest, config)
    sink = CompareSink(folder)
    run_build(config, folder, sink, out_dir=folder, progress=progress)
    first = sink.first_mismatch()
    if first is None:
        return VerifyResult(ok=True, files_checked=len(sink.files))
    rid = first.record_id if first.record_id != first.relpath else None
    return VerifyResult(ok=False, file=first.relpath, record_id=rid, position=first.position if rid else None,
                        detail=first.detail, files_checked=len(sink.files))



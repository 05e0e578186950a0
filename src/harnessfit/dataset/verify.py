"""``verify``: rebuild a dataset in memory from its manifest (inputs + config) and compare byte for byte; then check
that every kept context (each SFT record's messages, each decision point's state) holds only Pi-authored texts the
dataset's target Pi writes (``harness.pi_texts.text_violations``).

Nothing is written: the rebuild streams through a ``CompareSink`` that reads the files on disk alongside. Inputs
are checked first (present, unchanged) so a changed input is reported as such, not as a differing record; then
the folder itself: a file the manifest does not list (a planted shard) is a mismatch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from harnessfit.dataset.build import (
    MANIFEST_FORMAT,
    input_files,
    input_rows_of,
    redaction_settings,
    run_build,
    side_scrubber,
)
from harnessfit.dataset.config import BuildConfig
from harnessfit.dataset.sink import CompareSink
from harnessfit.errors import UserError
from harnessfit.harness.card import load_harness
from harnessfit.harness.pi_texts import text_violations
from harnessfit.pipeline.output import unlisted_entries

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
    """The inputs the config names, walked now, against the manifest's rows: the rows the build would write for
    them now (paths redacted the same way) must be the rows it wrote."""
    # the manifest's config holds the install folder used and the input paths relative to the folder
    scrubber = side_scrubber(redaction_settings(config, config.install_dir), [i.path for i in config.inputs])
    files = input_files(config.resolved_inputs(folder))
    now: dict[str, list[tuple[Path, str | None]]] = {}
    for p, row in zip(files, input_rows_of(files, folder, scrubber), strict=True):
        now.setdefault(row["path"], []).append((p, row["sha256"]))
    listed: dict[str, list[str | None]] = {}
    for row in manifest["inputs"]:
        listed.setdefault(row["path"], []).append(row["sha256"])
    for path, shas in listed.items():
        found = now.get(path)
        if not found:
            raise UserError(f"input missing: {path} (listed in the manifest, resolved to {(folder / path).resolve()})")
        if sorted(s or "" for s in shas) != sorted(s or "" for _, s in found):
            if any(s is None for _, s in found) and all(s is not None for s in shas):
                raise UserError(f"input can no longer be read: {path} (it was read at build time)")
            raise UserError(f"input changed since the build: {path} (sha256 differs from the manifest)")
    extra = sorted(str(p) for path, found in now.items() if path not in listed for p, _ in found)
    if extra:
        raise UserError(f"input folder has a file the build did not see: {extra[0]}")


def verify_dataset(folder: Path, *, workers: int = 1, progress: bool = False) -> VerifyResult:
    folder = Path(folder).resolve()
    manifest = read_manifest(folder)
    cfg = dict(manifest["config"])
    cfg["workers"] = workers
    cfg.setdefault("fidelity", "byte")  # a manifest without it was built at byte (BuildConfig.fidelity)
    try:
        config = BuildConfig.model_validate(cfg)
    except Exception as exc:  # noqa: BLE001 — a hand-edited manifest
        raise UserError(f"manifest config is not valid: {str(exc).splitlines()[0]}") from None
    for i in config.inputs:
        if not (folder / i.path).exists():
            raise UserError(f"input missing: {i.path} (resolved to {(folder / i.path).resolve()})")
    _check_inputs(folder, manifest, config)
    # a file the build did not write is a difference too (a glob loader would read it): only the manifest's outputs
    # and the manifest itself may be there; a hand-edited outputs list shows up when manifest.json is compared
    listed = {o.get("path") for o in manifest.get("outputs") or [] if isinstance(o, dict)} | {"manifest.json"}
    extra = unlisted_entries(folder, listed)  # type: ignore[arg-type]
    if extra:
        return VerifyResult(ok=False, file=extra[0], detail=f"not produced by the build ({len(extra)} such file(s))")
    sink = CompareSink(folder)
    run_build(config, folder, sink, out_dir=folder, progress=progress)
    first = sink.first_mismatch()
    if first is None:
        return _check_texts(folder, manifest) or VerifyResult(ok=True, files_checked=len(sink.files))
    rid = first.record_id if first.record_id != first.relpath else None
    return VerifyResult(
        ok=False,
        file=first.relpath,
        record_id=rid,
        position=first.position if rid else None,
        detail=first.detail,
        files_checked=len(sink.files),
    )


def _check_texts(folder: Path, manifest: dict[str, Any]) -> VerifyResult | None:
    """The first kept context holding a tool-result text the dataset's target Pi does not write, as a failed
    ``VerifyResult``; ``None`` when there is none."""
    card = load_harness(manifest.get("harness"))
    for part, field in (("sft", "messages"), ("decision_points", "state")):
        for path in sorted((folder / part).glob("*.jsonl")):
            for n, line in enumerate(path.read_bytes().splitlines()):
                record = orjson.loads(line)
                found = text_violations(card, record.get(field) or [])
                if found:
                    return VerifyResult(
                        ok=False,
                        file=str(path.relative_to(folder)),
                        record_id=record.get("id"),
                        position=n,
                        detail=f"a text Pi {card.version} does not write: {found[0]}",
                    )
    return None

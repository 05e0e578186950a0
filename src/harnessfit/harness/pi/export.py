"""Pi's own HTML export of a session (``pi --export SESSION OUT``), for the report's episode pages."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from harnessfit.harness.pi.cli import pi_binary, pi_env

__all__ = ["export_producer"]


def _placeholder(dest: Path, why: str) -> None:
    from markupsafe import escape

    dest.write_text(
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Pi export</title></head>'
        f"<body><p>Pi's HTML export of this session could not be made: {escape(why)}</p></body></html>\n",
        encoding="utf-8",
    )


def export_producer(session: Path, pi_version: str) -> Callable[[Path], None]:
    """A function that writes Pi's own HTML export of ``session`` (``pi --export SESSION OUT``) to its argument.

    An export newer than the session is kept as it is; a failed export leaves a page that says why.
    """

    def produce(dest: Path) -> None:
        if dest.is_file() and dest.stat().st_mtime >= session.stat().st_mtime and dest.stat().st_size > 0:
            return
        try:
            binary = pi_binary(pi_version)
        except Exception as exc:  # noqa: BLE001 - Pi not installed here: say so on the page
            _placeholder(dest, str(exc))
            return
        with tempfile.TemporaryDirectory(prefix="hf-pi-export-") as tmp:
            home = Path(tmp) / "home"
            home.mkdir()
            out = Path(tmp) / "session.html"
            try:
                proc = subprocess.run(
                    [str(binary), "--export", str(session), str(out)],
                    cwd=tmp,
                    env=pi_env(home),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=180,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                _placeholder(dest, f"{type(exc).__name__}: {exc}")
                return
            if proc.returncode != 0 or not out.is_file():
                why = proc.stderr.decode("utf-8", errors="replace").strip()[-500:] or f"exit code {proc.returncode}"
                _placeholder(dest, why)
                return
            shutil.copyfile(out, dest)

    return produce

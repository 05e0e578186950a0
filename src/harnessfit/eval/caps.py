"""Resource caps of an eval episode beyond turns, time and output: what the agent may write.

The sandbox sizes its tmpfs ``/tmp`` and HOME (``SandboxSpec.tmp_bytes`` / ``home_bytes``); every process of the
episode gets ``RLIMIT_FSIZE`` (no file larger than the cap); the workspace, on the host disk, is measured while the
agent runs (``workspace_bytes``) and the episode is stopped past its cap. Afterwards the hits are read back from
what the agent saw — Pi's tool results hold the shell's own words for a full tmpfs and an oversized file — and
named in the results (``EpisodeFacts.caps_hit``). A run folder keeps no file larger than ``KEEP_BYTES`` from the
workspace (the report copies at most that much of a file anyway); the names of the dropped ones are recorded.

Not capped here: processes (RLIMIT_NPROC does not bind root, and a pids cgroup needs a delegated cgroup), and CPU
time beyond the wall-clock cap.
"""

from __future__ import annotations

import os
import resource
import stat
from pathlib import Path
from typing import Any

__all__ = ["CAPS", "limit_file_size", "workspace_bytes", "caps_seen", "prune_workspace", "KEEP_BYTES"]

CAPS = {
    "disk_full": "No space left on device",  # a tmpfs (/tmp, HOME) at its --size
    "file_size": "File size limit exceeded",  # RLIMIT_FSIZE: the shell's text for SIGXFSZ
}
KEEP_BYTES = 8 << 20


def limit_file_size(max_bytes: int):
    """A ``preexec_fn`` giving the episode's processes ``RLIMIT_FSIZE`` (inherited by everything they start)."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return apply


def workspace_bytes(folder: Path, stop_at: int | None = None) -> int:
    """Bytes of the regular files under ``folder`` (links not followed); stops counting past ``stop_at``."""
    total = 0
    stack = [str(folder)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(entry.path)
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                if stop_at is not None and total > stop_at:
                    return total
    return total


def caps_seen(events: list[dict[str, Any]]) -> list[str]:
    """The caps Pi's tool results show the agent ran into (their shell texts), in ``CAPS`` order."""
    texts = []
    for e in events:
        if e.get("type") == "tool_execution_end":
            result = e.get("result") or {}
            texts += [p.get("text", "") for p in result.get("content") or [] if isinstance(p, dict)]
    return [name for name, text in CAPS.items() if any(text in t for t in texts)]


def prune_workspace(folder: Path, keep: int = KEEP_BYTES) -> list[str]:
    """Delete workspace files larger than ``keep`` (after the checker ran); returns their relative paths."""
    dropped = []
    for dirpath, _, filenames in os.walk(folder):
        for name in filenames:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > keep:
                path.unlink()
                dropped.append(path.relative_to(folder).as_posix())
    return sorted(dropped)

"""Claude Code's Grep, Glob and LS → Pi's optional grep, find and ls: exact where the record allows, else a blocker.

Pi's tools run only in a card with them on (the ``tools`` profile, ``pi@V+tools``); under any other card the calls
are ``unsupported_tool``. With them on, a call maps only when Pi's result text can be rebuilt from what Claude Code
recorded, which Pi's own tools (``core/tools/{grep,find,ls}.js``) decide:

- **Grep → grep** when it is a ``content`` search with no context lines, file type, multiline or paging option (its
  ``pattern``, ``path``, ``glob`` and ``-i`` are Pi's ``pattern``, ``path``, ``glob`` and ``ignoreCase``). The call
  is then an exact action; its *result* is rebuilt only for a search of *one file* with line numbers (``-n``):
  Pi prints ``basename:N: text`` per matching line (rg's order, the file's), at most 100 with its limit note. Any
  other result is the blocker (``unmappable_result``: the call is a label, the context after it is not): a search
  of a folder, because Pi's rg runs with ``--hidden`` and no exclusions, so it also searches ``.git/`` (hooks, logs,
  config are text), while Claude Code leaves out version-control folders (and older versions every hidden folder):
  the recorded matches may lack lines Pi would print, and the record cannot say; a search that found nothing, since
  the record never says that the searched path is a file; a record without line numbers, or one Claude Code cut or
  paged. ``files_with_matches`` and ``count`` modes list files or numbers, which Pi's grep never prints: such a
  call has no Pi equivalent (``unmappable_arguments``).
- **Glob → find** never maps: Pi's find runs ``fd --glob --hidden``, which also lists folders and hidden paths,
  skips what ``.gitignore`` lists and prints in its own walk's order; Claude Code's Glob lists files only, by its
  own rules for hidden and ignored files (``rg --files``, or a glob library in early versions; a shared real session's
  Glob listed a ``dist/`` file), sorted by modification time. The recorded list does not say which paths fd would
  list; the order alone would be a documented difference for a content tier, the rest is not.
- **Under a card without the tools** (the default) the three are ``unsupported_tool``; the row suggests the tools
  profile only when the call maps under it (the mapping run with that card), else it says why it would not help.
- **LS → ls** never maps: Claude Code's LS prints the tree below the folder and leaves out hidden entries; Pi's ls
  lists the folder's own entries, hidden ones included: the record does not say which hidden entries Pi would list.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from typing import Any

from harnessfit.core.rejection import Failure, Reason, excerpt
from harnessfit.core.trajectory import Step
from harnessfit.formats.base import MapContext, MapOutcome, PiCall, arg_failure, result_failure, unsupported
from harnessfit.harness.card import HarnessCard, card_path, load_card
from harnessfit.harness.pi_results import pi_grep_result

__all__ = ["map_grep", "map_glob", "map_ls"]

_UNMAPPED_GREP_OPTIONS = {
    "-A": "context lines after",
    "-B": "context lines before",
    "-C": "context lines",
    "context": "context lines",
    "type": "a file type",
    "multiline": "multiline matching",
    "head_limit": "a line limit",
    "offset": "paging",
}
_NUMBERED = re.compile(r"(\d+):(.*)\Z", re.DOTALL)
_PAGED = re.compile(r"\[Showing results with pagination|\[Omitted long line|\[\d+ (?:lines|characters) truncated\]")


@cache
def _tools_card(harness: str, version: str) -> HarnessCard | None:
    """The committed tools-profile card of a Pi version (``None`` when there is none)."""
    if not card_path(harness, version, "tools").is_file():
        return None
    return load_card(harness, version, "tools")


def _off(
    tool: str,
    pi_tool: str,
    args: dict[str, Any],
    result: Step | None,
    ctx: MapContext,
    mapper: Callable[[dict[str, Any], Step | None, MapContext], MapOutcome],
) -> Failure | None:
    """``None`` when the card has Pi's ``pi_tool``; else ``unsupported_tool``, suggesting the tools profile only when
    the call maps there (``mapper`` run under that card), and otherwise saying why it would not."""
    if pi_tool in ctx.card.default_tools:
        return None
    off = f"Pi's {pi_tool} is off in card {ctx.card.id}"
    tools = _tools_card(ctx.card.harness, ctx.card.version) if ctx.card.profile is None else None
    if tools is None:
        return unsupported(tool, off)
    on = mapper(args, result, replace(ctx, card=tools))
    if isinstance(on, PiCall):
        return unsupported(
            tool,
            f"{off}; with the tools profile (pi@{ctx.card.version}+tools) this call is Pi's {pi_tool}",
            f"convert with --harness pi@{ctx.card.version}+tools",
        )
    return unsupported(tool, f"{off}, and the tools profile would not make the call exact: {on.detail}")


def map_grep(args: dict[str, Any], result: Step | None, ctx: MapContext) -> MapOutcome:
    """Claude Code ``Grep`` → Pi ``grep`` (see the module docstring for when)."""
    off = _off("Grep", "grep", args, result, ctx, map_grep)
    if off is not None:
        return off
    pattern = args.get("pattern")
    if not isinstance(pattern, str):
        return arg_failure("Grep", "pattern missing or not a string", "complete the call")
    mode = args.get("output_mode") or "files_with_matches"
    if mode != "content":
        return arg_failure(
            "Grep",
            f"output_mode {mode!r} lists files or counts; Pi's grep prints matching lines",
            "re-run the search as output_mode content on one file, or under Pi",
        )
    used = [what for key, what in _UNMAPPED_GREP_OPTIONS.items() if args.get(key) not in (None, False, 0)]
    if used:
        return arg_failure(
            "Grep",
            f"{', '.join(used)}: Pi's grep has no such option (its context repeats lines "
            "per match where rg merges them)",
            "search without it, or re-run under Pi",
        )
    path = args.get("path") if isinstance(args.get("path"), str) and args.get("path") else None
    pi_args: dict[str, Any] = {"pattern": pattern}
    if path is not None:
        pi_args["path"] = path
    if isinstance(args.get("glob"), str):
        pi_args["glob"] = args["glob"]
    if args.get("-i") is True:
        pi_args["ignoreCase"] = True
    if result is None:
        return PiCall("grep", pi_args, None, ("claude.Grep->grep",))
    if result.is_error:
        return Failure(
            Reason.aborted_or_error_turn, f"Grep error: {excerpt(result.text or '', 100)!r}", "drop the failed call"
        )
    rendered = _grep_text(args, path, result, ctx)
    return PiCall(
        "grep",
        pi_args,
        rendered,
        ("claude.Grep->grep",) if isinstance(rendered, Failure) else ("claude.Grep->grep", "grep_result.one_file"),
    )


def _grep_text(args: dict[str, Any], path: str | None, result: Step, ctx: MapContext) -> str | Failure:
    """Pi's grep text for the recorded result of a one-file search, or why it cannot be rebuilt."""
    hint = "re-run the step under Pi (with the tools profile)"
    if path is None:
        return result_failure(
            "Grep",
            "a search of the working folder: Pi's rg also searches .git/ and hidden files "
            "Claude Code leaves out, so its matches are unknown",
            hint,
        )
    if args.get("-n") is not True:
        return result_failure("Grep", "no line numbers (-n): Pi's grep always prints them, the record lacks them", hint)
    text = result.text or ""
    meta = result.meta.get("toolUseResult") if isinstance(result.meta, dict) else None
    if _PAGED.search(text) or (isinstance(meta, dict) and meta.get("appliedLimit")):
        return result_failure("Grep", "Claude Code cut or paged the matches; the rest is unknown", hint)
    if text.strip() in ("No matches found", ""):
        return result_failure(
            "Grep",
            f"no matches in {path!r}, and the record cannot say whether that is one file "
            "(exact) or a folder (Pi's rg also searches .git/ and hidden files)",
            hint,
        )
    abs_path = path if path.startswith("/") else posixpath.normpath(posixpath.join(ctx.cwd, path))
    shown = posixpath.basename(abs_path.rstrip("/"))
    matches: list[tuple[str, int, str]] = []
    for line in text.split("\n"):
        rest = None
        for prefix in (path + ":", abs_path + ":"):
            if line.startswith(prefix):
                rest = line[len(prefix) :]
                break
        m = _NUMBERED.match(rest if rest is not None else line)
        if m is None:
            return result_failure(
                "Grep",
                f"a line that names another file or no line number ({excerpt(line, 80)!r}): a "
                "search of a folder, whose matches Pi would not print the same",
                hint,
            )
        matches.append((shown, int(m.group(1)), m.group(2).replace("\r", "")))
    return pi_grep_result(ctx.card, matches, tool="Grep")


def map_glob(args: dict[str, Any], result: Step | None, ctx: MapContext) -> MapOutcome:
    """Claude Code ``Glob``: never exact as Pi's ``find`` (see the module docstring)."""
    off = _off("Glob", "find", args, result, ctx, map_glob)
    if off is not None:
        return off
    return arg_failure(
        "Glob",
        "Pi's find (fd --hidden) also lists folders and hidden paths and skips .gitignored "
        "ones, while Glob lists files only by its own hidden/ignore rules (a real session's Glob "
        "listed a dist/ file), so the record does not say which paths fd would print; and it sorts "
        "them by modification time, fd by its own walk (no content tier takes a list's order yet)",
        "re-run the step under Pi, or list the files with bash",
    )


def map_ls(args: dict[str, Any], result: Step | None, ctx: MapContext) -> MapOutcome:
    """Claude Code ``LS``: never exact as Pi's ``ls`` (see the module docstring)."""
    off = _off("LS", "ls", args, result, ctx, map_ls)
    if off is not None:
        return off
    return arg_failure(
        "LS",
        "Claude Code's LS prints the tree and leaves out hidden entries; Pi's ls lists one "
        "folder with its hidden entries, which the record does not name",
        "re-run the step under Pi",
    )

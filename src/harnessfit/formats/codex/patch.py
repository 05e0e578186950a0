"""Codex's ``apply_patch`` (``*** Begin Patch`` … ``*** End Patch``) → one Pi ``write`` or ``edit``.

Codex takes a patch as a function call ``apply_patch{input}``, as the freeform custom tool ``apply_patch`` (the raw
patch text), or inside a command it intercepts before running it (``maybe_parse_apply_patch`` in the codex-rs
sources): the argv ``["apply_patch", PATCH]`` (or ``applypatch``), and a shell script that is only a heredoc
``apply_patch <<'EOF' … EOF``, optionally after ``cd DIR &&`` (``DIR`` one word or one single-quoted string).
One file per patch: ``*** Add File`` → ``write{path, content}``; ``*** Update File`` hunks →
``edit{path, edits:[{oldText, newText}]}`` (old text = context + removed lines). Delete, Move, several files, hunks without old text and overlapping hunks → ``unmappable_arguments``.
A patch the user refused is no label; one whose output is no success is a label whose result does not render.
A command that invokes ``apply_patch`` in another way is refused too (``unmappable_arguments``): Codex applied the
patch itself, while Pi's bash has no ``apply_patch`` program, so the recorded output is not what Pi would show.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from harnessfit.core.rejection import excerpt
from harnessfit.core.trajectory import Step
from harnessfit.formats.base import Failure, MapContext, MapOutcome, PiCall, arg_failure, result_failure
from harnessfit.formats.codex.results import parse_output, refused
from harnessfit.harness.pi_results import pi_edit_result, pi_write_result

__all__ = [
    "HEREDOC",
    "Patch",
    "PatchError",
    "PatchFile",
    "SHELL_WRAPPERS",
    "invokes_patch",
    "map_patch",
    "parse_patch",
    "patch_from_argv",
    "patch_from_script",
    "patch_text",
]

SHELL_WRAPPERS = {("bash", "-lc"), ("bash", "-c"), ("/bin/bash", "-lc"), ("/bin/bash", "-c")}
_CD = r"""cd\s+(?P<cd>'[^']*'|[^\s'"&;|<>$`\\]+)\s*&&\s*"""  # one word, or one single-quoted string
HEREDOC = re.compile(
    rf"\A(?:{_CD})?(?:apply_patch|applypatch)\s+<<-?\s*(['\"]?)(\w+)\2[ \t]*\n(?P<body>.*?)\n(\3)[ \t]*\n?\s*\Z",
    re.S,
)
_INVOKES = re.compile(r"(?:\A|&&|\|\||[;|(\n])\s*(?:apply_patch|applypatch)(?=\s+(?:<<|['\"]?\*\*\* Begin Patch))")
"""``apply_patch`` in a command position, given a heredoc or a patch: an invocation Codex intercepts."""


@dataclass(slots=True)
class PatchFile:
    """One file section of a Codex patch: ``op`` is add / update / delete; hunks as (old, new) text pairs."""

    op: str
    path: str
    move_to: str | None = None
    add_lines: list[str] = field(default_factory=list)
    hunks: list[tuple[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class Patch:
    files: list[PatchFile]


class PatchError(ValueError):
    """The text is not a well-formed Codex patch."""


def parse_patch(text: str) -> Patch:
    """Parse Codex's ``*** Begin Patch`` … ``*** End Patch`` format (strict: anything unknown is an error)."""
    lines = text.strip("\n").split("\n")
    if not lines or lines[0].strip() != "*** Begin Patch" or lines[-1].strip() != "*** End Patch":
        raise PatchError("missing *** Begin Patch / *** End Patch")
    files: list[PatchFile] = []
    cur: PatchFile | None = None
    old: list[str] = []
    new: list[str] = []
    in_hunk = False

    def close_hunk() -> None:
        nonlocal old, new, in_hunk
        if cur is not None and in_hunk:
            cur.hunks.append(("\n".join(old), "\n".join(new)))
        old, new, in_hunk = [], [], False

    for line in lines[1:-1]:
        for op, prefix in (("add", "*** Add File: "), ("update", "*** Update File: "), ("delete", "*** Delete File: ")):
            if line.startswith(prefix):
                close_hunk()
                cur = PatchFile(op=op, path=line[len(prefix) :].strip())
                files.append(cur)
                break
        else:
            if cur is None:
                raise PatchError(f"text before the first file header: {excerpt(line, 60)!r}")
            if line.startswith("*** Move to: "):
                cur.move_to = line[len("*** Move to: ") :].strip()
            elif line.strip() == "*** End of File":
                continue
            elif cur.op == "add":
                if not line.startswith("+"):
                    raise PatchError(f"Add File line without '+': {excerpt(line, 60)!r}")
                cur.add_lines.append(line[1:])
            elif cur.op == "update":
                if line.startswith("@@"):
                    close_hunk()
                    in_hunk = True
                elif line[:1] in (" ", "-", "+") or line == "":
                    if not in_hunk and (cur.hunks or old or new):
                        raise PatchError("hunk line outside a hunk")
                    in_hunk = True
                    body = line[1:]
                    if line[:1] in (" ", ""):
                        old.append(body)
                        new.append(body)
                    elif line[0] == "-":
                        old.append(body)
                    else:
                        new.append(body)
                else:
                    raise PatchError(f"unexpected line in Update File: {excerpt(line, 60)!r}")
            else:
                raise PatchError(f"unexpected line after Delete File: {excerpt(line, 60)!r}")
    close_hunk()
    if not files:
        raise PatchError("patch names no file")
    return Patch(files=files)


def patch_text(call_name: str, args: Any) -> str | None:
    """The patch body if this call is Codex's ``apply_patch`` tool (function or freeform custom tool), else
    ``None``."""
    if call_name != "apply_patch":
        return None
    if isinstance(args, str):
        stripped = args.strip()
        if stripped.startswith("*** Begin Patch"):
            return stripped
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError:
            return None
    if isinstance(args, dict) and isinstance(args.get("input"), str):
        return args["input"]
    return None


def patch_from_script(script: str) -> tuple[str, str | None] | None:
    """(patch body, ``cd`` directory or ``None``) if a shell script is Codex's heredoc patch invocation."""
    m = HEREDOC.match(script.strip() + "\n")
    if m is None:
        return None
    cd = m.group("cd")
    if cd is not None and cd[:1] == "'":
        cd = cd[1:-1]
    return m.group("body"), cd


def patch_from_argv(argv: list[str]) -> tuple[str, str | None] | None:
    """(patch body, ``cd`` directory or ``None``) if an argv is one Codex intercepts as a patch."""
    if len(argv) == 2 and argv[0] in ("apply_patch", "applypatch"):
        return argv[1], None
    if len(argv) == 3 and (argv[0], argv[1]) in SHELL_WRAPPERS:
        return patch_from_script(argv[2])
    return None


def invokes_patch(command: str) -> Failure | None:
    """A command that runs ``apply_patch`` in a form ``patch_from_script`` does not read: Codex applied it itself."""
    m = _INVOKES.search(command)
    if m is None:
        return None
    return arg_failure(
        "apply_patch",
        f"the command invokes {m.group(0).strip()!r} in a form Codex applies itself "
        f"({excerpt(command, 60)!r}); Pi's bash has no apply_patch",
        "give the patch as its own call",
    )


def map_patch(found: tuple[str, str | None], workdir: Any, ctx: MapContext, result: Step | None) -> MapOutcome:
    """The Pi write/edit for a patch (``found``: body and ``cd`` directory) run in ``workdir``."""
    no = refused(result)
    if no is not None:
        return no
    text, cd = found
    if cd is not None:
        workdir = posixpath.join(workdir, cd) if isinstance(workdir, str) and workdir else cd
    return _map_patch(text, workdir, ctx, None if result is None else result.text or "")


def _map_patch(text: str, workdir: Any, ctx: MapContext, output: str | None) -> MapOutcome:
    try:
        patch = parse_patch(text)
    except PatchError as exc:
        return arg_failure("apply_patch", f"malformed patch ({exc})", "fix the patch text")
    if len(patch.files) != 1:
        return arg_failure(
            "apply_patch",
            f"patch touches {len(patch.files)} files; one Pi edit/write covers one file",
            "split the patch into one call per file",
        )
    f = patch.files[0]
    if f.op == "delete":
        return arg_failure("apply_patch", "*** Delete File has no Pi tool", "delete with a bash rm call instead")
    if f.move_to:
        return arg_failure("apply_patch", "*** Move to (rename) has no Pi tool", "rename with bash mv, then edit")
    path = f.path
    notes: tuple[str, ...] = ()
    if isinstance(workdir, str) and workdir not in ("", ".") and not posixpath.isabs(path):
        joined = posixpath.normpath(posixpath.join(workdir, path))
        if posixpath.normpath(posixpath.join(ctx.cwd, workdir)) != posixpath.normpath(ctx.cwd):
            path, notes = joined, ("codex.apply_patch.workdir->path",)
    failed: Failure | None = None
    if output is not None:
        ok, detail = _patch_succeeded(output)
        if not ok:
            failed = result_failure(
                "apply_patch",
                detail,
                "Pi words a failed edit differently: keep the session up to the patch, or re-run it under Pi",
            )
    if f.op == "add":
        content = "\n".join(f.add_lines) + "\n" if f.add_lines else ""
        result = failed or (pi_write_result(ctx.card, path, content) if output is not None else None)
        return PiCall("write", {"path": path, "content": content}, result, ("codex.apply_patch.add->write", *notes))
    if not f.hunks:
        return arg_failure("apply_patch", f"Update File {f.path} has no hunks", "include at least one hunk")
    edits = []
    for old, new in f.hunks:
        if not old.strip():
            return arg_failure(
                "apply_patch",
                f"a hunk in {f.path} has no context or removed lines (insert position ambiguous)",
                "include context lines so the old text locates the change",
            )
        edits.append({"oldText": old, "newText": new})
    olds = [e["oldText"] for e in edits]
    for i, a in enumerate(olds):
        for j, b in enumerate(olds):
            if i != j and a in b:
                return arg_failure(
                    "apply_patch",
                    f"hunks {i + 1} and {j + 1} of {f.path} overlap (old text not unique)",
                    "merge the hunks or add distinguishing context",
                )
    result = failed or (pi_edit_result(ctx.card, path, len(edits)) if output is not None else None)
    return PiCall("edit", {"path": path, "edits": edits}, result, ("codex.apply_patch.update->edit", *notes))


def _patch_succeeded(output: str) -> tuple[bool, str]:
    parsed = parse_output(output, "apply_patch")
    if isinstance(parsed, Failure):
        return False, parsed.detail
    body, code = parsed
    if code not in (0, None):
        return False, f"patch failed with exit code {code}"
    if not body.lstrip().startswith("Success."):
        return False, f"no success line ({excerpt(body, 60)!r})"
    return True, ""

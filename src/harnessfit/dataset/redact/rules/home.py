"""User names in home-folder paths (``/home/<name>``, ``/Users/<name>``, ``C:\\Users\\<name>``), also where a tool
has encoded the path into a folder name (Pi: ``--home-<name>-<project>--``, Claude Code: ``-home-<name>-<project>``),
except generic ones (``runner``, ``ubuntu``, …) and names that are already placeholders."""

from __future__ import annotations

import re

from harnessfit.dataset.redact.rule import Joined, Rule

_HOME = re.compile(
    r"(?P<pre>/home/|/Users/|[A-Za-z]:(?:\\\\|\\|/)Users(?:\\\\|\\|/))(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,63})(?![A-Za-z0-9._-])"
)
_GENERIC_USERS = {
    "user",
    "username",
    "users",
    "me",
    "you",
    "shared",
    "public",
    "default",
    "runner",
    "ubuntu",
    "node",
    "root",
    "admin",
    "guest",
    "app",
    "vscode",
    "codespace",
    "coder",
    "jovyan",
    "linuxbrew",
    "all",
    "your",
    "yourname",
    "name",
    "example",
    "someone",
    "test",
    "dev",
    "work",
}
_PLACEHOLDER_USER = re.compile(r"^user\d+$")


def _accept(name: str, text: str, start: int) -> bool:
    return name.lower() not in _GENERIC_USERS and not _PLACEHOLDER_USER.match(name)


def _starts(joined: Joined) -> list[int]:
    """Where matches can start: at ``/home/`` or ``/Users/``, or at the drive letter 3 or 4 characters before
    ``Users`` (a drive prefix is a letter, a colon and one or two separator characters), ascending."""
    users = joined.offsets("Users")
    out = list(joined.offsets("/home/"))
    out += [k - 1 for k in users if k and joined.text.startswith("/Users/", k - 1)]
    out += [k - d for k in users for d in (3, 4) if k >= d]
    return sorted(set(out))


# a session folder named after the working folder, every separator a dash: Pi writes ``--<cwd, leading separator
# dropped, / \\ : as ->--`` (session-manager ``getDefaultSessionDir``), Claude Code ``<cwd, / and . as ->`` under
# ``~/.claude/projects/``. The name runs to the next dash: a name holding a dash (or a dot Claude Code dashed) keeps
# its tail, which the conversation's own cwd then maps whole (``substitute`` reads ``-home-<name>`` too).
_ENCODED_HOME = re.compile(
    r"""(?<![^/\\\s"'=:,(\[-])-{1,2}(?:home|Users)-(?P<name>[A-Za-z0-9][A-Za-z0-9._]{0,63})(?![A-Za-z0-9._])"""
)

HOME: list[Rule] = [
    Rule(
        "home_user",
        _HOME,
        literals=("/home/", "Users"),
        value="name",
        accept=_accept,
        starts=_starts,
        placeholder="user",
        examples=("cd /home/alice/app", "C:\\Users\\bob\\src", "/Users/carol/x"),
    ),
    Rule(
        "home_user",
        _ENCODED_HOME,
        literals=("-home-", "-Users-"),
        value="name",
        accept=_accept,
        placeholder="user",
        examples=(
            "sessions/--home-dave-proj--/s.jsonl",
            "~/.claude/projects/-Users-erin-app/u.jsonl",
            "C--Users-fay-x",
        ),
    ),
]

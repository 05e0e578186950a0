"""One error type for user mistakes: the CLI prints its message on one line and exits non-zero."""

from __future__ import annotations

__all__ = ["UserError"]


class UserError(Exception):
    """A problem the user can fix (bad path, missing tool, bad config). Never shown with a traceback."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code

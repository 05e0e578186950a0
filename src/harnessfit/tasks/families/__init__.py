"""The registered task families (importing this package registers them all)."""

from harnessfit.tasks.families import creates, edits, fixes, others  # noqa: F401

__all__: list[str] = []

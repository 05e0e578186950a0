"""Task families: generators of distinct, checkable tasks in the project's task format (``eval/task.py``), split
into training and held-out families, and the check that each generated task's golden plan passes its checker while
the untouched workspace does not."""

from harnessfit.tasks.family import FAMILIES, Family, TaskDraft, families_in, family, get_family, write_task

__all__ = ["FAMILIES", "Family", "TaskDraft", "families_in", "family", "get_family", "write_task"]

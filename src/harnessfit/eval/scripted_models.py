"""Scripted models: endpoints with known behaviour, for tests, smoke evals and synthetic trajectories.

Each is a responder for ``harnessfit.harness.scripted.ScriptedEndpoint``: a function of the request body alone (no
state between requests), so one endpoint serves many parallel episodes. The task is recognised from the first
user message (the task prompt) and the step from the number of assistant turns already in the request.

- ``golden``: plays the task's reference solution; before a step with ``expect`` it checks that the last tool
  result contains that text (a recover task sees the validation fail before fixing it).
- ``double-encode``: the same calls, arguments sent as a JSON string of the object (Pi rejects them).
- ``recovering``: the first call double-encoded, then — after Pi's validation error — the whole reference with
  object arguments (a contrast example for training data).
- ``mis-edit``: the reference, but its first ``edit`` is preceded by that edit gone wrong — every ``newText`` equal
  to its ``oldText`` (Pi: no changes made) or, for every other task, every ``oldText`` as the edit would leave it
  (Pi: text not found), as a small model's edits go wrong — then a fresh ``read`` of the file, the exact edit and
  the rest (a retry example for training data: ``harnessfit synth`` marks the failed edit context only). The re-read
  makes the step after Pi's error a different call from the one that failed, with the file's text just above the
  edit that copies from it: a tuned model that learnt "failed edit → the edit again" sent its failed call unchanged
  until the turn cap. A task that creates a file instead (a ``write`` and no ``edit``) gets the create-file mistake
  small models make: an ``edit`` of the file that does not exist yet, its content as new text (Pi: could not edit
  the file, ``ENOENT``), then the ``write`` and the rest. A task with neither gets ``golden``.
- ``second-try``: the reference, but the first step with a ``decoy`` (``eval.task.ReferenceStep``) is played as its
  decoy first: Pi applies it, the solver runs the validation command, sees it fail, reads the file and repairs the
  wrong lines with one exact edit (``repair_edit``: old text as the file now has it), then the rest (a second-try
  example for training data: ``harnessfit synth`` marks the decoy context only). It shows what a tuned model that
  sent its stale first edit again until the turn cap lacked: after its own change fails, the file is read again and
  the next edit starts from what is there now. A task without a decoy gets ``golden``.
- ``runaway``: streams text without end.
- ``never-stop``: calls a harmless tool forever, never answers.
- ``oracle``: a Harbor task's ``solution/solve.sh`` (``bash /solution/solve.sh`` through Pi's bash tool; the
  runner binds ``solution/`` at ``/solution`` for this model only), then an answer; on other tasks, ``golden``.
- ``nop``: answers at once without a tool call (Harbor's ``nop`` agent): the untouched workspace's score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harnessfit.core.jsonio import dumps_compact_str
from harnessfit.errors import UserError
from harnessfit.eval.task import ReferenceStep, Task, repair_edit
from harnessfit.harness.scripted import Reply

__all__ = [
    "SCRIPTED_MODELS",
    "responder_for",
    "golden",
    "double_encode",
    "recovering",
    "mis_edit",
    "first_edit",
    "planted_step",
    "second_try",
    "decoy_step",
    "runaway",
    "never_stop",
    "escape",
    "oracle",
    "nop",
    "Responder",
]

Responder = Callable[[dict, int], Reply]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _prompt(body: dict) -> str:
    for msg in body.get("messages") or []:
        if msg.get("role") == "user":
            return _text(msg.get("content"))
    return ""


def _assistant_turns(body: dict) -> int:
    return sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")


def _last_tool_result(body: dict) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "tool":
            return _text(msg.get("content"))
    return ""


def _task_for(tasks: Sequence[Task], body: dict) -> Task | None:
    prompt = _prompt(body).strip()
    for task in tasks:
        if task.prompt.strip() == prompt or task.prompt.strip() in prompt:
            return task
    return None


def _play(step: ReferenceStep, *, stringify: bool = False) -> Reply:
    if step.final is not None:
        return Reply(text=step.final)
    args = dumps_compact_str(step.args)
    if stringify:
        args = dumps_compact_str(args)
    return Reply(tool_calls=[(step.tool, args)])


def _checked(step: ReferenceStep, body: dict) -> Reply | None:
    if step.expect is not None and step.expect not in _last_tool_result(body):
        got = _last_tool_result(body)[-300:]
        return Reply(text=f"golden solver stopped: expected {step.expect!r} in the last tool result, got {got!r}")
    return None


def golden(tasks: Sequence[Task]) -> Responder:
    def respond(body: dict, index: int) -> Reply:
        task = _task_for(tasks, body)
        if task is None:
            return Reply(text="golden solver: this prompt is not a task of the suite")
        i = _assistant_turns(body)
        if i >= len(task.reference):
            return Reply(text="golden solver: reference solution exhausted")
        step = task.reference[i]
        return _checked(step, body) or _play(step)

    return respond


def double_encode(tasks: Sequence[Task]) -> Responder:
    def respond(body: dict, index: int) -> Reply:
        task = _task_for(tasks, body)
        i = _assistant_turns(body)
        if task is None or i >= len(task.reference):
            return Reply(text="done")
        return _play(task.reference[i], stringify=True)

    return respond


def recovering(tasks: Sequence[Task]) -> Responder:
    def respond(body: dict, index: int) -> Reply:
        task = _task_for(tasks, body)
        if task is None:
            return Reply(text="recovering solver: this prompt is not a task of the suite")
        i = _assistant_turns(body)
        if i == 0:
            return _play(task.reference[0], stringify=task.reference[0].final is None)
        if i == 1:  # the recovery: Pi's validation error is the last tool result; retry with an object
            return _play(task.reference[0])
        j = i - 1
        if j >= len(task.reference):
            return Reply(text="recovering solver: reference solution exhausted")
        step = task.reference[j]
        return _checked(step, body) or _play(step)

    return respond


def first_edit(task: Task) -> int | None:
    """Index of the task's first reference ``edit`` step, ``None`` when it has none."""
    return next((k for k, step in enumerate(task.reference) if step.tool == "edit"), None)


def planted_step(task: Task) -> int | None:
    """The reference step the mis-edit solver gets wrong first: the first ``edit``, or lacking one the first
    ``write``; ``None`` when the task has neither."""
    k = first_edit(task)
    return k if k is not None else next((k for k, step in enumerate(task.reference) if step.tool == "write"), None)


def _wrong_edit(step: ReferenceStep, task_id: str) -> Reply:
    """``step`` (an edit) gone wrong in one of two ways, chosen by the task id so a suite gets both."""
    same = sum(task_id.encode()) % 2 == 0

    def wrong(e: Any) -> Any:
        if not (isinstance(e, dict) and isinstance(e.get("oldText"), str) and isinstance(e.get("newText"), str)):
            return e
        return {**e, "newText": e["oldText"]} if same else {**e, "oldText": e["newText"]}

    args = dict(step.args or {})
    if isinstance(args.get("edits"), list):
        args["edits"] = [wrong(e) for e in args["edits"]]
    else:  # the legacy form: one oldText/newText pair beside the path
        args = wrong(args)
    return Reply(tool_calls=[("edit", dumps_compact_str(args))])


def _edit_to_create(step: ReferenceStep) -> Reply:
    """``step`` (a write) sent as an ``edit`` of the file that does not exist yet, its content as the new text: the
    tool a model that has learnt edits reaches for. Pi's edit checks the file first (``tools/edit.js``: ``access``)
    and answers ``Could not edit file: {path}. Error code: ENOENT.`` without writing anything."""
    args = step.args or {}
    edits = [{"oldText": "", "newText": args.get("content")}]
    return Reply(tool_calls=[("edit", dumps_compact_str({"path": args.get("path"), "edits": edits}))])


def _shifted(task: Task, body: dict, i: int, k: int, inserted: int, solver: str) -> Reply:
    """Turn ``i`` of a solver that plays ``inserted`` turns of its own from reference step ``k`` on: the reference
    step it stands for (before ``k`` the same index, after it ``inserted`` fewer), checked and played."""
    j = i if i < k else i - inserted
    if j >= len(task.reference):
        return Reply(text=f"{solver} solver: reference solution exhausted")
    return _checked(task.reference[j], body) or _play(task.reference[j])


def mis_edit(tasks: Sequence[Task]) -> Responder:
    reference = golden(tasks)

    def respond(body: dict, index: int) -> Reply:
        task = _task_for(tasks, body)
        k = planted_step(task) if task is not None else None
        if task is None or k is None:
            return reference(body, index)
        i, planted = _assistant_turns(body), task.reference[k]
        edit = planted.tool == "edit"
        reread = 1 if edit else 0  # an edit: Pi's error, the file read again, the exact edit; a create: the write
        if i == k:  # the step's own `expect` is about the result before it, so it is checked here
            return _checked(planted, body) or (_wrong_edit(planted, task.id) if edit else _edit_to_create(planted))
        if reread and i == k + 1:
            return Reply(tool_calls=[("read", dumps_compact_str({"path": (planted.args or {}).get("path")}))])
        if i == k + 1 + reread:
            return _play(planted)
        return _shifted(task, body, i, k, 1 + reread, "mis-edit")

    return respond


def decoy_step(task: Task) -> int | None:
    """Index of the task's first reference step with a ``decoy``, ``None`` when it has none."""
    return next((k for k, step in enumerate(task.reference) if step.decoy is not None), None)


# Pi's bash tool ends the result of a command that exited non-zero with this line (every targeted version)
_EXIT_STATUS = "Command exited with code"


def second_try(tasks: Sequence[Task]) -> Responder:
    reference = golden(tasks)

    def respond(body: dict, index: int) -> Reply:
        task = _task_for(tasks, body)
        k = decoy_step(task) if task is not None else None
        if task is None or k is None:
            return reference(body, index)
        i, step = _assistant_turns(body), task.reference[k]
        path = (step.args or {}).get("path")
        if i == k:
            return _checked(step, body) or Reply(tool_calls=[(str(step.tool), dumps_compact_str(step.decoy))])
        if i == k + 1:
            return Reply(tool_calls=[("bash", dumps_compact_str({"command": task.validation_command}))])
        if i == k + 2:
            if _EXIT_STATUS not in _last_tool_result(body):
                return Reply(text="second-try solver stopped: the validation passed after the decoy")
            return Reply(tool_calls=[("read", dumps_compact_str({"path": path}))])
        if i == k + 3:
            old, new = repair_edit(*step.decoy_texts(), _last_tool_result(body))
            return Reply(
                tool_calls=[("edit", dumps_compact_str({"path": path, "edits": [{"oldText": old, "newText": new}]}))]
            )
        return _shifted(task, body, i, k, 3, "second-try")

    return respond


def runaway(tasks: Sequence[Task]) -> Responder:
    def respond(body: dict, index: int) -> Reply:
        return Reply(text="Let me think about this ", endless=True)

    return respond


def never_stop(tasks: Sequence[Task]) -> Responder:
    def respond(body: dict, index: int) -> Reply:
        return Reply(tool_calls=[("bash", dumps_compact_str({"command": f"ls -la  # look {_assistant_turns(body)}"}))])

    return respond


def escape(*targets: str) -> Callable[[Sequence[Task]], Responder]:
    """A model that tries to write each of ``targets`` (paths outside the workspace) with bash, then answers."""

    def factory(tasks: Sequence[Task]) -> Responder:
        def respond(body: dict, index: int) -> Reply:
            if _assistant_turns(body) == 0:
                cmd = " ; ".join(f"mkdir -p $(dirname {t}) ; echo escaped > {t} && echo wrote {t}" for t in targets)
                return Reply(tool_calls=[("bash", dumps_compact_str({"command": cmd}))])
            return Reply(text="I tried to write outside the workspace.")

        return respond

    return factory


def oracle(tasks: Sequence[Task]) -> Responder:
    reference = golden(tasks)

    def respond(body: dict, index: int) -> Reply:
        task = _task_for(tasks, body)
        if task is None or getattr(task, "kind", None) != "harbor":
            return reference(body, index)
        if _assistant_turns(body) == 0:
            if not (task.solution_dir / "solve.sh").is_file():
                return Reply(text="oracle: this Harbor task has no solution/solve.sh")
            return Reply(tool_calls=[("bash", dumps_compact_str({"command": "bash /solution/solve.sh"}))])
        return Reply(text="Ran the reference solution (solution/solve.sh).")

    return respond


def nop(tasks: Sequence[Task]) -> Responder:
    def respond(body: dict, index: int) -> Reply:
        return Reply(text="nop: no change made.")

    return respond


SCRIPTED_MODELS: dict[str, Callable[[Sequence[Task]], Responder]] = {
    "golden": golden,
    "double-encode": double_encode,
    "recovering": recovering,
    "mis-edit": mis_edit,
    "second-try": second_try,
    "runaway": runaway,
    "never-stop": never_stop,
    "oracle": oracle,
    "nop": nop,
}


def responder_for(spec: str, tasks: Sequence[Task]) -> Responder:
    """Responder for ``scripted:<name>`` (or a bare name) over ``tasks``; a UserError lists the known names."""
    name = spec.removeprefix("scripted:")
    if name not in SCRIPTED_MODELS:
        raise UserError(
            f"unknown scripted model {spec!r}: choose one of " + ", ".join(f"scripted:{n}" for n in SCRIPTED_MODELS)
        )
    return SCRIPTED_MODELS[name](tasks)

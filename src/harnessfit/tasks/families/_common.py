"""What the families share: word banks, the golden plan's steps, and varied wording of prompts and answers.

Wording varies on purpose: a small model trained on one sentence learns the sentence. Every choice is drawn from
the generator's ``random.Random``, so a seed fixes the task.
"""

from __future__ import annotations

import random
from typing import Any

from harnessfit.tasks.family import pick

NOUNS = (
    "order",
    "invoice",
    "ticket",
    "parcel",
    "sensor",
    "player",
    "course",
    "recipe",
    "budget",
    "flight",
    "garden",
    "engine",
    "account",
    "camera",
    "basket",
    "device",
    "student",
    "vendor",
    "meeting",
    "shelf",
    "planet",
    "bridge",
    "lesson",
    "market",
    "router",
    "rocket",
    "harbor",
    "museum",
    "wallet",
    "tunnel",
)

CONSTANT_NAMES = (
    "MAX_ITEMS",
    "TIMEOUT_S",
    "RETRY_LIMIT",
    "PAGE_SIZE",
    "BATCH_SIZE",
    "CACHE_TTL",
    "MAX_USERS",
    "POOL_SIZE",
    "MIN_LENGTH",
    "MAX_DEPTH",
    "WORKERS",
    "QUEUE_LIMIT",
    "BACKOFF_S",
    "PORT_OFFSET",
)

OK = "OK"


def read(path: str) -> dict[str, Any]:
    return {"tool": "read", "args": {"path": path}}


def edit(path: str, *pairs: tuple[str, str], expect: str | None = None, decoy: str | None = None) -> dict[str, Any]:
    """An edit step; ``decoy`` (one pair only) is a wrong ``newText`` for it: the second-try solver's first attempt
    (``eval.task.ReferenceStep``)."""
    step: dict[str, Any] = {
        "tool": "edit",
        "args": {"path": path, "edits": [{"oldText": o, "newText": n} for o, n in pairs]},
    }
    if expect:
        step["expect"] = expect
    if decoy is not None:
        ((old, _new),) = pairs
        step["decoy"] = {"path": path, "edits": [{"oldText": old, "newText": decoy}]}
    return step


def write(path: str, content: str, expect: str | None = None, decoy: str | None = None) -> dict[str, Any]:
    """A write step; ``decoy`` is wrong content for the same file (the second-try solver's first attempt)."""
    step: dict[str, Any] = {"tool": "write", "args": {"path": path, "content": content}}
    if expect:
        step["expect"] = expect
    if decoy is not None:
        step["decoy"] = {"path": path, "content": decoy}
    return step


def bash(command: str, expect: str | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": "bash", "args": {"command": command}}
    if expect:
        step["expect"] = expect
    return step


def final(text: str, expect: str) -> dict[str, Any]:
    return {"final": text, "expect": expect}


def validate_sentence(rng: random.Random, command: str) -> str:
    """A sentence asking for the validation command, worded one of several ways."""
    return pick(
        rng,
        (
            f"Validate with `{command}`.",
            f"Then run `{command}` to validate the change.",
            f"Run `{command}` afterwards to check your work.",
            f"Check it with `{command}`.",
            f"When you are done, run `{command}`; it must pass.",
            f"Use `{command}` to confirm it works.",
        ),
    )


def recover_prompt(rng: random.Random, command: str, what: str) -> str:
    """A recover task's prompt: run the command first, fix ``what``, run it again."""
    return pick(
        rng,
        (
            f"Run `{command}`. It fails; fix {what} and re-run it until it passes.",
            f"`{command}` is failing. Run it, read the error, fix {what}, and run it again.",
            f"Make `{command}` pass: run it first, then fix {what} and re-run it.",
            f"Run `{command}` and make it pass by fixing {what}. Re-run it to confirm.",
        ),
    )


def done(rng: random.Random, what: str, command: str) -> str:
    """A final answer: what changed, and that the validation passed. ``what`` is a sentence ("Set X to 5 in m.py",
    "f now defaults to …"), so no wording may put a subject in front of it."""
    lower = what[0].lower() + what[1:]
    return pick(
        rng,
        (
            f"{what}; `{command}` passes.",
            f"Done: {lower}. `{command}` now passes.",
            f"{what}, and `{command}` reports OK.",
            f"Finished: {lower}. The check `{command}` passes.",
        ),
    )


def returns_check(call: str, want: str) -> str:
    """Validation-script lines: ``call`` (source text) must return the value the literal ``want`` spells; else the
    script exits with ``FAIL: {call} returned {got!r}, expected {want}`` — the message a recover task's golden plan
    reads before its fix."""
    return (
        f'got = {call}\nif got != {want}:\n    raise SystemExit(f"FAIL: {call} returned {{got!r}}, expected {want}")\n'
    )


def check_script(body: str, ok: str) -> str:
    """A validation script: ``body`` raises ``SystemExit("FAIL: …")`` on a problem; then it prints ``OK: ok``."""
    return f"{body.rstrip()}\nprint({f'{OK}: {ok}'!r})\n"


def hf_check(body: str) -> str:
    """The hidden checker (run as ``python3 -I hf_check.py``): imports the workspace's code after the stdlib."""
    return (
        'import sys\n\nsys.path.append(".")  # the code under test, after the standard library\n\n'
        f'{body.rstrip()}\nprint("checker passed")\n'
    )


def checker_files(body: str) -> dict[str, str]:
    """The hidden checker of a task whose validation script is ``check_script(body, …)``: the same checks, each
    failure an ``AssertionError`` (a non-zero exit whatever the script's own messages)."""
    return {"hf_check.py": hf_check(body.replace("raise SystemExit", "raise AssertionError"))}


def ident(rng: random.Random, *parts: tuple[str, ...]) -> str:
    """A snake_case name from one choice per part."""
    return "_".join(pick(rng, p) for p in parts)

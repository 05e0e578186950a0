"""Recover families: the validation command fails first; the golden plan reads the failure, repairs exactly that,
and runs the command again — the short recoveries small models lack."""

from __future__ import annotations

import ast
import json
import random

from harnessfit.eval.task import TaskKind
from harnessfit.tasks.families._common import (
    NOUNS,
    bash,
    check_script,
    checker_files,
    done,
    edit,
    final,
    hf_check,
    read,
    recover_prompt,
    returns_check,
    write,
)
from harnessfit.tasks.family import TaskDraft, family, pick

# (buggy body, fixed body, what a call with n returns when buggy/fixed, what the bug did), n-parameterised; the bound
# is off in both directions, so the repair is read from the failure (short or long), not always "add + 1"
_OFF_BY_ONE = (
    (
        "return list(range(1, n))",
        "return list(range(1, n + 1))",
        lambda n: list(range(1, n)),
        lambda n: list(range(1, n + 1)),
        "stopped one short; it now includes n",
    ),
    (
        "return [i + 10 for i in range(1, n)]",
        "return [i + 10 for i in range(1, n + 1)]",
        lambda n: [i + 10 for i in range(1, n)],
        lambda n: [i + 10 for i in range(1, n + 1)],
        "stopped one short; it now includes n",
    ),
    (
        "return sum(range(n))",
        "return sum(range(n + 1))",
        lambda n: sum(range(n)),
        lambda n: sum(range(n + 1)),
        "stopped one short; it now includes n",
    ),
    (
        "return [2 * i for i in range(1, n)]",
        "return [2 * i for i in range(1, n + 1)]",
        lambda n: [2 * i for i in range(1, n)],
        lambda n: [2 * i for i in range(1, n + 1)],
        "stopped one short; it now includes n",
    ),
    (
        "return list(range(n + 1))",
        "return list(range(n))",
        lambda n: list(range(n + 1)),
        lambda n: list(range(n)),
        "went one too far; it now stops before n",
    ),
    (
        "return [3 * i for i in range(n + 1)]",
        "return [3 * i for i in range(n)]",
        lambda n: [3 * i for i in range(n + 1)],
        lambda n: [3 * i for i in range(n)],
        "went one too far; it now stops before n",
    ),
)


@family(
    "fix_off_by_one",
    split="train",
    kind=TaskKind.recover,
    summary="a loop bound is off by one (short or long); the failing check shows the result, the fix moves the bound",
)
def fix_off_by_one(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    bug, fix, got_fn, want_fn, what = pick(rng, _OFF_BY_ONE)
    fn = f"{noun}_{pick(rng, ('upto', 'series', 'values', 'steps'))}"
    module, check = f"{noun}_math.py", f"check_{noun}_math.py"
    cmd = f"python3 {check}"
    n = rng.randint(3, 7)
    got, want = got_fn(n), want_fn(n)
    fail = f"FAIL: {fn}({n}) returned {got!r}, expected {want!r}"
    body = f"from {module[:-3]} import {fn}\n\n" + returns_check(f"{fn}({n})", repr(want))
    return TaskDraft(
        kind=TaskKind.recover,
        prompt=recover_prompt(rng, cmd, f"the bug in {module}"),
        validation_command=cmd,
        expected_change=[{"path": module, "contains": fix}],
        workspace={module: f"def {fn}(n):\n    {bug}\n", check: check_script(body, f"{fn} has the right bound")},
        checker={
            "hf_check.py": hf_check(
                f"from {module[:-3]} import {fn}\n\nassert {fn}({n}) == {want!r}\nassert {fn}(9) == {want_fn(9)!r}\n"
            )
        },
        reference=[
            bash(cmd),
            read(module) | {"expect": fail},
            edit(module, (bug, fix), decoy=_wrong_way(bug, fix)),
            bash(cmd),
            final(done(rng, f"{fn} {what}", cmd), f"OK: {fn} has the right bound"),
        ],
    )


def _wrong_way(bug: str, fix: str) -> str:
    """The bound moved the wrong way (a second-try decoy): one shorter still, or one further still."""
    return fix.replace("n + 1", "n - 1") if "n + 1" in fix else bug.replace("n + 1", "n + 2")


# (function name stem, buggy expression, fixed expression); the expressions are evaluated by the task's own code
_WRONG_OPERATOR = (
    ("total", "a - b", "a + b"),
    ("difference", "a + b", "a - b"),
    ("product", "a + b", "a * b"),
    ("largest", "min(a, b)", "max(a, b)"),
    ("smallest", "max(a, b)", "min(a, b)"),
    ("average", "(a + b) * 2", "(a + b) / 2"),
)
_VALUE = {
    "a - b": lambda a, b: a - b,
    "a + b": lambda a, b: a + b,
    "a * b": lambda a, b: a * b,
    "min(a, b)": min,
    "max(a, b)": max,
    "(a + b) * 2": lambda a, b: (a + b) * 2,
    "(a + b) / 2": lambda a, b: (a + b) / 2,
}


def _other_operator(bug: str, fix: str, a: int, b: int) -> str:
    """A second-try decoy: the first other expression of the table that is also wrong for (a, b)."""
    want = _VALUE[fix](a, b)
    return next(e for e in _VALUE if e not in (bug, fix) and _VALUE[e](a, b) != want)


@family(
    "fix_failing_test",
    split="train",
    kind=TaskKind.recover,
    summary="a test file fails because a function uses the wrong operator; fix the function, not the test",
)
def fix_failing_test(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    stem, bug, fix = pick(rng, _WRONG_OPERATOR)
    right = _VALUE[fix]
    fn = f"{stem}_{noun}"
    module, test = f"{noun}_calc.py", f"test_{noun}_calc.py"
    cmd = f"python3 {test}"
    a, b = rng.randint(2, 9), rng.randint(10, 20)
    wrong = _VALUE[bug](a, b)
    want = right(a, b)
    fail = f"FAIL: {fn}({a}, {b}) returned {wrong!r}, expected {want!r}"
    body = f"from {module[:-3]} import {fn}\n\n" + returns_check(f"{fn}({a}, {b})", repr(want))
    return TaskDraft(
        kind=TaskKind.recover,
        prompt=recover_prompt(rng, cmd, f"{module} (the test is right; do not change {test})"),
        validation_command=cmd,
        expected_change=[{"path": module, "contains": fix}, {"path": module, "not_contains": bug}],
        workspace={module: f"def {fn}(a, b):\n    return {bug}\n", test: check_script(body, f"{fn} is right")},
        checker={
            "hf_check.py": hf_check(
                f"from {module[:-3]} import {fn}\n\nassert {fn}({a}, {b}) == {want!r}\n"
                f"assert {fn}(4, 6) == {right(4, 6)!r}\n"
            )
        },
        reference=[
            bash(cmd),
            read(module) | {"expect": fail},
            edit(module, (f"return {bug}", f"return {fix}"), decoy=f"return {_other_operator(bug, fix, a, b)}"),
            bash(cmd),
            final(done(rng, f"{fn} used {bug}; it now returns {fix}", cmd), f"OK: {fn} is right"),
        ],
    )


# (function stem, what the code returns, what the check expects, a near miss for the second try): literals only, so
# the repair is copying the value the failure message states into the return statement; the prompt never names it
_WRONG_VALUES = (
    ("unit", '"km"', '"miles"', '"mile"'),
    ("currency", '"EUR"', '"USD"', '"usd"'),
    ("status", '"draft"', '"ready"', '"Ready"'),
    ("separator", '","', '";"', '":"'),
    ("language", '"de"', '"fr"', '"FR"'),
    ("limit", "10", "12", "11"),
    ("version", "3", "4", "5"),
    ("ratio", "0.5", "0.25", "0.2"),
    ("enabled", "False", "True", '"True"'),
    ("tags", '["new"]', '["new", "sale"]', '["sale"]'),
)


@family(
    "fix_return_value",
    split="train",
    kind=TaskKind.recover,
    summary="a function returns the wrong literal; the failing check states the value it expects",
)
def fix_return_value(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    stem, bug, fix, near = pick(rng, _WRONG_VALUES)
    fn = f"{noun}_{stem}"
    module = f"{noun}_{pick(rng, ('defaults', 'info', 'meta', 'values'))}.py"
    check = f"check_{noun}_{stem}.py"
    cmd = f"python3 {check}"
    got, want = ast.literal_eval(bug), ast.literal_eval(fix)
    fail = f"FAIL: {fn}() returned {got!r}, expected {want!r}"
    body = f"from {module[:-3]} import {fn}\n\n" + returns_check(f"{fn}()", repr(want))
    return TaskDraft(
        kind=TaskKind.recover,
        prompt=recover_prompt(rng, cmd, f"the value {fn} returns in {module}"),
        validation_command=cmd,
        expected_change=[{"path": module, "contains": f"return {fix}"}],
        workspace={module: f"def {fn}():\n    return {bug}\n", check: check_script(body, f"{fn} is right")},
        checker=checker_files(body),
        reference=[
            bash(cmd),
            read(module) | {"expect": fail},
            edit(module, (f"return {bug}", f"return {fix}"), decoy=f"return {near}"),
            bash(cmd),
            final(done(rng, f"{fn} returned {got!r}; it now returns {want!r}", cmd), f"OK: {fn} is right"),
        ],
    )


# (helper, its body, what it returns); the caller misspells the helper, so the check dies with a NameError whose
# last traceback line names the misspelled name
_HELPERS = (
    ("_clean", "return text.strip()", str.strip),
    ("_tidy", 'return " ".join(text.split())', lambda t: " ".join(t.split())),
    ("_prepare", "return text.strip().lower()", lambda t: t.strip().lower()),
    ("_shorten", "return text[:5]", lambda t: t[:5]),
    ("_trim", 'return text.strip(" .")', lambda t: t.strip(" .")),
)


def _misspell(rng: random.Random, name: str) -> str:
    """``name`` with two adjacent letters after its underscore swapped (never the same name)."""
    while True:
        i = rng.randrange(1, len(name) - 1)
        typo = name[:i] + name[i + 1] + name[i] + name[i + 2 :]
        if typo != name:
            return typo


def _other_typo(name: str, typo: str) -> str:
    """A second-try decoy: ``name`` misspelt another way than ``typo`` (the first other swap of adjacent letters)."""
    swaps = (name[:i] + name[i + 1] + name[i] + name[i + 2 :] for i in range(1, len(name) - 1))
    return next(t for t in swaps if t not in (name, typo))


@family(
    "fix_name_error",
    split="train",
    kind=TaskKind.recover,
    summary="a function calls a misspelled helper; the check's traceback ends in the NameError that names it",
)
def fix_name_error(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    helper, impl, apply = pick(rng, _HELPERS)
    typo = _misspell(rng, helper)
    fn = f"{pick(rng, ('format', 'render', 'show', 'label'))}_{noun}"
    module, check = f"{noun}_text.py", f"check_{noun}_text.py"
    cmd = f"python3 {check}"
    arg = pick(rng, ("  Hello World  ", " a  b ", "Ticket.  ", "Done. "))
    want = f"<{apply(arg)}>"
    src = f'def {helper}(text):\n    {impl}\n\n\ndef {fn}(text):\n    return "<" + {typo}(text) + ">"\n'
    fail = f"NameError: name '{typo}' is not defined"
    body = f"from {module[:-3]} import {fn}\n\n" + returns_check(f"{fn}({arg!r})", repr(want))
    return TaskDraft(
        kind=TaskKind.recover,
        prompt=recover_prompt(rng, cmd, f"the error in {module}"),
        validation_command=cmd,
        expected_change=[{"path": module, "contains": f'"<" + {helper}(text)'}],
        workspace={module: src, check: check_script(body, f"{fn} works")},
        checker=checker_files(body),
        reference=[
            bash(cmd),
            read(module) | {"expect": fail},
            edit(module, (f"{typo}(text)", f"{helper}(text)"), decoy=f"{_other_typo(helper, typo)}(text)"),
            bash(cmd),
            final(
                done(rng, f"{fn} called {typo}, which does not exist; it now calls {helper}", cmd), f"OK: {fn} works"
            ),
        ],
    )


@family(
    "recover_missing_file",
    split="train",
    kind=TaskKind.recover,
    summary="the check fails because a data file is missing; its message says what to create",
)
def recover_missing_file(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    key = pick(rng, ("mode", "level", "name", "theme", "unit", "lang"))
    value = pick(rng, ("fast", "safe", "dark", "metric", "en", "debug", "blue", "small"))
    path = pick(rng, (f"{noun}.json", f"data/{noun}.json", f"conf/{noun}.json"))
    check = f"check_{noun}_data.py"
    cmd = f"python3 {check}"
    content = json.dumps({key: value}) + "\n"
    fail = f"FAIL: {path} is missing; create it holding {json.dumps({key: value})}"
    loader = f"{noun}_data.py"
    body = (
        f"import pathlib\n\nif not pathlib.Path({path!r}).is_file():\n    raise SystemExit({fail!r})\n"
        f"from {loader[:-3]} import load\n\nif load() != {value!r}:\n"
        f'    raise SystemExit("FAIL: load() returned " + repr(load()) + ", expected {value!r}")\n'
    )
    return TaskDraft(
        kind=TaskKind.recover,
        prompt=recover_prompt(rng, cmd, "what its message names"),
        validation_command=cmd,
        expected_change=[{"path": path, "exists": True}],
        workspace={
            loader: (
                f'import json\n\n\ndef load():\n    with open({path!r}, encoding="utf-8") as fh:\n'
                f"        return json.load(fh)[{key!r}]\n"
            ),
            check: check_script(body, f"{noun} data loads"),
        },
        checker={
            "hf_check.py": hf_check(
                f"import json\n\nassert json.load(open({path!r})) == {{{key!r}: {value!r}}}\n"
                f"from {loader[:-3]} import load\n\nassert load() == {value!r}\n"
            )
        },
        reference=[
            bash(cmd),
            write(path, content, expect=fail),
            bash(cmd),
            final(done(rng, f"{path} was missing; I created it with {key} {value!r}", cmd), f"OK: {noun} data loads"),
        ],
    )


# (buggy, fixed, the fixed rule as a function of (left, right))
_COMPARISONS = (
    ("score > limit", "score >= limit", lambda x, y: x >= y),
    ("age > minimum", "age >= minimum", lambda x, y: x >= y),
    ("count < cap", "count <= cap", lambda x, y: x <= y),
    ("size < maximum", "size <= maximum", lambda x, y: x <= y),
)


@family(
    "fix_comparison",
    split="heldout",
    kind=TaskKind.recover,
    summary="a boundary value is refused because a comparison is strict; the fix makes it inclusive",
)
def fix_comparison(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    bug, fix, rule = pick(rng, _COMPARISONS)
    left, op, right = bug.split()
    fn = f"{noun}_allowed"
    module, check = f"{noun}_rules.py", f"check_{noun}_rules.py"
    cmd = f"python3 {check}"
    bound = rng.randint(5, 50)
    fail = f"FAIL: {fn}({bound}, {bound}) returned False, expected True"
    body = f"from {module[:-3]} import {fn}\n\nif {fn}({bound}, {bound}) is not True:\n    raise SystemExit({fail!r})\n"
    return TaskDraft(
        kind=TaskKind.recover,
        prompt=recover_prompt(rng, cmd, f"the rule in {module} so the boundary value counts"),
        validation_command=cmd,
        expected_change=[{"path": module, "contains": fix}],
        workspace={
            module: f"def {fn}({left}, {right}):\n    return {bug}\n",
            check: check_script(body, f"{fn} is inclusive"),
        },
        checker={
            "hf_check.py": hf_check(
                f"from {module[:-3]} import {fn}\n\nassert {fn}({bound}, {bound}) is True\n"
                f"assert ({fn}(1, 9), {fn}(9, 1)) == {(rule(1, 9), rule(9, 1))!r}\n"
            )
        },
        reference=[
            bash(cmd),
            read(module) | {"expect": fail},
            edit(module, (bug, fix)),
            bash(cmd),
            final(done(rng, f"{fn} now uses {op}=", cmd), f"OK: {fn} is inclusive"),
        ],
    )

"""Edit families: one exact change in one or more Python or JSON files, then the validation command."""

from __future__ import annotations

import json
import random

from harnessfit.eval.task import TaskKind
from harnessfit.tasks.families._common import (
    CONSTANT_NAMES,
    NOUNS,
    bash,
    check_script,
    checker_files,
    done,
    edit,
    final,
    hf_check,
    read,
    returns_check,
    validate_sentence,
)
from harnessfit.tasks.family import TaskDraft, family, pick

# (between the name and the value, after the value): spacing and annotations real settings modules use
_CONSTANT_LAYOUTS = (
    (" = ", ""),
    ("=", ""),
    (": int = ", ""),
    (" = ", "  # tuned by hand"),
    (None, ""),  # names padded so the "=" signs line up
)


@family(
    "edit_constant",
    split="train",
    kind=TaskKind.edit,
    summary="change one numeric constant of a settings module, leaving the others as they are",
)
def edit_constant(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    names = rng.sample(CONSTANT_NAMES, 3)
    values = {n: rng.randint(2, 60) for n in names}
    target = names[rng.randrange(3)]
    old = values[target]
    new = old + rng.randint(1, 40) * pick(rng, (1, -1)) if old > 41 else old + rng.randint(1, 40)
    module, check = f"{noun}_settings.py", f"check_{noun}_settings.py"
    cmd = f"python3 {check}"
    # the file's layout varies, so the old text has to be copied from what `read` shows, not recited from habit
    eq, tail = pick(rng, _CONSTANT_LAYOUTS)
    width = max(map(len, names))

    def line(name: str, value: int) -> str:
        return f"{name}{eq or ' ' * (width - len(name)) + ' = '}{value}{tail}\n"

    src = f'"""Settings of the {noun} service."""\n\n' + "".join(line(n, v) for n, v in values.items())
    want = {**values, target: new}
    body = (
        f"import {module[:-3]} as s\n\nwant = {want!r}\n"
        "for name, value in want.items():\n"
        "    got = getattr(s, name, None)\n"
        "    if got != value:\n"
        '        raise SystemExit(f"FAIL: {name} is {got!r}, expected {value!r}")\n'
    )
    verb = "Raise" if new > old else "Lower"
    prompt = pick(
        rng,
        (
            f"In {module}, {verb.lower()} {target} from {old} to {new} and leave everything else as it is.",
            f"{verb} {target} in {module} to {new} (it is {old} now). Do not touch the other settings.",
            f"Set {target} = {new} in {module}; the other constants must stay unchanged.",
        ),
    )
    return TaskDraft(
        kind=TaskKind.edit,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": module, "contains": line(target, new)}],
        workspace={module: src, check: check_script(body, f"{noun} settings are right")},
        checker=checker_files(body),
        reference=[
            read(module),
            edit(module, (line(target, old), line(target, new))),
            bash(cmd),
            final(done(rng, f"Set {target} to {new} in {module}", cmd), f"OK: {noun} settings are right"),
        ],
    )


_LABELS = (
    ("Item", "Product"),
    ("Total", "Sum"),
    ("Hello", "Welcome"),
    ("Error", "Problem"),
    ("Name", "Title"),
    ("Owner", "Holder"),
    ("Date", "Day"),
    ("Score", "Points"),
    ("Status", "State"),
    ("Price", "Cost"),
    ("Guest", "Visitor"),
    ("Note", "Remark"),
)


@family(
    "edit_string",
    split="train",
    kind=TaskKind.edit,
    summary="change the words a function puts in front of its argument",
)
def edit_string(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    old, new = pick(rng, _LABELS)
    sep = pick(rng, (": ", " - ", " = "))
    fn = f"{noun}_label"
    # the module's name is not the function's: the path is taken from the prompt, not guessed from the function
    module = f"{noun}_{pick(rng, ('labels', 'text', 'display', 'views', 'format'))}.py"
    check = f"check_{noun}_labels.py"
    cmd = f"python3 {check}"
    src = f'def {fn}(value):\n    return "{old}{sep}" + str(value)\n'
    arg, shown = pick(rng, (("42", "42"), ("'abc'", "abc"), ("7", "7"), ("'x1'", "x1")))
    want = f"{new}{sep}{shown}"
    body = f"from {module[:-3]} import {fn}\n\n" + returns_check(f"{fn}({arg})", repr(want))
    prompt = pick(
        rng,
        (
            f'In {module}, change {fn} so that it starts with "{new}{sep}" instead of "{old}{sep}".',
            f'{fn} in {module} should label values with "{new}" rather than "{old}". Change it.',
            f'Replace the label "{old}" with "{new}" in {fn} ({module}).',
        ),
    )
    return TaskDraft(
        kind=TaskKind.edit,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": module, "contains": f'"{new}{sep}"'}],
        workspace={module: src, check: check_script(body, f"{fn} works")},
        checker={
            "hf_check.py": hf_check(
                f"from {module[:-3]} import {fn}\n\nassert {fn}({arg}) == {want!r}\n"
                f"assert {fn}(5) == {new + sep + '5'!r}\n"
            )
        },
        reference=[
            read(module),
            edit(module, (f'"{old}{sep}"', f'"{new}{sep}"')),
            bash(cmd),
            final(done(rng, f'{fn} now starts with "{new}{sep}"', cmd), f"OK: {fn} works"),
        ],
    )


_CONFIG_KEYS = (
    ("debug", True, False),
    ("verbose", False, True),
    ("cache", True, False),
    ("retries", 3, 5),
    ("timeout", 30, 60),
    ("level", "info", "warning"),
    ("mode", "fast", "safe"),
    ("region", "eu", "us"),
    ("workers", 2, 4),
    ("color", "blue", "green"),
)


@family("config_json", split="train", kind=TaskKind.edit, summary="change one value in a JSON configuration file")
def config_json(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    chosen = rng.sample(_CONFIG_KEYS, 3)
    key, old, new = chosen[0]
    conf = {k: o for k, o, _ in chosen}
    path = pick(rng, (f"{noun}.json", f"config/{noun}.json", f"settings/{noun}.json"))
    check = f"check_{noun}_config.py"
    cmd = f"python3 {check}"
    text = json.dumps(conf, indent=2) + "\n"
    want = {**conf, key: new}
    body = (
        f'import json\n\nwith open({path!r}, encoding="utf-8") as fh:\n    conf = json.load(fh)\n'
        f'if conf != {want!r}:\n    raise SystemExit(f"FAIL: {path} holds {{conf!r}}, expected {want!r}")\n'
    )
    js_old, js_new = json.dumps(old), json.dumps(new)
    prompt = pick(
        rng,
        (
            f'In {path}, set "{key}" to {js_new} (it is {js_old}). Keep the other keys.',
            f'Change the "{key}" setting in {path} from {js_old} to {js_new}.',
            f'{path} should have "{key}": {js_new}. Update it and leave the rest alone.',
        ),
    )
    return TaskDraft(
        kind=TaskKind.edit,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": path, "contains": f'"{key}": {js_new}'}],
        workspace={path: text, check: check_script(body, f"{path} is right")},
        checker=checker_files(body),
        reference=[
            read(path),
            edit(path, (f'"{key}": {js_old}', f'"{key}": {js_new}')),
            bash(cmd),
            final(done(rng, f'Set "{key}" to {js_new} in {path}', cmd), f"OK: {path} is right"),
        ],
    )


# (list name, a pool of its items): one item is swapped for one the list does not hold
_LISTS = (
    ("ALLOWED_HOSTS", ("localhost", "example.org", "api.local", "static.local", "intranet")),
    ("LANGUAGES", ("en", "de", "fr", "es", "it", "nl")),
    ("EXTENSIONS", (".py", ".md", ".txt", ".toml", ".cfg", ".ini")),
    ("COLORS", ("red", "green", "blue", "teal", "amber", "gray")),
    ("ROLES", ("admin", "editor", "viewer", "guest", "owner")),
)


@family(
    "edit_list_item",
    split="train",
    kind=TaskKind.edit,
    summary="replace one string in a list literal, on one line or one item per line, keeping the others",
)
def edit_list_item(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    name, pool = pick(rng, _LISTS)
    items = rng.sample(pool, 4)
    shown, new = items[:3], items[3]
    old = shown[rng.randrange(3)]
    module = f"{noun}_{pick(rng, ('config', 'options', 'lists', 'constants'))}.py"
    check = f"check_{noun}_{name.lower()}.py"
    cmd = f"python3 {check}"
    want = [new if i == old else i for i in shown]
    if pick(rng, ("one line", "one per line")) == "one line":
        src = f"{name} = [{', '.join(json.dumps(i) for i in shown)}]\n"
    else:
        src = f"{name} = [\n" + "".join(f"    {json.dumps(i)},\n" for i in shown) + "]\n"
    body = (
        f"from {module[:-3]} import {name}\n\nif {name} != {want!r}:\n"
        f'    raise SystemExit(f"FAIL: {name} is {{{name}!r}}, expected {want!r}")\n'
    )
    prompt = pick(
        rng,
        (
            f'In {module}, replace "{old}" with "{new}" in {name}.',
            f'{name} in {module} should hold "{new}" where it now holds "{old}". Keep the other entries.',
            f'Swap the entry "{old}" of {name} ({module}) for "{new}".',
        ),
    )
    return TaskDraft(
        kind=TaskKind.edit,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[
            {"path": module, "contains": json.dumps(new)},
            {"path": module, "not_contains": json.dumps(old)},
        ],
        workspace={module: src, check: check_script(body, f"{name} is right")},
        checker=checker_files(body),
        reference=[
            read(module),
            edit(module, (json.dumps(old), json.dumps(new))),
            bash(cmd),
            final(done(rng, f'Replaced "{old}" with "{new}" in {name}', cmd), f"OK: {name} is right"),
        ],
    )


_VERBS = ("load", "parse", "fetch", "build", "count", "format", "check", "score")
_NEW_VERBS = {
    "load": "read",
    "parse": "decode",
    "fetch": "get",
    "build": "make",
    "count": "tally",
    "format": "render",
    "check": "verify",
    "score": "rate",
}


@family(
    "rename_across_files",
    split="train",
    kind=TaskKind.edit,
    summary="rename a function where it is defined and where another module imports and calls it",
)
def rename_across_files(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    verb = pick(rng, _VERBS)
    old, new = f"{verb}_{noun}", f"{_NEW_VERBS[verb]}_{noun}"
    lib, app = pick(
        rng, ((f"{noun}_lib.py", f"{noun}_app.py"), (f"{noun}s.py", "main.py"), (f"{noun}_utils.py", f"run_{noun}.py"))
    )
    check = f"check_{noun}_rename.py"
    cmd = f"python3 {check}"
    k = rng.randint(2, 9)
    lib_src = f"def {old}(value):\n    return value * {k}\n"
    app_src = (
        f"from {lib[:-3]} import {old}\n\n\ndef main():\n    return {old}(3)\n\n\n"
        f'if __name__ == "__main__":\n    print(main())\n'
    )
    body = (
        f"import {lib[:-3]} as lib\nimport {app[:-3]} as app\n\n"
        f"if not hasattr(lib, {new!r}) or hasattr(lib, {old!r}):\n"
        f'    raise SystemExit("FAIL: {lib} must define {new} and no longer {old}")\n'
        f'if app.main() != {3 * k}:\n    raise SystemExit("FAIL: {app} main() is wrong")\n'
        f'if {old!r} in open({app!r}, encoding="utf-8").read():\n'
        f'    raise SystemExit("FAIL: {app} still names {old}")\n'
    )
    prompt = pick(
        rng,
        (
            f"Rename the function {old} to {new}, in {lib} and everywhere {app} uses it.",
            f"{old} in {lib} should be called {new}. Rename it and update {app}, which imports it.",
            f"Rename {old} → {new} across {lib} and {app}.",
        ),
    )
    return TaskDraft(
        kind=TaskKind.edit,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": lib, "contains": f"def {new}("}, {"path": app, "not_contains": old}],
        workspace={lib: lib_src, app: app_src, check: check_script(body, f"{old} is now {new}")},
        checker=checker_files(body),
        reference=[
            read(lib),
            edit(lib, (f"def {old}(", f"def {new}(")),
            read(app),
            edit(app, (f"import {old}\n", f"import {new}\n"), (f"return {old}(3)", f"return {new}(3)")),
            bash(cmd),
            final(done(rng, f"Renamed {old} to {new} in {lib} and {app}", cmd), f"OK: {old} is now {new}"),
        ],
        max_turns=10,
    )


@family(
    "add_parameter",
    split="train",
    kind=TaskKind.edit,
    summary="add a parameter with a default to a function and pass it from its caller",
)
def add_parameter(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    fn = f"{noun}_line"
    lib, app = f"{noun}_text.py", f"{noun}_print.py"
    check = f"check_{noun}_line.py"
    cmd = f"python3 {check}"
    suffix = pick(rng, ("!", ".", "?", " ok", " *", ";"))
    lib_src = f'def {fn}(name):\n    return "{noun}: " + name\n'
    app_src = f'from {lib[:-3]} import {fn}\n\n\ndef show():\n    return {fn}("demo")\n'
    body = (
        f"from {lib[:-3]} import {fn}\nfrom {app[:-3]} import show\n\n"
        f'if {fn}("a") != {noun + ": a"!r}:\n    raise SystemExit("FAIL: {fn}(name) must work as before")\n'
        f'if {fn}("a", {suffix!r}) != {noun + ": a" + suffix!r}:\n'
        f'    raise SystemExit("FAIL: {fn}(name, suffix) must append suffix")\n'
        f"if show() != {noun + ': demo' + suffix!r}:\n"
        f'    raise SystemExit("FAIL: show() in {app} must pass suffix={suffix!r}")\n'
    )
    prompt = pick(
        rng,
        (
            f'Give {fn} in {lib} a second parameter suffix (default "") that is appended to what it returns, and '
            f"make show() in {app} pass suffix={suffix!r}.",
            f'Add a parameter suffix="" to {fn} ({lib}); the result must end with it. Then update show() in {app} '
            f"to call it with suffix={suffix!r}.",
        ),
    )
    return TaskDraft(
        kind=TaskKind.edit,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": lib, "contains": "suffix"}, {"path": app, "contains": "suffix="}],
        workspace={lib: lib_src, app: app_src, check: check_script(body, f"{fn} takes a suffix")},
        checker=checker_files(body),
        reference=[
            read(lib),
            # two small edits, each the least text that is unique, rather than the whole function again
            edit(lib, (f"def {fn}(name):", f'def {fn}(name, suffix=""):'), ("+ name\n", "+ name + suffix\n")),
            read(app),
            edit(app, (f'{fn}("demo")', f'{fn}("demo", suffix={suffix!r})')),
            bash(cmd),
            final(
                done(rng, f"Added suffix to {fn} and passed {suffix!r} from show()", cmd), f"OK: {fn} takes a suffix"
            ),
        ],
        max_turns=10,
    )


@family(
    "multi_file_refactor",
    split="train",
    kind=TaskKind.edit,
    summary="replace a number two modules hard-code with a constant imported from a shared module",
)
def multi_file_refactor(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    const = pick(rng, ("RATE", "FACTOR", "LIMIT", "SCALE", "MARGIN"))
    value = pick(rng, ("0.2", "0.15", "1.5", "0.05", "2.5", "0.35"))
    a, b = f"{noun}_price.py", f"{noun}_tax.py"
    check = f"check_{noun}_shared.py"
    cmd = f"python3 {check}"
    srcs = {
        a: f'"""Prices of {noun}s."""\n\n\ndef price(x):\n    return x * {value}\n',
        b: f'"""Tax on {noun}s."""\n\n\ndef tax(x):\n    return round(x * {value}, 2)\n',
    }
    body = (
        "import constants\nimport " + a[:-3] + " as a\nimport " + b[:-3] + " as b\n\n"
        f'for name in ({a!r}, {b!r}):\n    text = open(name, encoding="utf-8").read()\n'
        f'    if {value!r} in text or "from constants import {const}" not in text:\n'
        f'        raise SystemExit(f"FAIL: {{name}} must import {const} from constants instead of {value}")\n'
        f"if a.price(10) != 10 * {value} or b.tax(10) != round(10 * {value}, 2):\n"
        '    raise SystemExit("FAIL: the results changed")\n'
    )
    prompt = pick(
        rng,
        (
            f"{a} and {b} both hard-code {value}. constants.py defines {const} = {value}: import {const} from "
            f"constants in both files and use it instead of the number.",
            f"Refactor {a} and {b} to use {const} from constants.py (add `from constants import {const}` to each) "
            f"instead of the literal {value}.",
        ),
    )
    steps = []
    for name, src in srcs.items():
        doc = src.split("\n", 1)[0] + "\n"
        steps += [
            read(name),
            edit(name, (doc, f"{doc}\nfrom constants import {const}\n"), (f"x * {value}", f"x * {const}")),
        ]
    return TaskDraft(
        kind=TaskKind.edit,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[
            {"path": a, "contains": f"from constants import {const}"},
            {"path": b, "contains": f"from constants import {const}"},
        ],
        workspace={**srcs, "constants.py": f"{const} = {value}\n", check: check_script(body, "one shared constant")},
        checker=checker_files(body),
        reference=[
            *steps,
            bash(cmd),
            final(done(rng, f"Both files now import {const} from constants", cmd), "OK: one shared constant"),
        ],
        max_turns=10,
    )

"""A second language (JavaScript on Node, which the sandbox has because Pi runs on it) and the held-out edit
family."""

from __future__ import annotations

import random

from harnessfit.eval.task import TaskKind
from harnessfit.tasks.families._common import (
    NOUNS,
    bash,
    check_script,
    done,
    edit,
    final,
    hf_check,
    read,
    validate_sentence,
)
from harnessfit.tasks.family import TaskDraft, family, pick

_JS_CHANGES = (
    ("rate", "0.1", "0.2"),
    ("limit", "10", "25"),
    ("label", "'draft'", "'final'"),
    ("unit", "'kg'", "'lb'"),
    ("step", "1", "5"),
    ("prefix", "'#'", "'>'"),
)


def _js_check(module: str, name: str, want: str, ok: str) -> str:
    return (
        f"const m = require('./{module}');\n"
        f"if (m.{name} !== {want}) {{\n"
        f"  console.log('FAIL: {name} is ' + JSON.stringify(m.{name}) + ', expected ' + JSON.stringify({want}));\n"
        "  process.exit(1);\n}\n"
        f"console.log('OK: {ok}');\n"
    )


@family(
    "js_edit",
    split="train",
    kind=TaskKind.edit,
    summary="change one exported setting of a JavaScript module (Node), validated with node",
)
def js_edit(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    chosen = rng.sample(_JS_CHANGES, 2)
    name, old, new = chosen[0]
    other, other_value, _ = chosen[1]
    module = pick(rng, (f"{noun}.js", f"{noun}-config.js", f"lib/{noun}.js"))
    check = f"check-{noun}.js"
    cmd = f"node {check}"
    src = (
        f"// settings of the {noun} module\nconst {name} = {old};\nconst {other} = {other_value};\n\n"
        f"module.exports = {{ {name}, {other} }};\n"
    )
    ok = f"{name} of {noun} is right"
    prompt = pick(
        rng,
        (
            f"In {module}, change {name} from {old} to {new}.",
            f"Set the {name} exported by {module} to {new} (it is {old}); keep {other} as it is.",
            f"{module} should export {name} = {new}. Make that change.",
        ),
    )
    return TaskDraft(
        kind=TaskKind.edit,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": module, "contains": f"const {name} = {new};"}],
        workspace={module: src, check: _js_check(module, name, new, ok)},
        checker={
            "hf_check.js": _js_check(module, name, new, "checker")
            + (f"if (require('./{module}').{other} !== {other_value}) process.exit(1);\n")
        },
        checker_command="node hf_check.js",
        reference=[
            read(module),
            edit(module, (f"const {name} = {old};", f"const {name} = {new};")),
            bash(cmd),
            final(done(rng, f"Set {name} to {new} in {module}", cmd), f"OK: {ok}"),
        ],
    )


@family(
    "edit_default_argument",
    split="heldout",
    kind=TaskKind.edit,
    summary="change the default value of one function parameter",
)
def edit_default_argument(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    param = pick(rng, ("timeout", "retries", "limit", "page_size", "depth"))
    old = rng.randint(2, 20)
    new = old + rng.randint(1, 30)
    fn = pick(rng, (f"fetch_{noun}", f"list_{noun}s", f"load_{noun}"))
    module, check = f"{noun}_client.py", f"check_{noun}_client.py"
    cmd = f"python3 {check}"
    src = f"def {fn}(name, {param}={old}):\n    return (name, {param})\n"
    body = (
        f'from {module[:-3]} import {fn}\n\ngot = {fn}("x")[1]\nif got != {new}:\n'
        f'    raise SystemExit(f"FAIL: the default {param} of {fn} is {{got}}, expected {new}")\n'
    )
    prompt = pick(
        rng,
        (
            f"Change the default {param} of {fn} in {module} from {old} to {new}.",
            f"{fn} ({module}) should default to {param}={new} instead of {old}.",
        ),
    )
    return TaskDraft(
        kind=TaskKind.edit,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": module, "contains": f"{param}={new})"}],
        workspace={module: src, check: check_script(body, f"{fn} defaults to {new}")},
        checker={
            "hf_check.py": hf_check(
                f"from {module[:-3]} import {fn}\n\nassert {fn}('x') == ('x', {new})\nassert {fn}('y', 1) == ('y', 1)\n"
            )
        },
        reference=[
            read(module),
            edit(module, (f"{param}={old})", f"{param}={new})")),
            bash(cmd),
            final(done(rng, f"{fn} now defaults to {param}={new}", cmd), f"OK: {fn} defaults to {new}"),
        ],
    )

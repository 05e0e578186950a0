"""Create families: write a new file (a module, a script, an answer) that the validation command accepts, then
finish promptly — the create-file runs that end right after clean validation."""

from __future__ import annotations

import random

from harnessfit.eval.task import TaskKind
from harnessfit.tasks.families._common import (
    NOUNS,
    bash,
    check_script,
    checker_files,
    done,
    final,
    read,
    returns_check,
    validate_sentence,
    write,
)
from harnessfit.tasks.family import TaskDraft, family, pick

# (name, parameter, what it does, body, cases as (argument literal, expected result literal))
_MODULE_FUNCS = (
    ("reverse_text", "text", "returns text reversed", "return text[::-1]", (("'abc'", "'cba'"), ("''", "''"))),
    (
        "count_vowels",
        "text",
        "returns how many of its letters are vowels (a, e, i, o, u; any case)",
        'return sum(1 for ch in text.lower() if ch in "aeiou")',
        (("'Banana'", "3"), ("'xyz'", "0")),
    ),
    (
        "sum_evens",
        "numbers",
        "returns the sum of the even numbers in the list numbers",
        "return sum(n for n in numbers if n % 2 == 0)",
        (("[1, 2, 3, 4]", "6"), ("[]", "0")),
    ),
    (
        "is_palindrome",
        "text",
        "returns True when text reads the same backwards, else False",
        "return text == text[::-1]",
        (("'level'", "True"), ("'abc'", "False")),
    ),
    (
        "double_all",
        "numbers",
        "returns a new list with every number doubled",
        "return [2 * n for n in numbers]",
        (("[1, 5]", "[2, 10]"), ("[]", "[]")),
    ),
    (
        "first_word",
        "text",
        'returns the first whitespace-separated word of text ("" when there is none)',
        'words = text.split()\n    return words[0] if words else ""',
        (("'hello big world'", "'hello'"), ("''", "''")),
    ),
    (
        "initials",
        "name",
        "returns the upper-case first letters of the words of name",
        'return "".join(w[0].upper() for w in name.split())',
        (("'ada lovelace'", "'AL'"), ("'grace'", "'G'")),
    ),
    (
        "count_lines",
        "text",
        "returns the number of lines in text",
        "return len(text.splitlines())",
        (("'a\\nb\\nc'", "3"), ("''", "0")),
    ),
    (
        "max_of",
        "numbers",
        "returns the largest number in the non-empty list numbers",
        "return max(numbers)",
        (("[3, 9, 2]", "9"), ("[-1]", "-1")),
    ),
    ("repeat_text", "text", "returns text written twice", "return text * 2", (("'ab'", "'abab'"), ("''", "''"))),
    (
        "total_length",
        "words",
        "returns the total number of characters of the strings in the list words",
        "return sum(len(w) for w in words)",
        (("['ab', 'cde']", "5"), ("[]", "0")),
    ),
    (
        "count_positive",
        "numbers",
        "returns how many numbers in the list are greater than 0",
        "return sum(1 for n in numbers if n > 0)",
        (("[3, -1, 0, 2]", "2"), ("[]", "0")),
    ),
    (
        "min_of",
        "numbers",
        "returns the smallest number in the non-empty list numbers",
        "return min(numbers)",
        (("[3, 9, 2]", "2"), ("[7]", "7")),
    ),
    (
        "word_lengths",
        "text",
        "returns the list of the lengths of the whitespace-separated words of text",
        "return [len(w) for w in text.split()]",
        (("'ab cde'", "[2, 3]"), ("''", "[]")),
    ),
    (
        "title_words",
        "text",
        "returns text with the first letter of every word in upper case and the rest in lower case",
        "return text.title()",
        (("'hello big world'", "'Hello Big World'"), ("''", "''")),
    ),
    (
        "join_words",
        "words",
        "returns the strings of the list words joined by single spaces",
        'return " ".join(words)',
        (("['a', 'b']", "'a b'"), ("[]", "''")),
    ),
    (
        "is_even",
        "n",
        "returns True when the integer n is even, else False",
        "return n % 2 == 0",
        (("4", "True"), ("7", "False")),
    ),
)


def _neighbour(funcs: tuple, name: str) -> str:
    """A second-try decoy: the body of the next function of the table that takes the same parameter, else of the
    next one (a small model's first attempt is often the nearest function it knows)."""
    k = next(i for i, f in enumerate(funcs) if f[0] == name)
    later = [f for f in funcs[k + 1 :] + funcs[:k] if f[3] != funcs[k][3]]
    return next((f for f in later if f[1] == funcs[k][1]), later[0])[3]


def _module_draft(rng: random.Random, funcs: tuple, split_word: str) -> TaskDraft:
    noun = pick(rng, NOUNS)
    name, param, does, impl, cases = pick(rng, funcs)
    module = pick(rng, (f"{noun}_tools.py", f"{name}.py", f"{noun}_{split_word}.py"))
    check = f"check_{module[:-3]}.py"
    cmd = f"python3 {check}"
    lines = "".join(returns_check(f"{name}({arg})", want) for arg, want in cases)
    body = f"from {module[:-3]} import {name}\n\n{lines}"
    prompt = pick(
        rng,
        (
            f"Create {module} with a function {name}({param}) that {does}.",
            f"Write a new module {module} defining {name}({param}), which {does}.",
            f"Add the file {module}: it must define {name}({param}) that {does}.",
        ),
    )
    return TaskDraft(
        kind=TaskKind.create,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": module, "contains": f"def {name}"}],
        workspace={check: check_script(body, f"{name} works")},
        checker=checker_files(body),
        reference=[
            write(
                module,
                f"def {name}({param}):\n    {impl}\n",
                decoy=f"def {name}({param}):\n    {_neighbour(funcs, name)}\n",
            ),
            bash(cmd),
            final(done(rng, f"Created {module} with {name}", cmd), f"OK: {name} works"),
        ],
        max_turns=6,
    )


@family(
    "create_module",
    split="train",
    kind=TaskKind.create,
    summary="create a module with one small function that the given check script tests",
)
def create_module(rng: random.Random) -> TaskDraft:
    return _module_draft(rng, _MODULE_FUNCS, "lib")


# (what the script prints, body after `import sys`, argv for the check, expected stdout)
_SCRIPTS = (
    ("the sum of its integer arguments", "print(sum(int(a) for a in sys.argv[1:]))", ["2", "3", "4"], "9"),
    (
        "its arguments in upper case, separated by single spaces",
        'print(" ".join(a.upper() for a in sys.argv[1:]))',
        ["ab", "cd"],
        "AB CD",
    ),
    ("how many arguments it was given", "print(len(sys.argv) - 1)", ["x", "y", "z"], "3"),
    (
        "its arguments in reverse order, separated by single spaces",
        'print(" ".join(reversed(sys.argv[1:])))',
        ["one", "two", "three"],
        "three two one",
    ),
    ("the longest of its arguments", "print(max(sys.argv[1:], key=len))", ["a", "abcd", "ab"], "abcd"),
    ("its first argument repeated twice, joined by a dash", 'print(sys.argv[1] + "-" + sys.argv[1])', ["go"], "go-go"),
)


def _next_script(impl: str) -> str:
    """A second-try decoy: the body of the next script of the table."""
    k = next(i for i, entry in enumerate(_SCRIPTS) if entry[1] == impl)
    return _SCRIPTS[(k + 1) % len(_SCRIPTS)][1]


@family(
    "cli_script",
    split="train",
    kind=TaskKind.create,
    summary="create a small command-line script that prints something computed from its arguments",
)
def cli_script(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    does, impl, argv, out = pick(rng, _SCRIPTS)
    script = f"{noun}_cli.py"
    check = f"check_{noun}_cli.py"
    cmd = f"python3 {check}"
    body = (
        "import subprocess\nimport sys\n\n"
        f"res = subprocess.run([sys.executable, {script!r}, *{argv!r}], capture_output=True, text=True)\n"
        f"if res.stdout.strip() != {out!r}:\n"
        f'    raise SystemExit(f"FAIL: python3 {script} {" ".join(argv)} printed {{res.stdout.strip()!r}}'
        f'{{res.stderr[-200:]}}, expected {out!r}")\n'
    )
    prompt = pick(
        rng,
        (
            f"Create a script {script} that prints {does}.",
            f"Write {script}: run as `python3 {script} ARGS…`, it prints {does}.",
        ),
    )
    return TaskDraft(
        kind=TaskKind.create,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": script, "exists": True}],
        workspace={check: check_script(body, f"{script} prints the right thing")},
        checker=checker_files(body),
        reference=[
            write(script, f"import sys\n\n{impl}\n", decoy=f"import sys\n\n{_next_script(impl)}\n"),
            bash(cmd),
            final(done(rng, f"Created {script}", cmd), f"OK: {script} prints the right thing"),
        ],
        max_turns=6,
    )


_FACTS = (
    ("port", "port", (8080, 9000, 5432, 6379, 3000)),
    ("owner", "owner", ("ada", "linus", "grace", "ken")),
    ("version", "version", ("1.4.2", "2.0.0", "0.9.1", "3.1.0")),
    ("region", "region", ("eu-west", "us-east")),
    ("timeout", "timeout", (15, 30, 45, 90)),
)


@family(
    "answer_from_files",
    split="train",
    kind=TaskKind.create,
    summary="read a value from a settings file and write it into answer.txt",
)
def answer_from_files(rng: random.Random) -> TaskDraft:
    noun = pick(rng, NOUNS)
    chosen = rng.sample(_FACTS, 3)
    values = {key: pick(rng, opts) for key, _, opts in chosen}
    asked = chosen[0][0]
    conf = pick(rng, (f"{noun}.cfg", f"{noun}.ini", "service.cfg"))
    check = "check_answer.py"
    cmd = f"python3 {check}"
    text = f"[{noun}]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
    want = str(values[asked])
    body = (
        'import pathlib\n\np = pathlib.Path("answer.txt")\n'
        'if not p.is_file():\n    raise SystemExit("FAIL: answer.txt is missing")\n'
        f"if p.read_text().strip() != {want!r}:\n"
        f'    raise SystemExit(f"FAIL: answer.txt holds {{p.read_text().strip()!r}}, not the {asked} of '
        f'{conf}")\n'
    )
    prompt = pick(
        rng,
        (
            f"What {asked} does {conf} set? Write just the value into answer.txt.",
            f"Look up the {asked} in {conf} and put only that value in a new file answer.txt.",
        ),
    )
    return TaskDraft(
        kind=TaskKind.create,
        prompt=f"{prompt}\n{validate_sentence(rng, cmd)}",
        validation_command=cmd,
        expected_change=[{"path": "answer.txt", "exists": True}],
        workspace={conf: text, check: check_script(body, "answer.txt is right")},
        checker=checker_files(body),
        reference=[
            read(conf),
            write("answer.txt", want + "\n"),
            bash(cmd),
            final(
                pick(
                    rng,
                    (
                        f"The {asked} in {conf} is {want}; I wrote it to answer.txt.",
                        f"{conf} sets {asked} = {want}. answer.txt holds it and `{cmd}` passes.",
                    ),
                ),
                "OK: answer.txt is right",
            ),
        ],
        max_turns=6,
    )


_TEXT_FUNCS = (
    (
        "shout",
        "text",
        'returns text in upper case followed by "!"',
        'return text.upper() + "!"',
        (("'hi'", "'HI!'"), ("''", "'!'")),
    ),
    (
        "count_words",
        "text",
        "returns the number of whitespace-separated words in text",
        "return len(text.split())",
        (("'a b  c'", "3"), ("''", "0")),
    ),
    (
        "strip_digits",
        "text",
        "returns text without its digits",
        'return "".join(ch for ch in text if not ch.isdigit())',
        (("'a1b22c'", "'abc'"), ("'7'", "''")),
    ),
    (
        "last_item",
        "items",
        "returns the last element of items, or None when items is empty",
        "return items[-1] if items else None",
        (("[1, 2]", "2"), ("[]", "None")),
    ),
    (
        "squares",
        "n",
        "returns the list of the squares of 1..n",
        "return [i * i for i in range(1, n + 1)]",
        (("3", "[1, 4, 9]"), ("0", "[]")),
    ),
)


@family(
    "create_text_function",
    split="heldout",
    kind=TaskKind.create,
    summary="create a module with one small text or list function (other functions than create_module's)",
)
def create_text_function(rng: random.Random) -> TaskDraft:
    return _module_draft(rng, _TEXT_FUNCS, "text")

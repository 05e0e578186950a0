"""Redaction rules and their two engines, through public functions only.

The differential test builds its texts from the rules themselves (each rule's examples and literals, cut, case-
changed, folded, JSON-escaped, mixed with noise), so a rule added to the list — here or in ``rules/`` — is exercised
without editing the test."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessfit.dataset.redact import RULES, PluginRule, Redactor, Rule, Scanner, reference_findings
from harnessfit.dataset.redact.patterns import FOLD_CHARS

_NOISE = [
    "a",
    "Z",
    "9",
    "@",
    ".",
    ":",
    " ",
    "\n",
    "\t",
    "/",
    "\\",
    "=",
    "==",
    "-",
    "_",
    "+",
    "%",
    '"',
    "'",
    '="',
    "é",
    "東",
    "\ud800",
    "✓",
    *FOLD_CHARS,
    "/home/",
    "/Users/",
    "C:\\",
    "D:\\\\",
    "Users",
    "alice",
    "x" * 30,
    "git@github.com",
    "bob@corp-mail.io",
    "name@2x.png",
    "Q2xhdWRlQ29kZVRlc3RUb2tlbjEyMzQ1Njc4OTA",
    "Ab1+",
    "Zq8-",
    "sha256:",
    "export ",
    "1234567890",
]
_FOLD = str.maketrans({"k": "\u212a", "s": "\u017f", "i": "\u0131", "I": "\u0130"})


def _fragments(rules) -> list[str]:
    """Pieces of text derived from the rules: every example whole, cut in two, in other cases, with a folding
    letter, JSON-escaped; every literal as written, upper-cased, title-cased and folded."""
    out = set(_NOISE)
    for rule in rules:
        for ex in rule.examples:
            half = len(ex) // 2
            out |= {ex, ex[:half], ex[half:], ex.swapcase(), ex.upper(), ex.translate(_FOLD), json.dumps(ex)[1:-1]}
        for key in rule.keys:
            out |= {key.text, key.text.upper(), key.text.title(), key.text.translate(_FOLD)}
    return sorted(out)


def _check_engines_agree(rules, examples: int) -> set[str]:
    """fast == reference: on every fragment alone and all of them as one conversation (so every rule's examples
    run), then on random conversations of mixed fragments (single texts and several, cached and not); returns the
    kinds found in the fragments."""
    scanner = Scanner(rules)  # built once: the engines keep no state that changes a result
    fragments = _fragments(rules)
    want = [reference_findings(rules, t) for t in fragments]
    assert scanner.scan(fragments) == want
    assert [scanner.findings(t) for t in fragments] == want

    @settings(max_examples=examples, deadline=None)
    @given(st.lists(st.lists(st.sampled_from(fragments), max_size=24).map("".join), min_size=1, max_size=5))
    def agree(texts: list[str]) -> None:
        texts = list(dict.fromkeys(t for t in texts if t))
        if texts:
            expected = [reference_findings(rules, t) for t in texts]
            assert scanner.scan(texts) == expected
            assert scanner.scan_cached(texts) == expected

    agree()
    return {kind for found in want for kind, _ in found}


def test_fast_engine_equals_the_reference_on_texts_made_from_the_rules():
    seen = _check_engines_agree(RULES, 200)
    assert seen >= {r.kind for r in RULES if r.examples}  # every rule with examples fired


def test_a_rule_added_in_a_test_is_covered_by_the_differential_test():
    acme = Rule(
        "acme_key",
        re.compile(r"(?<![A-Za-z0-9])acme_(?:live|dev)_[A-Za-z0-9]{20}(?![A-Za-z0-9])"),
        literals=("acme_live_", "acme_dev_"),
        examples=("ACME=acme_live_" + "Zq8x" * 5,),
    )
    assert acme.anchored and acme.joinable  # its literals start every match: the fast engine anchors on them
    seen = _check_engines_agree([*RULES, acme], 60)
    assert "acme_key" in seen
    red = Redactor(rules=[*RULES, acme])
    assert ("acme_key", "acme_dev_" + "a1B2" * 5) in red.findings("key acme_dev_" + "a1B2" * 5)


@pytest.mark.parametrize(
    "pattern,literals",
    [
        (r"ab?c", ("abc",)),  # "ac" matches without it
        (r"(?:foo|bar)_[0-9]{4}", ("foo_",)),  # the bar branch lacks it
        (r"[Kk]ey=[0-9]{8}", ("key",)),  # case-sensitive pattern, "Key=..." lacks it
        (r"(?i)token=[0-9]{8}", ("TOKEN",)),  # fine as a case-insensitive literal ...
        (r"x(?:abc)*y", ("abc",)),  # a repeat that may run zero times
        (r"tok[\s\S]en", ("token",)),  # a class the analysis cannot pin
    ],
)
def test_a_literal_that_is_not_a_necessary_condition_is_refused(pattern, literals):
    if pattern.startswith("(?i)"):  # ... so this one is accepted
        assert Rule("t", re.compile(pattern), literals=literals).keys[0].ignore_case
        return
    with pytest.raises(ValueError, match="necessary condition"):
        Rule("t", re.compile(pattern), literals=literals)


def test_rule_checks_its_examples_and_literal_shapes():
    with pytest.raises(ValueError, match="holds no finding"):
        Rule("t", re.compile(r"zz_[0-9]{8}"), literals=("zz_",), examples=("zz_123",))
    with pytest.raises(ValueError, match="ASCII"):
        Rule("t", re.compile(r"(?i)é[a-z]{8}"), literals=("é",))
    assert not Rule("t", re.compile(r"(?:x|y)ab[0-9]{8}"), literals=("ab",)).anchored
    assert not Rule("t", re.compile(r"\Aab[0-9]{8}"), literals=("ab",)).joinable
    assert not Rule("t", re.compile(r"ab[0-9]{8}(?=\s)"), literals=("ab",)).joinable
    with pytest.raises(ValueError, match="corpus guard"):
        PluginRule(
            "ds_telegram_bot_token",
            "telegram_token:TelegramBotTokenDetector",
            literals=(":",),
            corpus_guard=r":[0-9A-Za-z]{35}",
        ).load()
    with pytest.raises(ValueError, match="can hold none"):
        PluginRule("ds_twilio_api_key", "twilio:TwilioKeyDetector", literals=("AC",)).load()


def test_fold_chars_are_every_letter_case_insensitive_matching_maps_to_ascii():
    folds = {chr(c) for c in range(128, 0x30000) if re.match("(?i)[a-z]", chr(c))}
    assert folds == set(FOLD_CHARS)


def test_literal_offsets_equal_substring_search():
    """The per-conversation literal search (one DFA pass per case over the UTF-8, character offsets mapped back)
    says "present" for exactly the literals a plain substring search finds, with and without non-ASCII text."""
    scanner = Scanner(RULES)
    filler = "plain code line x = compute(1, 2) # naïve café 東京 \ud800 ✓\n" * 80
    texts = [
        filler,
        filler.encode("ascii", "ignore").decode(),
        filler + "".join(r.examples[0] for r in RULES if r.examples),
        "AKIA ghp_ eyJ sq0 SG. -us1 A3T xox://" + filler,
        "Bearer SECRET Token KEY" + filler,
    ]
    for text in texts:
        occ, folded = scanner.occurrences(text)
        assert not folded
        got = {key: key in occ for key in scanner.literals}
        assert got == {k: k.text in (text.lower() if k.ignore_case else text) for k in got}
        for key, offs in occ.items():
            if offs is not None:
                needle, hay = (key.text.lower(), text.lower()) if key.ignore_case else (key.text, text)
                assert offs == [m.start() for m in re.finditer(f"(?={re.escape(needle)})", hay)]
    assert any(got.values()) and not all(got.values())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([":", ".", "a", "Z", "9", "_", "-", " ", "é", "東", "x" * 6, "y" * 27, "Q" * 35, "\n"]),
        max_size=30,
    ).map("".join)
)
def test_compiled_corpus_guards_agree_with_the_rules_guards(text):
    """The compiled check gives Telegram's guard exactly and never says no where Discord's guard matches."""
    import numpy as np

    from harnessfit.dataset.redact import kernels

    guards = {r.kind: re.compile(r.corpus_guard) for r in RULES if isinstance(r, PluginRule) and r.corpus_guard}
    colon, dot = kernels.dot_colon_guards(np.frombuffer(text.encode("utf-8"), dtype=np.uint8))
    assert colon == (guards["ds_telegram_bot_token"].search(text) is not None)
    assert dot or guards["ds_discord_bot_token"].search(text) is None


def test_hand_written_edge_cases_agree():
    """Overlapping keywords, matches back to back, a match crossing texts, folding letters in another text."""
    texts = [
        'password="hunter22long" token: \'abcd1234efgh\' api_key = "k3y-v4lue-here"',
        'secretsecret_token="s3cr3tvalue!!" passwordpassword=\'aaaaaaaa1\'apikey="bbbbbbbb2"',
        'AUTH_KEY = "zzzzzzzz9" private_key:"-----x-----" credentials="c1c2c3c4c5"',
        'api_\u212aey="kelvin-folds-to-k1" caf\u00e9 token="t0k3nvalue"',
        "export DB_PASSWORD=Sup3rS3cret!\n  GITHUB_TOKEN=ghx1234567890\nAPI_KEY=$NOPE\nAPIKEY=plainvalue9",
        "Authorization: bearer",
        "a1B2c3D4e5F6g7H8i9J0k1L2 and more",
        "mail me at",
        "bob@corp-mail.io",
        "nothing to see: tokens tokenizer accessor authority privately",
    ]
    scanner = Scanner(RULES)
    for group in (texts, texts[:3], texts[:3] + ["caf\u00e9"], texts[:3] + ["\u017fecret='folded1234'"], texts[5:7]):
        want = [reference_findings(RULES, t) for t in group]
        assert scanner.scan(group) == want
    assert sum(k == "password_assignment" for found in scanner.scan(texts) for k, _ in found) >= 6

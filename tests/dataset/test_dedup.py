import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers.conversations import corpus, make_conv
from harnessfit.core.rejection import Reason
from harnessfit.dataset.dedup import (
    NEAR_CHARS,
    BandedIndex,
    Deduper,
    exact_key,
    lsh_params,
    minhash_values,
    normalised_text,
    token_hashes,
)


def _steps(extra: str = ""):
    body = "\n".join(f"line {i}: value = compute({i}, factor=3)" for i in range(60))
    return [
        ("read", {"path": "src/app.py"}, body + extra),
        ("bash", {"command": "python -m pytest -q"}, "12 passed in 0.41s"),
    ]


def test_near_duplicate_pair_collapses_to_one():
    a = make_conv("Add input validation to app.py", _steps(), answer="Validation added; all tests pass.")
    b = make_conv(
        "Add input validation to app.py",
        _steps("\nline 61: value = compute(61, factor=3)"),
        answer="Validation added; all tests pass!",
        salt="x",
    )
    other = corpus(4)
    d = Deduper(threshold=0.8)
    verdicts = [d.check(c) for c in [a, *other, b]]
    dropped = [v for v in verdicts if v is not None]
    assert len(dropped) == 1
    assert dropped[0].record_id == b.id and dropped[0].kept_id == a.id
    assert dropped[0].reason == Reason.duplicate_near


def test_exact_duplicate_ignores_call_ids_and_whitespace():
    a = make_conv("Rename foo to bar", _steps())
    b = make_conv("Rename  foo to bar ", _steps(), salt="-other-ids")
    d = Deduper()
    assert d.check(a) is None
    r = d.check(b)
    assert r is not None and r.reason == Reason.duplicate_exact and r.kept_id == a.id


def test_distinct_conversations_survive():
    d = Deduper()
    convs = corpus(12)
    assert all(d.check(c) is None for c in convs)


_TEXTS = [
    "",
    "one",
    "a b c d",
    "a b c d e",
    "x = f(y) ; x = f(y) ; x = f(y)",
    "  lead and trail  ",
    "__init__ a_b .. x__y",
    "déjà vu — naïve café 東京 ütf-8 ✓ ½ ² " * 40,
    "lone \ud800 surrogate and more words here",
    "z " * 9000,
    "tab\tnew\nline\u00a0nbsp\u2003em",
]
_WORD = re.compile(r"\w+|[^\w\s]")  # the tokeniser, as the definition states it


def test_token_hashes_follow_the_regex_tokeniser():
    """One hash per token, equal tokens <-> equal hashes (non-ASCII word/space characters, a lone surrogate and
    underscores included)."""
    for text in _TEXTS + [normalised_text(c) for c in corpus(6)]:
        words = _WORD.findall(text)
        hashes = token_hashes(text).tolist()
        assert len(hashes) == len(words)
        by_word: dict[str, int] = {}
        for w, h in zip(words, hashes, strict=True):
            assert by_word.setdefault(w, h) == h
        assert len(set(by_word.values())) == len(by_word)


@pytest.mark.slow
def test_minhash_is_deterministic_across_processes():
    """The signature is a pure function of the text (no Python ``hash``): processes with other hash seeds agree,
    and with the compiled backend here."""
    import os
    import subprocess
    import sys

    code = (
        "from harnessfit.dataset.dedup import minhash_values; import sys; "
        "print(minhash_values(sys.argv[1], num_perm=32, shingle_size=5, seed=3, backend='numpy').tolist())"
    )
    text = _TEXTS[7] + " x = f(y) " * 50
    outs = {
        subprocess.run(
            [sys.executable, "-c", code, text],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": s},
        ).stdout
        for s in ("1", "2")
    }
    assert len(outs) == 1
    assert outs == {str(minhash_values(text, num_perm=32, shingle_size=5, seed=3).tolist()) + "\n"}


def _shingle_set(text: str) -> set[str]:
    words = _WORD.findall(text)
    return {" ".join(words)} if len(words) < 5 else {" ".join(words[i : i + 5]) for i in range(len(words) - 4)}


def _sha1_signature(text: str, num_perm: int, seed: int) -> np.ndarray:
    """The previous definition: datasketch's own SHA-1 hashing of each 5-token shingle string."""
    from datasketch import MinHash

    ref = MinHash(num_perm=num_perm, seed=seed)
    ref.update_batch([s.encode("utf-8", "surrogatepass") for s in _shingle_set(text)])
    return ref.hashvalues


def test_minhash_estimates_jaccard_like_datasketch():
    """Arithmetic shingle hashes estimate the Jaccard similarity as well as datasketch's SHA-1 ones: within
    sampling error of the exact value on pairs from 0 to 1."""
    import random

    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(400)] + list("(){}=;.,")
    base = [rng.choice(vocab) for _ in range(3000)]
    for keep in (1.0, 0.97, 0.9, 0.7, 0.4, 0.0):
        other = [w if rng.random() < keep else rng.choice(vocab) for w in base]
        a, b = " ".join(base), " ".join(other)
        sa, sb = _shingle_set(a), _shingle_set(b)
        exact = len(sa & sb) / len(sa | sb)
        ours = (
            minhash_values(a, num_perm=256, shingle_size=5, seed=1)
            == minhash_values(b, num_perm=256, shingle_size=5, seed=1)
        ).mean()
        theirs = (_sha1_signature(a, 256, 1) == _sha1_signature(b, 256, 1)).mean()
        assert abs(ours - exact) < 0.1 and abs(theirs - exact) < 0.1, (keep, exact, ours, theirs)


def test_near_dedup_verdicts_on_real_traces_match_sha1_minhash(traces_dir):
    """On the real traces, every conversation is kept or dropped (and for which kept twin) exactly as with
    datasketch's SHA-1 shingle hashing, the definition used before the arithmetic hashes."""
    from harnessfit.convert.units import iter_convert
    from harnessfit.core.conversation import Conversation
    from harnessfit.harness.card import load_card

    convs = [c for c in iter_convert([traces_dir], load_card(), workers=1) if isinstance(c, Conversation)]
    assert len(convs) > 50
    ours, theirs = Deduper(), Deduper()
    verdicts = []
    for c in convs:
        text = normalised_text(c)
        a = ours.check(c)
        b = theirs.check_signed(
            c.id, c.meta, (exact_key(text), _sha1_signature(text[:NEAR_CHARS], theirs.num_perm, theirs.seed))
        )
        verdicts.append(((a.reason, a.kept_id) if a else None, (b.reason, b.kept_id) if b else None))
    assert [v[0] for v in verdicts] == [v[1] for v in verdicts]
    assert any(v[0] for v in verdicts)


_ODD = [
    "\u03a3\u039f\u03a6\u0399\u0391 \u03a3",
    "\u0130stanbul \u0130I",
    "\u212a\u017f stra\u00dfe \u1e9e",
    "\ufb01le \u0149",
    "a\u3000b\u2028c\x1cd\x1fe\x85f",
    "x\ud800y \udfff z",
    "\U0001f600 \U0001d400\U0001d401 emoji",
    "\u00c9COLE \u00c0 \u00c7a",
]


def test_compiled_minhash_equals_the_numpy_definition():
    for text in _TEXTS + _ODD:
        for k in (1, 3, 5):
            assert (
                minhash_values(text, num_perm=64, shingle_size=k, seed=2, backend="numba")
                == minhash_values(text, num_perm=64, shingle_size=k, seed=2, backend="numpy")
            ).all()

    @settings(max_examples=300, deadline=None)
    @given(
        st.text(
            alphabet=st.sampled_from(
                list("ab_ .,(\n\t") + ["\u00e9", "\u6771", "\u00a0", "\u0130", "\u03a3", "\ud800", "Z", "9"]
            ),
            max_size=80,
        ),
        st.integers(1, 6),
    )
    def agree(text: str, k: int) -> None:
        assert (
            minhash_values(text, num_perm=32, shingle_size=k, seed=1, backend="numba")
            == minhash_values(text, num_perm=32, shingle_size=k, seed=1, backend="numpy")
        ).all()

    agree()


def test_compiled_signature_equals_the_definition_for_conversations():
    """A conversation's signature by the compiled backend equals the numpy definition's: the exact key of
    ``normalised_text`` and the MinHash of its first ``NEAR_CHARS`` characters, for upper case, Unicode whitespace,
    characters whose lower case is longer (İ) or depends on context (final sigma), and texts longer than
    ``NEAR_CHARS``."""
    fast, plain = Deduper(), Deduper(backend="numpy")

    def check(conv) -> None:
        got, want = fast.signature(conv), plain.signature(conv)
        assert got.key == want.key == exact_key(normalised_text(conv))
        assert (got.minhash == want.minhash).all()

    for i, odd in enumerate(t for t in _ODD + _TEXTS if "\ud800" not in t):  # a conversation is valid UTF-8
        check(make_conv(f"Task {i}: {odd}", _steps(odd), answer=odd.upper()))
    check(make_conv("long", [("read", {"path": "a.py"}, "Tok x = 1 ; " * (NEAR_CHARS // 10))]))
    check(next(c for c in corpus(3)))

    @settings(max_examples=120, deadline=None)
    @given(
        st.text(
            alphabet=st.sampled_from(
                list("aB_ .,(\n\t\r") + ["\u00c9", "\u6771", "\u2003", "\u0130", "\u03a3", "\u212a", "\x1c"]
            ),
            max_size=60,
        )
    )
    def agree(s: str) -> None:
        check(make_conv(s or "x", [("bash", {"command": s}, s)], answer=s))

    agree()


def test_batched_signatures_equal_one_by_one():
    """One kernel call for many conversations gives each the signature it gets alone, also when a conversation in
    the middle holds code points not seen before or ones whose lower case needs the whole string (İ, Σ)."""
    convs = [
        make_conv(f"Task {i}: {odd}", _steps(odd), answer=odd.upper())
        for i, odd in enumerate(
            t for t in _ODD + _TEXTS + ["\u0b85\u0b86 new block", "\u10a0 GEORGIAN"] if "\ud800" not in t
        )
    ]
    convs += list(corpus(4))
    batch = Deduper().signatures(convs)
    one = [Deduper().signature(c) for c in convs]
    assert [s.key for s in batch] == [s.key for s in one] == [exact_key(normalised_text(c)) for c in convs]
    assert all((a.minhash == b.minhash).all() for a, b in zip(batch, one, strict=True))


def test_banded_index_finds_the_candidates_datasketch_finds():
    """Same band layout as datasketch's MinHashLSH and the same candidates for every query (its public API, with
    LeanMinHash sketches), on signatures that share some bands and not others."""
    from datasketch import LeanMinHash, MinHashLSH

    rng = np.random.default_rng(4)
    for threshold, num_perm in ((0.85, 128), (0.5, 64), (0.9, 64)):
        ours, theirs = BandedIndex(threshold, num_perm), MinHashLSH(threshold=threshold, num_perm=num_perm)
        assert (ours.bands, ours.rows) == (theirs.b, theirs.r) == lsh_params(threshold, num_perm)
        base = rng.integers(0, 2**32, num_perm, dtype=np.uint64).astype(np.uint32)
        sigs = []
        for _ in range(60):
            sig = base.copy()
            flip = rng.random(num_perm) < rng.choice([0.02, 0.1, 0.5, 1.0])
            sig[flip] = rng.integers(0, 2**32, int(flip.sum()), dtype=np.uint64).astype(np.uint32)
            sigs.append(sig)
        for i, sig in enumerate(sigs):
            sketch = LeanMinHash(seed=1, hashvalues=sig, scheme="affine32")
            assert ours.query(sig) == set(theirs.query(sketch))
            if i % 3:
                ours.insert(f"k{i}", sig)
                theirs.insert(f"k{i}", sketch)
        assert any(ours.query(s) for s in sigs)


def test_a_twin_as_read_gets_the_verdict_of_its_first_twin():
    """The build passes the exact key of the content before redaction: a later conversation with the same key
    gets its first twin's verdict (kept -> an exact duplicate of it; itself a near duplicate -> of the same kept
    one), whatever its own redacted signature says."""
    a = make_conv("Add input validation to app.py", _steps(), answer="Validation added; all tests pass.")
    b = make_conv(
        "Add input validation to app.py",
        _steps("\nline 61: value = compute(61, factor=3)"),
        answer="Validation added; all tests pass!",
        salt="x",
    )
    d = Deduper(threshold=0.8)
    sa, sb = d.signature(a), d.signature(b)
    assert d.check_signed(a.id, a.meta, sa, raw_key="raw-a") is None
    near = d.check_signed(b.id, b.meta, sb, raw_key="raw-b")
    assert near is not None and near.reason == Reason.duplicate_near and near.kept_id == a.id
    other = corpus(1)[0]
    twin_of_a = d.check_signed("t1", other.meta, d.signature(other), raw_key="raw-a")
    twin_of_b = d.check_signed("t2", other.meta, d.signature(other), raw_key="raw-b")
    assert (twin_of_a.reason, twin_of_a.kept_id) == (Reason.duplicate_exact, a.id)
    assert (twin_of_b.reason, twin_of_b.kept_id) == (Reason.duplicate_near, a.id)
    assert twin_of_b.detail == twin_of_a.detail == "identical to an earlier conversation after normalisation"
    assert d.check(other) is None  # the twins were not kept: the content itself is still new

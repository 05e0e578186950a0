from harnessfit.convert.rejection import Reason
from harnessfit.dataset.dedup import Deduper

from dataset_convs import corpus, make_conv


def _steps(extra: str = ""):
    body = "\n".join(f"line {i}: value = compute({i}, factor=3)" for i in range(60))
    return [("read", {"path": "src/app.py"}, body + extra),
            ("bash", {"command": "python -m pytest -q"}, "12 passed in 0.41s")]


def test_near_duplicate_pair_collapses_to_one():
    a = make_conv("Add input validation to app.py", _steps(), answer="Validation added; all tests pass.")
    b = make_conv("Add input validation to app.py", _steps("\nline 61: value = compute(61, factor=3)"),
                  answer="Validation added; all tests pass!", salt="x")
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


def test_minhash_equals_datasketch_update_batch():
    """The vectorised, memoised signature must give exactly datasketch's hash values (so near-dedup decisions and
    the Jaccard estimates written to the ledger do not change), including repeated shingles, non-ASCII text, a
    lone surrogate, and texts shorter than one shingle."""
    from datasketch import MinHash

    from harnessfit.dataset.dedup import _WORD, minhash_of, normalised_text

    texts = [normalised_text(c) for c in corpus(6)] + [
        "", "one", "a b c d", "a b c d e", "x = f(y) ; x = f(y) ; x = f(y)",
        "déjà vu — naïve café 東京 ütf-8 ✓ " * 40, "lone \ud800 surrogate and more words here", "z " * 9000]
    for text in texts * 2:  # twice: the second pass is served from the shingle-hash memo
        words = _WORD.findall(text)
        shingles = {" ".join(words)} if len(words) < 5 else {" ".join(words[i:i + 5]) for i in range(len(words) - 4)}
        ref = MinHash(num_perm=64, seed=7)
        ref.update_batch([s.encode("utf-8", "surrogatepass") for s in shingles])
        got = minhash_of(text, num_perm=64, shingle_size=5, seed=7)
        assert got.hashvalues.dtype == ref.hashvalues.dtype
        assert got.hashvalues.tolist() == ref.hashvalues.tolist()
        assert got.jaccard(ref) == 1.0


def test_shingle_hash_memo_bounded_and_exact():
    from datasketch.hashfunc import sha1_hash32

    from harnessfit.dataset.dedup import _ShingleHashes

    memo = _ShingleHashes(limit=5)
    for batch in ({"a b", "c d", "e"}, {"a b", "f g h", "i", "j", "k"}, {"a b", "lone \ud800"}):
        got = memo(batch)
        assert got.tolist() == [sha1_hash32(s.encode("utf-8", "surrogatepass")) for s in batch]
        assert len(memo._memo) <= 5

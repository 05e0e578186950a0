"""Duplicate removal: exact (SHA-256 of a normalised conversation) then near (MinHash LSH).

- ``definition`` — what a duplicate is, in plain numpy: normalise → exact key → tokens → shingles → MinHash;
- ``kernel`` — the same values in one compiled (numba) pass, the build's backend; ``signing`` picks a backend;
- ``lsh`` — a banded LSH index (the band layout datasketch's ``MinHashLSH`` chooses);
- ``Deduper`` — checks conversations in order, keeps the first of each family.
"""

from __future__ import annotations

from harnessfit.dataset.dedup.deduper import Deduper, Signature
from harnessfit.dataset.dedup.definition import NEAR_CHARS, exact_key, normalised_text, shingle_hashes, token_hashes
from harnessfit.dataset.dedup.lsh import BandedIndex, lsh_params
from harnessfit.dataset.dedup.signing import BACKENDS, minhash_values

__all__ = [
    "Deduper",
    "Signature",
    "NEAR_CHARS",
    "normalised_text",
    "exact_key",
    "token_hashes",
    "shingle_hashes",
    "minhash_values",
    "BACKENDS",
    "BandedIndex",
    "lsh_params",
]

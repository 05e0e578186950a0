"""Grouped, seeded splits: every conversation of one root request (normalised first prompt + repository) lands in
the same split, so validation never contains a task the model trained on.

Assignment: ``u = sha256(seed, group)`` as a number in [0, 1) against the cumulative ratios (train, validation,
test) — independent of order and worker count. Small-corpus rule: when a split with a ratio > 0 received no group
and another split holds at least two, the group of the fullest split with the lowest ``sha256(seed, split, group)``
moves over (splits filled in the order validation, test). So with ≥ 2 groups validation is never empty; with one
group everything is train.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

__all__ = ["SPLIT_ORDER", "assign_splits", "check_no_overlap"]

SPLIT_ORDER = ("train", "validation", "test")


def _u(*parts: str) -> float:
    h = hashlib.sha256("\x00".join(parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def assign_splits(groups: Iterable[str], ratios: dict[str, float], seed: int) -> dict[str, str]:
    """Map each group id to a split name (only names with a ratio > 0)."""
    names = [n for n in SPLIT_ORDER if ratios.get(n, 0) > 0]
    bounds, acc = [], 0.0
    for n in names:
        acc += ratios[n]
        bounds.append((acc, n))
    out: dict[str, str] = {}
    for g in sorted(set(groups)):
        u = _u(str(seed), g)
        out[g] = next((n for b, n in bounds if u < b), names[-1])
    for target in names[1:]:
        members = {n: sorted(g for g, s in out.items() if s == n) for n in names}
        if members[target]:
            continue
        donor = max(names, key=lambda n: (len(members[n]), n == "train"))
        if len(members[donor]) < 2:
            continue
        moved = min(members[donor], key=lambda g: _u(str(seed), target, g))
        out[moved] = target
    return out


def check_no_overlap(split_groups: dict[str, set[str]]) -> None:
    """Raise AssertionError naming the group if one root request appears in two splits (asserted at build time)."""
    seen: dict[str, str] = {}
    for split, groups in split_groups.items():
        for g in groups:
            if g in seen and seen[g] != split:
                raise AssertionError(f"root request {g} is in both {seen[g]} and {split}")
            seen[g] = split

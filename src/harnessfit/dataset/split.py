"""Grouped, seeded splits: every conversation of one root request (normalised first prompt + repository) lands in
the same split, so validation never contains a task the model trained on.

Assignment: ``u = sha256(seed, group)`` as a number in [0, 1) against the cumulative ratios (train, validation,
test) — independent of order and worker count. Small-corpus rule: when a split with a ratio > 0 received no group
and another split holds at least two, the group of the fullest split with the lowest ``sha256(seed, split, group)``
moves over (splits filled in the order validation, test). So with ≥ 2 groups validation is never empty; with one
group everything is train.

Joined groups: a sub-agent's run answers its own prompt (its own root request) but is part of its parent's task, so
``joined`` maps its group to its parent's group, and it lands in the parent's split (down a chain of sub-agents; a
cycle joins to its smallest group). Only groups no other is joined to are assigned by hash, so adding sub-agent runs
moves no parent. A group joined to one that is not among the groups is its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

__all__ = ["SPLIT_ORDER", "assign_splits", "check_no_overlap"]

SPLIT_ORDER = ("train", "validation", "test")


def _u(*parts: str) -> float:
    h = hashlib.sha256("\x00".join(parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def _heads(groups: set[str], joined: dict[str, str]) -> dict[str, str]:
    """Each group's head: the group its chain of ``joined`` links ends at (within ``groups``)."""
    heads: dict[str, str] = {}
    for g in groups:
        chain, cur = [g], g
        while (nxt := joined.get(cur)) in groups and nxt not in chain:
            chain.append(nxt)
            cur = nxt
        nxt = joined.get(cur)
        heads[g] = min(chain[chain.index(nxt) :]) if nxt in chain else cur
    return heads


def assign_splits(
    groups: Iterable[str], ratios: dict[str, float], seed: int, joined: dict[str, str] | None = None
) -> dict[str, str]:
    """Map each group id to a split name (only names with a ratio > 0); a group in ``joined`` gets the split of the
    group it is joined to."""
    every = set(groups)
    heads = _heads(every, joined or {})
    by_head = _assign(set(heads.values()), ratios, seed)
    return {g: by_head[heads[g]] for g in sorted(every)}


def _assign(groups: set[str], ratios: dict[str, float], seed: int) -> dict[str, str]:
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

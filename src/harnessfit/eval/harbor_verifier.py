"""How a Harbor task's verifier is read: the reward, every named reward, and what the verifier left behind.

This follows Harbor's own verifier (harbor-framework/harbor, ``src/harbor/verifier/verifier.py``; read at the
0.22 line, where PR #1620 "rich verifier rewards" put ``reward.json`` first):

* ``Verifier.verify`` reads ``/logs/verifier/reward.json`` when it exists, and ``reward.txt`` only when it does
  not. A ``reward.json`` that is there decides even when it is unusable: Harbor raises (``RewardFileEmptyError``,
  ``VerifierOutputParseError``) and never falls back to ``reward.txt``; here that is a None reward with the reason.
* ``Verifier._parse_reward_text``: an empty file is an error; otherwise ``{"reward": float(text)}``.
* ``Verifier._parse_reward_json``: an empty file is an error; otherwise the JSON object, every key kept
  (``VerifierResult.rewards``, ``src/harbor/models/verifier/result.py``: ``dict[str, float | int]``).
* The one number of a trial (``_primary_reward`` in ``src/harbor/cli/jobs.py``, ``_extract_primary_reward`` in
  ``src/harbor/upload/uploader.py``): the ``"reward"`` entry, else the only entry, else none.

Stricter than Harbor on purpose, each with its reason recorded: only regular files are read (a link planted in the
folder is not followed), and a reward must be a finite number — Harbor's ``float()`` and ``json.loads`` accept
``nan``/``inf``, which no rate can use, so such a reward is None ("not a finite number"); a JSON boolean is no
number (``VerifierResult`` would have coerced it).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from pathlib import Path

from harnessfit.eval.episode import VerifierOutput
from harnessfit.eval.safefs import read_regular

__all__ = ["REWARD_FILES", "parse_reward", "record_verifier", "read_reward_files", "tail", "tree_digest"]

REWARD_FILES = ("reward.json", "reward.txt")  # in Harbor's order of precedence
SHOWN = 4000  # characters of each reward file and output tail kept in the results


def _finite(value: object) -> float | None:
    """``value`` as a float when it is a finite number (not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


def _from_json(raw: bytes) -> tuple[float | None, dict[str, float] | None, str | None]:
    try:
        data = json.loads(raw)  # Python's reader, as Harbor's: NaN / Infinity parse, and are refused below
    except ValueError as exc:
        return None, None, f"reward.json is not JSON ({exc})"
    if not isinstance(data, dict):
        return None, None, "reward.json is not an object"
    rewards: dict[str, float] = {}
    for key, value in data.items():
        number = _finite(value)
        if number is None:
            kind = "a finite number" if isinstance(value, (int, float)) and not isinstance(value, bool) else "a number"
            return None, None, f"reward.json's {key!r} is not {kind} ({str(value)[:40]})"
        rewards[str(key)] = number
    if "reward" in rewards:
        return rewards["reward"], rewards, None
    if len(rewards) == 1:
        return next(iter(rewards.values())), rewards, None
    if not rewards:
        return None, rewards, "reward.json holds no reward"
    return None, rewards, "reward.json has several rewards and none named 'reward'"


def _from_text(raw: bytes) -> tuple[float | None, dict[str, float] | None, str | None]:
    try:
        value = float(raw.decode("utf-8"))  # float() takes surrounding whitespace, as Harbor's does
    except (UnicodeDecodeError, ValueError):
        return None, None, f"reward.txt is not a number: {raw[:40]!r}"
    if not math.isfinite(value):
        return None, None, f"reward.txt is not a finite number ({raw.decode('utf-8').strip()[:40]})"
    return value, {"reward": value}, None


def parse_reward(folder: Path) -> tuple[float | None, dict[str, float] | None, str | None]:
    """(reward, every named reward, problem) from ``reward.json`` (precedence) else ``reward.txt`` in ``folder``.

    A missing, empty, non-regular or malformed file gives a None reward and the problem in words; a multi-key
    ``reward.json`` keeps every key in the second value even when no scalar can be chosen.
    """
    for name, parse in (("reward.json", _from_json), ("reward.txt", _from_text)):
        if not os.path.lexists(folder / name):
            continue
        raw = read_regular(folder, name, limit=1 << 20)
        if raw is None:
            return None, None, f"{name} is not a regular file (not read)"
        if not raw:
            return None, None, f"{name} is empty"
        return parse(raw)
    return None, None, "the verifier wrote no reward.json or reward.txt"


def read_reward_files(folder: Path) -> dict[str, str]:
    """The text of each reward file the verifier wrote (regular files only, the first ``SHOWN`` characters)."""
    out = {}
    for name in REWARD_FILES:
        raw = read_regular(folder, name, limit=SHOWN)
        if raw is not None:
            out[name] = raw.decode("utf-8", errors="replace")
        elif os.path.lexists(folder / name):
            out[name] = "(not a regular file; not read)"
    return out


def tail(path: Path, limit: int = SHOWN) -> str:
    """The last ``limit`` characters of a text file ("" when it is missing)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-limit:]
    except OSError:
        return ""


def tree_digest(root: Path) -> str:
    """A digest of a folder's names, kinds and contents, never following a link (a link counts by its target
    text): a Harbor task's expected change is "the working folder's digest differs from its seed's"."""
    h = hashlib.sha256()
    for base, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        rel_base = Path(base).relative_to(root)
        for name in sorted(files) + [d for d in dirs if (Path(base) / d).is_symlink()]:
            path = Path(base) / name
            rel = (rel_base / name).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                h.update(b"L" + rel.encode() + b"\0" + os.readlink(path).encode() + b"\n")
            elif stat.S_ISREG(st.st_mode):
                h.update(
                    b"F"
                    + rel.encode()
                    + b"\0"
                    + hashlib.sha256(read_regular(root, rel, limit=None) or b"").digest()
                    + b"\n"
                )
            else:
                h.update(b"O" + rel.encode() + b"\0" + str(stat.S_IFMT(st.st_mode)).encode() + b"\n")
        for d in dirs:
            h.update(b"D" + (rel_base / d).as_posix().encode() + b"\n")
    return h.hexdigest()


def record_verifier(facts, ep_dir: Path, logs: Path, code: int | None, killed: str | None, timeout: float) -> None:
    """Fill an episode's checker facts from what ``tests/test.sh`` left: the reward (``parse_reward`` on ``logs``),
    every named reward, the verifier's output tails (``ep_dir/checker.txt``, ``checker.stderr.txt``) and reward
    files. The checker counts as passed only at full reward (1.0); a verifier the runner stopped has none."""
    reward, rewards, problem = parse_reward(logs)
    facts.reward, facts.rewards = reward, rewards
    if killed is not None:
        facts.checker_exit_code = -1
        problem = f"verifier stopped ({killed}) after {timeout:g} s"
    else:
        facts.checker_exit_code = 0 if reward is not None and reward >= 1.0 else 1
    stdout, stderr = tail(ep_dir / "checker.txt"), tail(ep_dir / "checker.stderr.txt")
    facts.verifier = VerifierOutput(
        exit_code=code if killed is None else None,
        stdout=stdout,
        stderr=stderr,
        reward_files=read_reward_files(logs),
        problem=problem,
    )
    note = f"\n[harnessfit] test.sh exit code {code}; reward {reward}" + (f" ({problem})" if problem else "")
    facts.checker_output = (stdout + stderr + note)[-2000:]


def record_not_run(facts, problem: str) -> None:
    """The verifier was not run (``test.sh`` needs what an offline verifier cannot give): no reward, the checker
    failed, ``problem`` the one-line reason."""
    facts.reward, facts.rewards, facts.checker_exit_code = None, None, 1
    facts.verifier = VerifierOutput(exit_code=None, problem=problem)
    facts.checker_output = f"[harnessfit] test.sh not run: {problem}"

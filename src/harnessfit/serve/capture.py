"""Token-exact capture: what the engine sampled for every chat request, per episode, in TRL's harness contract.

A trainer that learns from episodes in the real harness must train on exactly the tokens the policy sampled —
never on a re-tokenisation of the text the harness kept (a tool-call parser, a template round trip or Pi's own
session file can all change bytes). With ``harnessfit serve --capture-dir DIR`` the built-in engine records, for
each request it answers, the prompt ids it rendered, every sampled id (the stop id included), each one's
log-probability under the distribution it was drawn from (``Engine``'s processed scores), and the loss mask (0 on
the prompt, 1 on every sampled token). The tool-call parser never changes what counts: the record is what was
sampled, whatever the parser made of it.

An episode is named by the API key its client sends (``Authorization: Bearer <key>``; Pi sends the key its
models.json gives): each episode's turns go to ``DIR/<key>.jsonl``, one line per request, written when the
request ends. ``training_trace(DIR, key)`` returns them in the shape of OpenEnv's ``TrainingTrace`` (``{
"schema_version": 1, "turns": [{node_id, prompt_token_ids, completion_token_ids, per_token_logps, loss_mask,
request, response, metadata}]}``), which TRL 1.16's ``trl.experimental.async_grpo`` consumes. The folder lives
outside the sandbox: the policy can add turns only by asking the model, and can read none.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError

__all__ = ["CaptureStore", "episode_key", "training_trace", "DEFAULT_EPISODE"]

DEFAULT_EPISODE = "default"  # requests without an API key
_KEY = re.compile(r"[^A-Za-z0-9._-]")


def episode_key(authorization: str | None) -> str:
    """The episode a request belongs to: its bearer key, as a safe file name (other characters become ``_``)."""
    if not authorization:
        return DEFAULT_EPISODE
    scheme, _, key = authorization.strip().partition(" ")
    key = key.strip() if scheme.lower() == "bearer" else authorization.strip()
    return _KEY.sub("_", key)[:128] or DEFAULT_EPISODE


class CaptureStore:
    """Appends one turn per served request to ``<folder>/<episode>.jsonl`` (thread-safe; whole lines only)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def record(
        self,
        episode: str,
        *,
        prompt_ids: list[int],
        sampled_ids: list[int],
        logprobs: list[float],
        request: dict[str, Any],
        response: dict[str, Any],
        metadata: dict[str, Any],
    ) -> dict[str, Any]:
        if len(sampled_ids) != len(logprobs):
            raise ValueError(f"capture: {len(sampled_ids)} sampled ids but {len(logprobs)} logprobs")
        with self._lock:
            index = self._counts.get(episode)
            if index is None:  # a server restarted on the same folder continues the episode's numbering
                path = self.folder / f"{episode}.jsonl"
                index = sum(1 for _ in path.open("rb")) if path.is_file() else 0
            self._counts[episode] = index + 1
            turn = {
                "node_id": f"{episode}:{index}",
                "prompt_token_ids": list(prompt_ids),
                "completion_token_ids": list(sampled_ids),
                "per_token_logps": list(logprobs),
                "loss_mask": [0] * len(prompt_ids) + [1] * len(sampled_ids),
                "request": request,
                "response": response,
                "metadata": {**metadata, "turn": index, "captured_at": time.time()},
            }
            with (self.folder / f"{episode}.jsonl").open("ab") as fh:
                fh.write(orjson.dumps(turn) + b"\n")
        return turn


def training_trace(folder: Path, episode: str) -> dict[str, Any]:
    """One episode's captured turns as a ``TrainingTrace``-shaped dict (turns in the order they were served)."""
    path = Path(folder) / f"{_KEY.sub('_', episode)}.jsonl"
    if not path.is_file():
        raise UserError(
            f"no captured turns for episode {episode!r} in {folder} (was the server started with "
            "--capture-dir, and did the client send that API key?)"
        )
    turns = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    return {"schema_version": 1, "turns": turns}

"""Every kept context holds only texts the target Pi writes: the text verifier (``harness.pi_texts.text_violations``)
over every complete conversation and every exact prefix built from both shared trace sets at the default target."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from harnessfit.convert import convert
from harnessfit.harness.card import load_card
from harnessfit.harness.pi_texts import text_violations
from harnessfit.harness.versions import DEFAULT_PI_VERSION


@pytest.mark.parametrize("name", ["traces", "traces-extra"])
def test_no_kept_context_holds_a_text_the_target_does_not_write(traces_dir: Path, tmp_path: Path, name: str) -> None:
    folder = traces_dir.parent / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is not there")
    card = load_card("pi", DEFAULT_PI_VERSION)
    convert([folder], tmp_path / "o", card, workers=1)
    contexts, found, rerendered = 0, [], 0
    for file in ("conversations.jsonl", "prefixes.jsonl"):
        for line in (tmp_path / "o" / file).read_bytes().splitlines():
            record = orjson.loads(line)
            contexts += 1
            rerendered += any(t.startswith("pi.text_rerendered:") for t in record["meta"]["transformations"])
            found += [f"{record['meta']['file']}: {v}" for v in text_violations(card, record["messages"])]
    assert contexts > 0 and rerendered > 0  # the old Pi sessions' texts were re-rendered, not dropped
    assert found == []

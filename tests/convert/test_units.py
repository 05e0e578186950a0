"""The convert runner's two result paths on the real traces: objects (``iter_unit_results``/``iter_convert``, used by
the dataset build) and bytes (``iter_encoded_units``, what ``convert()`` writes, serialised in the workers). Both
must give the same records in the same order for any worker count and task size."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from harnessfit.convert import convert, iter_convert, iter_unit_results
from harnessfit.convert.ledger import Accounting
from harnessfit.convert.units import EncodedUnit, encode_unit, iter_encoded_units
from harnessfit.core import Conversation, Rejection
from harnessfit.harness.card import load_card

OUTPUT_FILES = ("conversations.jsonl", "ledger.jsonl", "ledger_summary.md", "accounting.json")
INSTALL_DIR = "/opt/pi-test"  # fixed so the bytes do not depend on $HARNESSFIT_HOME


@pytest.fixture(scope="module")
def card():
    return load_card("pi", "0.73.1")


@pytest.fixture(scope="module")
def objects(traces_dir: Path, card) -> list[Conversation | Rejection]:
    return list(iter_convert([traces_dir], card, workers=1, install_dir=INSTALL_DIR))


def _blobs(units: list[EncodedUnit]) -> tuple[bytes, bytes]:
    return b"".join(u.conversations for u in units), b"".join(u.ledger for u in units)


def test_written_files_are_the_objects_serialised_in_order(traces_dir: Path, card, objects, tmp_path: Path):
    """The fast path writes exactly orjson(model_dump(mode="json")) of each object iter_convert yields, in order."""
    convert([traces_dir], tmp_path, card, workers=2, install_dir=INSTALL_DIR)
    convs = [o for o in objects if isinstance(o, Conversation)]
    rejs = [o for o in objects if isinstance(o, Rejection)]
    assert convs and rejs
    want_conv = b"".join(orjson.dumps(c.model_dump(mode="json")) + b"\n" for c in convs)
    want_led = b"".join(orjson.dumps(r.model_dump(mode="json")) + b"\n" for r in rejs)
    assert (tmp_path / "conversations.jsonl").read_bytes() == want_conv
    assert (tmp_path / "ledger.jsonl").read_bytes() == want_led
    # and they parse back into the same records (no re-validation needed to trust them, but they would pass it)
    back = [Conversation.model_validate_json(line) for line in want_conv.splitlines()]
    assert back == convs


@pytest.mark.parametrize("workers,chunksize", [(2, 1), (2, 3), (3, 5)])
def test_encoded_units_identical_for_any_workers_and_chunks(traces_dir: Path, card, workers: int, chunksize: int):
    one = list(iter_encoded_units([traces_dir], card, workers=1, install_dir=INSTALL_DIR))
    many = list(iter_encoded_units([traces_dir], card, workers=workers, install_dir=INSTALL_DIR, chunksize=chunksize))
    assert [u.index for u in many] == [u.index for u in one] == sorted(u.index for u in one)
    assert [(u.label, u.format, u.size, u.read, u.accepted, u.reasons) for u in many] == [
        (u.label, u.format, u.size, u.read, u.accepted, u.reasons) for u in one
    ]
    assert _blobs(many) == _blobs(one)
    for u in many:
        assert u.read == u.accepted + u.rejected
        assert u.conversations.count(b"\n") == u.accepted
        assert u.ledger.count(b"\n") == u.rejected
        assert set(u.examples) == set(u.reasons)
        for reason, ex in u.examples.items():
            assert ex.reason.value == reason


def test_encode_unit_matches_object_results_with_workers(traces_dir: Path, card):
    """The object API keeps its types and order with workers; encoding it gives the bytes path's output."""
    results = list(iter_unit_results([traces_dir], card, workers=2, install_dir=INSTALL_DIR))
    assert all(isinstance(o, Conversation | Rejection) for r in results for o in r.outputs)
    encoded = list(iter_encoded_units([traces_dir], card, workers=2, install_dir=INSTALL_DIR))
    assert _blobs([encode_unit(r) for r in results]) == _blobs(encoded)
    a_obj, a_enc = Accounting(), Accounting()
    for r, e in zip(results, encoded, strict=True):
        a_obj.add(r)
        a_enc.add(e)
    a_obj.check()
    a_enc.check()
    assert a_obj.as_dict() == a_enc.as_dict()


def test_default_install_dir_resolved_once_gives_same_bytes(traces_dir: Path, card, tmp_path: Path):
    """``install_dir=None`` means the card's default folder, which the system prompt names."""
    pi = traces_dir / "pi"
    convert([pi], tmp_path / "default", card, workers=2)
    convert([pi], tmp_path / "explicit", card, workers=1, install_dir=card.default_install_dir())
    for name in OUTPUT_FILES:
        assert (tmp_path / "default" / name).read_bytes() == (tmp_path / "explicit" / name).read_bytes(), name
    first = json.loads((tmp_path / "default" / "conversations.jsonl").read_bytes().splitlines()[0])
    assert card.default_install_dir() in first["messages"][0]["content"]


def test_on_unit_sees_every_unit_with_counts(traces_dir: Path, card, tmp_path: Path):
    seen: list[EncodedUnit] = []
    summary = convert([traces_dir], tmp_path, card, workers=2, install_dir=INSTALL_DIR, on_unit=seen.append)
    assert [u.label for u in seen] == [f.file for f in summary.accounting.files]
    assert sum(u.read for u in seen) == summary.read
    assert sum(u.accepted for u in seen) == summary.accepted
    assert sum(u.rejected for u in seen) == summary.rejected


def _fail_on_second(units):  # module level: the worker process runs it
    if units[0].index == 1:
        raise ValueError(f"boom at {units[0].label}")
    return units[0].index


def test_worker_error_reaches_the_caller_and_workers_stop(traces_dir: Path):
    import multiprocessing as mp

    from harnessfit.formats.registry import iter_units
    from harnessfit.pipeline import ordered_map

    units = iter_units([traces_dir], None)
    with pytest.raises(ValueError, match="boom at"):
        list(ordered_map(_fail_on_second, [[u] for u in units], workers=2))
    assert not mp.active_children()


def test_abandoned_iteration_stops_the_workers(traces_dir: Path, card):
    import multiprocessing as mp

    it = iter_encoded_units([traces_dir], card, workers=2, install_dir=INSTALL_DIR, chunksize=1)
    first = next(it)
    assert first.index == 0
    assert mp.active_children()
    it.close()
    assert not mp.active_children()


def test_the_collector_pause_restores_the_collector_as_it_was() -> None:
    import gc

    from harnessfit.convert.units import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("a converter bug")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()


def test_the_fast_line_writer_gives_the_reference_lines(traces_dir) -> None:
    """Every record converted from both trace sets, and conversations holding values orjson and pydantic write
    differently (a date, bytes, a str subclass, a non-string key, NaN), give ``line_reference``'s bytes."""
    import datetime

    from harnessfit.convert.units import _line, iter_unit_results, line_reference
    from harnessfit.core.conversation import Conversation
    from harnessfit.harness.card import load_card

    seen = 0
    for res in iter_unit_results([traces_dir, traces_dir.parent / "traces-extra"], load_card()):
        for item in [*res.outputs, *res.prefixes]:
            assert _line(item) == line_reference(item)
            seen += isinstance(item, Conversation)
    assert seen > 20

    class Tag(str):
        pass

    meta = {"source": "x", "file": "f", "sha256": "s", "root_request_id": "r", "card": "c", "cwd": "/", "date": "d"}
    for odd in [
        datetime.datetime(2024, 1, 2, 3, 4, 5),
        datetime.date(2024, 1, 2),
        b"raw",
        Tag("t"),
        {1: "a"},
        float("nan"),
        float("inf"),
        (1, 2),
        "plain",
    ]:
        conv = Conversation(id="a", messages=[{"role": "user", "content": [odd]}], tools=[{"k": odd}], meta=meta)
        assert _line(conv) == line_reference(conv), repr(odd)

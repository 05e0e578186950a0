"""Dating a Pi session by its own words (``harness.pi.texts.text_releases``): the releases read for the catalogue
that write every Pi-authored text of a session, shown beside the committed cards its layout fits."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.convert.yields import recorded_lines
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.pi.recorded import recorded_pi_versions
from harnessfit.harness.pi.texts import RELEASES_READ, WORDINGS, releases_label, text_releases

SHARED = Path(__file__).resolve().parents[3] / "shared"

OLD_EDIT = "Successfully replaced text in a.py. Changed 3 characters to 5 characters."  # 0.7.6–0.30.2
OLD_READ = "x = 1\n\n[12 more lines in file. Use offset=40 to continue]"  # 0.13.2–0.49.3
NEW_READ = "x = 1\n\n[12 more lines in file. Use offset=40 to continue.]"  # 0.50.3+


def _between(since: str, until: str) -> tuple[str, ...]:
    return RELEASES_READ[RELEASES_READ.index(since) : RELEASES_READ.index(until) + 1]


def test_each_text_narrows_to_the_releases_that_write_it() -> None:
    assert text_releases([("edit", OLD_EDIT)]) == _between("0.7.6", "0.30.2")
    assert text_releases([("edit", OLD_EDIT), ("read", OLD_READ)]) == _between("0.13.2", "0.30.2")
    assert releases_label(text_releases([("edit", OLD_EDIT), ("read", OLD_READ)])) == "0.13.2–0.30.2"


def test_texts_of_two_eras_fit_no_one_release() -> None:
    both = text_releases([("edit", OLD_EDIT), ("read", NEW_READ)])
    assert both == ()
    assert releases_label(both) == "several releases"


def test_the_environments_text_alone_tells_nothing() -> None:
    assert text_releases([("read", "x = 1\n"), ("bash", "ok\n")]) is None
    assert releases_label(None) is None


@pytest.mark.parametrize("wording", [w for w in WORDINGS if w.tool in ("edit", "write")], ids=lambda w: w.key)
def test_every_fixed_wording_dates_its_own_text(wording) -> None:
    """Render each edit/write wording with sample values: the releases the text is dated to are releases that write
    the wording."""
    numbers = ("bytes", "count", "old_chars", "new_chars", "index", "other", "occurrences")
    values = {**{n: "7" for n in numbers}, "path": "src/a.py", "error": "EACCES"}
    fit = text_releases([(wording.tool, wording.template.format(**values))])
    assert fit and set(fit) <= {r for r in RELEASES_READ if wording.written_by(r)}, (wording, fit)


@pytest.mark.skipif(not (SHARED / "traces" / "pi").is_dir(), reason="../shared/traces is not beside the repo")
def test_a_real_0x_session_is_dated_older_than_every_committed_card() -> None:
    """The pi-mono session has no system message, so its layout fits 0.73.1–0.82.0; its edit results (``Changed N
    characters to M characters.``) were last written by 0.30.2, so its texts date it before every committed card and
    the summary says so."""
    path = SHARED / "traces" / "pi" / "badlogic__pi-mono__large-session.jsonl"
    (traj,) = [t for t in PiReader().read(path) if hasattr(t, "steps")]
    recorded = recorded_pi_versions(traj)
    assert recorded.texts, recorded
    assert all(RELEASES_READ.index(r) <= RELEASES_READ.index("0.30.2") for r in recorded.texts)
    doc = {
        "pi_recorded": [
            {
                "versions": "|".join(recorded.versions),
                "texts_fit": recorded.texts_label(),
                "files": 1,
                "calls": 3,
                "labels": 2,
                "labels_at_recorder": 2,
            }
        ]
    }
    (line, *_) = recorded_lines(doc, "pi-1.6.0")
    assert f"in the words of pi {recorded.texts_label()}" in line

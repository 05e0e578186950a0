"""synth stage: scripted solvers (the golden plan, its double-encoded contrast) run through the real Pi on a task
suite; their Pi session files, kept when the loop completed, are training input for ``harnessfit build``.

``synth(suite_dir, out_dir, seeds=…) -> manifest`` (``record.py``); ``targeting.py`` weights a generated suite's
training families toward the failures an eval run showed (``harnessfit synth --from-eval``).
"""

from harnessfit.synth.record import synth

__all__ = ["synth"]

"""Moved to ``harnessfit.harness.pi.recorded`` (Pi's harness package). Kept so the source formats and the converter,
which render in the Pi target's words, import it where they always did; new code imports the new path."""

from harnessfit.harness.pi.recorded import *  # noqa: F403
from harnessfit.harness.pi.recorded import __all__  # noqa: F401

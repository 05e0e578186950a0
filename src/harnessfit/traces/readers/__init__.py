"""Trace readers: one module per source format, one plugin signature (see ``base.Reader``)."""

from harnessfit.traces.readers.base import Reader
from harnessfit.traces.readers.registry import FORMATS, Unit, detect_format, get_reader, iter_units, read_unit

__all__ = ["Reader", "FORMATS", "Unit", "detect_format", "get_reader", "iter_units", "read_unit"]

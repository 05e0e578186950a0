"""Source formats: one folder per format (``formats/<name>/reader.py`` + ``mapping.py``), one registry entry each.

- ``base``: the two contracts, ``BaseTraceReader`` (a reader implements ``detect`` and ``read_file``; the base owns
  hashing, file checks, streaming, errors and relabelling) and ``Mapping`` (``map_call`` → ``PiCall`` | ``Drop`` |
  ``Failure``);
- ``reading``: safe reading helpers (sniffing, file checks, whole-document JSON, unit hashes);
- ``registry``: ``FORMATS`` (name → ``Format(reader, mapping)``, in detection order), detection and the walk of the
  inputs into units (``iter_units``, ``read_unit``).

Formats: ``pi``, ``claude_code``, ``codex``, ``swe_agent``, ``openhands``, ``openai_chat``. How to add one:
``docs/extending.md``.
"""

from harnessfit.formats.base import BaseTraceReader, Drop, MapContext, MapOutcome, Mapping, PiCall
from harnessfit.formats.registry import (
    FORMATS,
    Format,
    Unit,
    available_formats,
    detect_format,
    get_format,
    get_mapping,
    get_reader,
    iter_units,
    read_unit,
)

__all__ = [
    "BaseTraceReader",
    "Drop",
    "FORMATS",
    "Format",
    "MapContext",
    "MapOutcome",
    "Mapping",
    "PiCall",
    "Unit",
    "available_formats",
    "detect_format",
    "get_format",
    "get_mapping",
    "get_reader",
    "iter_units",
    "read_unit",
]

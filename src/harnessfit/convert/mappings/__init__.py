"""Per-format mappings from source tool calls to Pi tool calls (see ``base`` for the contract)."""

from harnessfit.convert.mappings.base import Drop, Failure, MapContext, MapOutcome, Mapping, PiCall, parse_arguments
from harnessfit.convert.mappings.registry import MAPPINGS, get_mapping

__all__ = ["Drop", "Failure", "MapContext", "MapOutcome", "Mapping", "PiCall", "parse_arguments", "MAPPINGS", "get_mapping"]

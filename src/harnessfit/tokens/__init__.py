"""tokens stage: render SFT records with the real tokenizer and training chat template, verify loss masks,
measure lengths against context caps, and write the tokenized training set that training reads unchanged."""

from harnessfit.tokens.audit import DEFAULT_CAPS, AuditReport, audit, recommend_cap
from harnessfit.tokens.output import TOKENIZED_SCHEMA, read_tokenized
from harnessfit.tokens.render import MaskViolation, Problem, RecordError, Rendered, render_many, render_record

__all__ = [
    "audit",
    "AuditReport",
    "DEFAULT_CAPS",
    "recommend_cap",
    "render_record",
    "render_many",
    "Rendered",
    "RecordError",
    "MaskViolation",
    "Problem",
    "TOKENIZED_SCHEMA",
    "read_tokenized",
]

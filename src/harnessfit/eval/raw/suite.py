"""A raw suite: frozen prompts answered in one completion each, without tools, and checked for one language.

A suite is a folder with ``suite.yaml``::

    name: svelte-components        # defaults to the folder name
    language: svelte               # which checker: svelte | python
    system: "You are …"            # the system message sent before every prompt (optional)
    prompts:
      - id: counter                # unique, [a-z0-9_-]
        prompt: "Write a …"

"Frozen" means the results name the suite by the SHA-256 of ``suite.yaml``'s bytes: two runs compare only when
the digests agree.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harnessfit.core.jsonio import sha256_bytes
from harnessfit.errors import UserError
from harnessfit.eval.raw.checkers import LANGUAGES

__all__ = ["RawPrompt", "RawSuite", "load_raw_suite"]

_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class RawPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    prompt: str = Field(min_length=1)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(f"prompt id {value!r} must match [a-z0-9][a-z0-9_-]*")
        return value


class RawSuite(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    language: str
    system: str | None = None
    prompts: list[RawPrompt] = Field(min_length=1)
    path: str = ""
    sha256: str = ""

    @field_validator("language")
    @classmethod
    def _language(cls, value: str) -> str:
        if value not in LANGUAGES:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {value!r}")
        return value

    @model_validator(mode="after")
    def _unique(self) -> RawSuite:
        ids = [p.id for p in self.prompts]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate prompt ids: {', '.join(dup)}")
        return self

    def messages(self, prompt: RawPrompt) -> list[dict[str, str]]:
        """The chat messages one answer is asked with."""
        head = [{"role": "system", "content": self.system}] if self.system else []
        return [*head, {"role": "user", "content": prompt.prompt}]

    def info(self) -> dict[str, object]:
        """What a results file records about the suite."""
        return {
            "name": self.name,
            "path": self.path,
            "language": self.language,
            "sha256": self.sha256,
            "system": self.system,
            "prompts": {p.id: p.prompt for p in self.prompts},
        }


def load_raw_suite(folder: Path) -> RawSuite:
    """Read ``folder/suite.yaml`` (or a YAML file given directly); clear one-line errors for bad suites."""
    folder = Path(folder)
    path = folder / "suite.yaml" if folder.is_dir() else folder
    if not path.is_file():
        raise UserError(f"raw suite not found: {path} (a raw suite is a folder with suite.yaml)")
    data = path.read_bytes()
    try:
        raw = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from exc
    if not isinstance(raw, dict):
        raise UserError(f"{path}: a raw suite is a mapping with language and prompts")
    raw.setdefault("name", path.parent.name)
    try:
        suite = RawSuite.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "suite"
        raise UserError(f"{path}: {where}: {first.get('msg', 'invalid').removeprefix('Value error, ')}") from None
    suite.path = str(path.parent)
    suite.sha256 = sha256_bytes(data)
    return suite

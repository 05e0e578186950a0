"""BuildConfig: everything a dataset build depends on, with defaults, so a build is reproducible from it alone."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harnessfit.convert.policy import ConvertPolicy
from harnessfit.errors import UserError
from harnessfit.harness.versions import DEFAULT_PI_VERSION, PROFILES, harness_profile, harness_spec, parse_harness

__all__ = [
    "InputSpec",
    "ConvertConfig",
    "RedactionConfig",
    "DedupConfig",
    "SplitConfig",
    "BuildConfig",
    "load_build_config",
    "config_from_values",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputSpec(_Strict):
    """One input file or folder; ``formats`` restricts which readers may claim it (None = detect)."""

    path: str
    formats: list[str] | None = None


class ConvertConfig(_Strict):
    """How conversion treats calls Pi would never see (``harnessfit.convert.policy``): ``drop_ui_tools`` drops UI-only
    calls (todo/plan updates, a session-title setter) with their results where that changes no later context the
    model saw; ``ui_tools`` replaces a format's list of UI-only tool names (``{"claude_code": ["TodoWrite"]}``)."""

    drop_ui_tools: bool = True
    ui_tools: dict[str, list[str]] = Field(default_factory=dict)

    def policy(self, fidelity: str = "content") -> Any:
        return ConvertPolicy(
            drop_ui_tools=self.drop_ui_tools,
            ui_tools={k: tuple(v) for k, v in sorted(self.ui_tools.items())},
            fidelity=fidelity,
        )


class RedactionConfig(_Strict):
    """Which redactors run. ``kinds`` None = all (see ``Redactor.KINDS``)."""

    enabled: bool = True
    kinds: list[str] | None = None
    high_entropy: bool = True
    detect_secrets: bool = True


class DedupConfig(_Strict):
    """Exact (SHA-256 of the normalised conversation) and near (MinHash LSH) duplicate removal."""

    exact: bool = True
    near: bool = True
    threshold: float = Field(0.85, gt=0.0, le=1.0, description="estimated Jaccard similarity that counts as a twin")
    num_perm: int = Field(128, ge=16, le=1024)
    shingle_size: int = Field(5, ge=1, le=32, description="word n-gram size of the shingles")
    seed: int = 1


class SplitConfig(_Strict):
    """Grouped split ratios (groups = root requests) and the seed of the hash-based assignment."""

    train: float = Field(0.8, ge=0.0)
    validation: float = Field(0.1, ge=0.0)
    test: float = Field(0.1, ge=0.0)
    seed: int = 0

    @model_validator(mode="after")
    def _sum_to_one(self) -> SplitConfig:
        total = self.train + self.validation + self.test
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"split ratios must add up to 1 (got {total:g}); e.g. train=0.8 validation=0.1 test=0.1")
        if self.train <= 0:
            raise ValueError("split.train must be > 0")
        return self

    def ratios(self) -> dict[str, float]:
        return {
            name: r
            for name, r in (("train", self.train), ("validation", self.validation), ("test", self.test))
            if r > 0
        }


class BuildConfig(_Strict):
    """A dataset build: inputs, harness card, policies, redaction, dedup, split, workers, output folder.

    Relative input paths and ``out`` are resolved against ``base_dir`` (the config file's folder, or the working
    directory for command-line builds). ``workers`` never changes the output bytes.

    ``install_dir`` is the harness package folder that Pi's system prompt names (its docs paths). ``None`` (the
    default) uses where ``harnessfit harness install`` puts Pi on *this* machine
    (``$HARNESSFIT_HOME/harness/pi/<version>/node_modules/<npm package>``), so training prompts
    equal what Pi sends during ``harnessfit eval`` here — but the bytes then depend on the machine. Fix it (e.g.
    ``/opt/pi``) to build machine-independent data; either way the manifest records the value used and ``verify``
    reuses it. Redaction never rewrites this exact string (a user name in it stays, so the prompt stays Pi's).

    ``harness`` is the target, ``pi@VERSION`` (default: the newest committed card), or ``pi@VERSION+tools`` for the
    card profile with Pi's optional grep/find/ls (card ``pi-<version>+tools``; the manifest records the card and its
    tools, and ``eval agent --harness pi@<version>+tools`` runs Pi with the same tools). Older spellings are read and
    folded into it: ``harness = "pi"`` + ``harness_version = <version>``, and ``harness_profile = "tools"``.

    ``fidelity`` (``convert.policy.FIDELITY_TIERS``) is the lowest tier a kept context may have: ``"content"`` (the
    default) also keeps contexts holding a result rendered from output its agent altered in a documented way (each
    SFT record and decision point then says ``fidelity`` and names its ``alterations``); ``"byte"`` keeps only
    contexts whose every byte is known, and writes exactly what builds wrote before tiers existed (its manifest has
    no ``fidelity`` key, which is how a manifest from then reads: ``verify`` rebuilds it at ``byte``).
    """

    inputs: list[InputSpec]
    harness: str = harness_spec(DEFAULT_PI_VERSION)
    harness_version: str | None = Field(None, exclude=True, description="older spelling of the version in harness")
    harness_profile: str | None = Field(None, description="the card profile of harness (set from it; 'tools')")
    policies: dict[str, Any] = Field(default_factory=dict)
    convert: ConvertConfig = Field(default_factory=ConvertConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    split: SplitConfig = Field(default_factory=SplitConfig)
    install_dir: str | None = None
    fidelity: Literal["byte", "content"] = "content"
    parquet: bool = True
    workers: int = Field(1, ge=1, le=64)
    out: str = "out/dataset"

    @field_validator("harness_profile")
    @classmethod
    def _profile(cls, v: str | None) -> str | None:
        if v is not None and v not in PROFILES:
            raise ValueError(f"unknown harness profile {v!r} (known: {', '.join(PROFILES)})")
        return v

    @field_validator("inputs", mode="before")
    @classmethod
    def _inputs(cls, v: Any) -> Any:
        if isinstance(v, (str, Path)):
            v = [v]
        return [{"path": str(x)} if isinstance(x, (str, Path)) else x for x in v]

    @field_validator("inputs")
    @classmethod
    def _nonempty(cls, v: list[InputSpec]) -> list[InputSpec]:
        if not v:
            raise ValueError("at least one input is required")
        return v

    @model_validator(mode="after")
    def _one_harness(self) -> BuildConfig:
        try:
            name, version = parse_harness(self.harness, default=self.harness_version or DEFAULT_PI_VERSION)
        except UserError as exc:
            raise ValueError(str(exc)) from None
        if self.harness_version is not None and version != self.harness_version:
            raise ValueError(
                f"harness {self.harness!r} and harness_version {self.harness_version!r} disagree: "
                f'give one, as harness = "pi@VERSION"'
            )
        profile = harness_profile(self.harness)
        if self.harness_profile is not None and profile not in (None, self.harness_profile):
            raise ValueError(
                f"harness {self.harness!r} and harness_profile {self.harness_profile!r} disagree: "
                f'give one, as harness = "pi@VERSION+PROFILE"'
            )
        profile = profile or self.harness_profile
        self.harness, self.harness_version, self.harness_profile = harness_spec(version, name, profile), None, profile
        return self

    @property
    def card_name_version(self) -> tuple[str, str]:
        """``(name, version)`` of ``harness`` (its profile is ``harness_profile``)."""
        return parse_harness(self.harness)

    def resolved_inputs(self, base_dir: Path) -> list[InputSpec]:
        out = []
        for i in self.inputs:
            try:
                path = (base_dir / i.path).resolve()
            except (OSError, RuntimeError):  # RuntimeError: a symlink loop, before Python 3.13
                raise UserError(f"input is a symbolic link that loops: {base_dir / i.path}") from None
            out.append(InputSpec(path=str(path), formats=i.formats))
        return out

    def semantic_dict(self) -> dict[str, Any]:
        """What the output depends on (``workers`` and ``out`` excluded; no ``harness_profile`` key when none is
        chosen, and no ``fidelity`` key at ``byte``, so configs from before profiles and tiers hash as they did):
        hashed into the manifest."""
        data = self.model_dump(mode="json", exclude={"workers", "out"})
        if data.get("harness_profile") is None:
            data.pop("harness_profile", None)
        if data.get("fidelity") == "byte":  # as manifests from before tiers (which were byte) hash
            data.pop("fidelity")
        return data


def _errors_line(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "config"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def load_build_config(path: Path, **overrides: Any) -> tuple[BuildConfig, Path]:
    """Read a TOML or YAML build config; returns the config and the folder relative paths resolve against."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"build config not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        elif path.suffix.lower() in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        else:
            raise UserError(f"build config must be .toml, .yaml or .yml: {path}")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise UserError(f"cannot parse {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a table/mapping at the top level")
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return BuildConfig.model_validate(data), path.parent.resolve()
    except ValidationError as exc:
        raise UserError(f"{path}: {_errors_line(exc)}") from None


def config_from_values(**values: Any) -> BuildConfig:
    """Command-line builds: same validation, same one-line errors."""
    try:
        return BuildConfig.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise UserError(_errors_line(exc)) from None

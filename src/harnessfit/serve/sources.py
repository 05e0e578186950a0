"""Where the served model, its LoRA adapter and its tokenizer (with the TRAINING chat template) come from.

Why this matters: a model tuned on one rendering and served with another sees prompts it never trained on. The
template therefore comes, in order, from: ``--tokenizer DIR``; the adapter's training output (``ADAPTER/tokenizer``,
the adapter folder itself, or ``ADAPTER/../tokenizer``); the model folder's ``tokenizer/`` (an audit or merged
output); and only then from the model itself. Each is loaded through ``harnessfit.models.load_tokenizer(...,
template="auto")`` — the same choice audit and training make, so a saved training template is kept as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from harnessfit.errors import UserError
from harnessfit.models import resolve_model, stop_token_ids

__all__ = ["ServeSource", "resolve_source", "collect_stop_ids", "recorded_stop_ids"]

_TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json")


def _has_tokenizer(folder: Path) -> bool:
    return folder.is_dir() and any((folder / f).exists() for f in _TOKENIZER_FILES)


@dataclass(frozen=True)
class ServeSource:
    """Resolved inputs of one server: model spec (as given and resolved), adapter folder, tokenizer folder.

    ``tokenizer_dir`` None means "the model's own tokenizer through harnessfit.models.load_tokenizer(model)".
    """

    model: str
    model_path: str
    adapter: Path | None
    tokenizer_dir: Path | None

    @property
    def model_is_local(self) -> bool:
        return Path(self.model_path).is_dir()


def _tokenizer_near(folder: Path) -> Path | None:
    for cand in (folder / "tokenizer", folder, folder.parent / "tokenizer"):
        if _has_tokenizer(cand):
            return cand
    return None


def resolve_source(model: str, *, adapter: Path | None = None, tokenizer: Path | None = None) -> ServeSource:
    """Check the paths and pick the tokenizer folder (see the module docstring). Raises UserError on bad paths."""
    model_path = resolve_model(model)
    if adapter is not None:
        adapter = Path(adapter).expanduser().resolve()
        if not (adapter / "adapter_config.json").is_file():
            raise UserError(f"not a LoRA adapter folder (no adapter_config.json): {adapter}")
    tok_dir: Path | None = None
    if tokenizer is not None:
        tokenizer = Path(tokenizer).expanduser().resolve()
        tok_dir = tokenizer / "tokenizer" if _has_tokenizer(tokenizer / "tokenizer") else tokenizer
        if not _has_tokenizer(tok_dir):
            raise UserError(f"no tokenizer in {tokenizer} (expected tokenizer_config.json or a tokenizer/ folder)")
    elif adapter is not None:
        tok_dir = _tokenizer_near(adapter)
    if tok_dir is None and isinstance(model_path, Path) and _has_tokenizer(model_path / "tokenizer"):
        tok_dir = model_path / "tokenizer"
    return ServeSource(model=model, model_path=str(model_path), adapter=adapter, tokenizer_dir=tok_dir)


def _ids_from(path: Path, keys: tuple[str, ...]) -> list[int]:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, ValueError):
        return []
    out: list[int] = []
    for key in keys:
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, int):
            value = [value]
        out += [int(v) for v in (value or []) if isinstance(v, int)]
    return out


def recorded_stop_ids(source: ServeSource) -> list[int]:
    """End-of-turn ids that training was taught, as recorded beside the served artifacts: the adapter's
    ``harnessfit_adapter.json`` and the audit's ``tokenized/meta.json`` next to the tokenizer folder used."""
    files: list[Path] = []
    if source.adapter is not None:
        files.append(source.adapter / "harnessfit_adapter.json")
    if source.tokenizer_dir is not None:
        files += [
            source.tokenizer_dir / "harnessfit_adapter.json",
            source.tokenizer_dir.parent / "tokenized" / "meta.json",
            source.tokenizer_dir / "tokenized" / "meta.json",
        ]
    ids: list[int] = []
    for path in files:
        if path.is_file():
            ids += _ids_from(path, ("stop_token_ids", "end_of_turn_ids"))
    return ids


def collect_stop_ids(tokenizer, source: ServeSource) -> list[int]:
    """Every id that ends a reply: ``harnessfit.models.stop_token_ids`` (the model's generation_config.json eos list,
    the tokenizer's eos, end-of-turn tokens in the vocabulary) plus the ids the audit/adapter recorded, so every token
    the masks taught as end-of-turn also stops generation. Order kept, unique."""
    out = stop_token_ids(tokenizer, model_path=source.model_path, extra=recorded_stop_ids(source))
    if not out:
        raise UserError(f"no stop token known for {source.model_path}: add eos_token_id to its generation_config.json")
    return out

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

from harnessfit.errors import UserError

__all__ = ["ServeSource", "resolve_source", "collect_stop_ids"]

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
    from harnessfit.models import resolve_model

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


def collect_stop_ids(tokenizer, model_path: str, extra: list[int] | None = None) -> list[int]:
    """Every id that ends a reply: all ``eos_token_id`` entries of the model's generation_config.json (some models
    list several), the tokenizer's eos, ``<|im_end|>`` when the vocabulary has it, and ``extra``. Order kept, unique."""
    from transformers import GenerationConfig

    from harnessfit.models import stop_token_ids

    ids: list[int] = list(extra or [])
    try:
        eos = GenerationConfig.from_pretrained(model_path).eos_token_id
        ids += [eos] if isinstance(eos, int) else list(eos or [])
    except (OSError, ValueError):
        pass
    ids += stop_token_ids(tokenizer)
    im_end = tokenizer.get_vocab().get("<|im_end|>")
    if im_end is not None:
        ids.append(im_end)
    out: list[int] = []
    for i in ids:
        if int(i) not in out:
            out.append(int(i))
    if not out:
        raise UserError(f"no stop token known for {model_path}: add eos_token_id to its generation_config.json")
    return out

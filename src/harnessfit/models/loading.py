"""Loading tokenizers and models from one spec: the embedded alias, a local folder, or a Hugging Face id.

Every stage (audit, train, serve) loads through here so that all of them see the same training chat template and
the same stop tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessfit.core import jsonio
from harnessfit.errors import UserError
from harnessfit.models.embedded import EMBEDDED_ALIASES, ensure_embedded, is_embedded
from harnessfit.models.templates import CHATML_TOOLS, TEMPLATE_KEY, chatml_tools_template, choose_template

__all__ = [
    "END_OF_TURN_TOKENS",
    "resolve_model",
    "check_hub_model",
    "model_revision",
    "load_tokenizer",
    "load_model",
    "stop_token_ids",
    "native_context_length",
    "load_error",
    "adapter_base",
    "apply_adapter",
]


def load_error(what: str, spec: Any, exc: BaseException) -> UserError:
    """A ``from_pretrained`` failure as one line: what could not be loaded from where, and the library's first line."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    return UserError(f"cannot load {what} from {spec}: {first[:300]}")


def _looks_local(spec: str) -> bool:
    return spec.startswith((".", "/", "~")) or Path(spec).expanduser().exists() or spec.count("/") > 1


def _did_you_mean(spec: str) -> str:
    import difflib

    close = difflib.get_close_matches(spec.lower(), sorted(EMBEDDED_ALIASES), n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{hint}embedded models: {', '.join(sorted(EMBEDDED_ALIASES))}"


def check_hub_model(spec: str) -> None:
    """Fail in one line, within seconds, for a Hugging Face id that cannot be loaded, instead of the library's
    retries (about 51 s offline) ending in a traceback.

    A model in the local Hugging Face cache passes. Otherwise: with ``HF_HUB_OFFLINE`` set it cannot be fetched; else
    one metadata request (5 s timeout) tells a missing repository, a gated one (``HF_TOKEN``) and an unreachable Hub
    apart. Every message names the embedded models and, when the name is close to one of them, that one."""
    import os

    import huggingface_hub as hub

    if isinstance(hub.try_to_load_from_cache(spec, "config.json"), str):
        return
    fixes = (
        "pass a local model folder, download it on a connected machine (`hf download ID --local-dir DIR`) and "
        "pass DIR, or keep it in the Hugging Face cache"
    )
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise UserError(
            f"model {spec!r} is not a local folder and not in the Hugging Face cache, and HF_HUB_OFFLINE "
            f"is set: {fixes}; {_did_you_mean(spec)}"
        )
    try:
        hub.model_info(spec, timeout=5)
    except hub.errors.GatedRepoError:
        raise UserError(
            f"model {spec!r} is gated on the Hugging Face Hub: accept its licence on the model page and "
            "set HF_TOKEN to a token of that account"
        ) from None
    except hub.errors.RepositoryNotFoundError:
        raise UserError(
            f"no model {spec!r} on the Hugging Face Hub (or it is private: set HF_TOKEN); {_did_you_mean(spec)}"
        ) from None
    except hub.errors.HfHubHTTPError:
        return  # the Hub answered with something else (rate limit, 5xx): let the loader try and report
    except Exception as exc:  # noqa: BLE001 - a network failure of any kind is one line for the user
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        raise UserError(
            f"model {spec!r} is not a local folder and the Hugging Face Hub cannot be reached ({first}): "
            f"{fixes}; {_did_you_mean(spec)}"
        ) from None


def resolve_model(spec: str, *, check_hub: bool = True) -> Path | str:
    """Embedded alias → cached converted folder; local folder → Path; anything else → a Hugging Face id (str), checked
    with ``check_hub_model`` first unless ``check_hub`` is False."""
    spec = str(spec).strip()
    if not spec:
        raise UserError("no model given: pass an alias (smollm2-135m), a local folder, or a Hugging Face id")
    if is_embedded(spec):
        return ensure_embedded()
    path = Path(spec).expanduser()
    if _looks_local(spec):
        if not path.exists():
            raise UserError(f"model folder not found: {spec}")
        if not path.is_dir():
            raise UserError(f"model path is not a folder: {spec}")
        return path.resolve()
    if check_hub:
        check_hub_model(spec)
    return spec


def model_revision(resolved: Path | str) -> str | None:
    """What pins a resolved model's content, as the audit records it (``meta.json`` ``revision``): the embedded
    model's GGUF sha256 from its conversion marker; None for other folders and Hugging Face ids."""
    if isinstance(resolved, Path) or Path(str(resolved)).is_dir():
        marker = Path(resolved) / "harnessfit-model.json"
        if marker.is_file():
            return jsonio.loads(marker.read_bytes()).get("source_sha256")
    return None


def load_tokenizer(spec: str, *, template: str = "auto"):
    """A tokenizer whose ``chat_template`` is the training template; the choice is in ``init_kwargs``.

    ``tokenizer.init_kwargs["harnessfit_template"]`` names the template (``native``, ``trl:<name>``,
    ``chatml-tools`` or ``file:<name>``); ``harnessfit.models.template_info(tok)`` adds its sha256 and text.
    A tokenizer saved by ``save_pretrained`` keeps the template, so loading that folder again with
    ``template="native"`` gives the same one back.
    """
    from transformers import AutoTokenizer

    where = resolve_model(spec)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(where))
    except Exception as exc:  # noqa: BLE001 - any loader failure is one line for the user
        raise load_error("a tokenizer", spec, exc) from None
    saved_name = tokenizer.init_kwargs.get(TEMPLATE_KEY)
    name, text = choose_template(tokenizer, template, model=str(spec))
    if text == chatml_tools_template():
        name = CHATML_TOOLS
    elif name == "native" and saved_name:  # a folder saved by us: keep the name it was saved under
        name = saved_name
    tokenizer.chat_template = text
    tokenizer.init_kwargs[TEMPLATE_KEY] = name
    if name == CHATML_TOOLS:
        _add_chatml_response_parser(tokenizer)
    return tokenizer


def _add_chatml_response_parser(tokenizer) -> None:
    """Let ``tokenizer.parse_response`` (and ``transformers serve``) turn ``<tool_call>`` text into tool calls."""
    import trl.chat_template_utils as ctu

    if getattr(ctu, "_SUPPORTS_RESPONSE_TEMPLATE", False):
        tokenizer.response_template = ctu.qwen3_template
    else:  # pragma: no cover - older transformers
        tokenizer.response_schema = ctu.qwen3_schema


def load_model(
    spec: str,
    *,
    dtype: Any = None,
    quantization: str = "none",
    device: str = "cpu",
    attn_implementation: str | None = None,
):
    """A causal LM. ``dtype`` None → float32 on CPU, bfloat16 on CUDA. ``quantization="nf4"`` → 4-bit NF4 with
    double quantisation (bitsandbytes), for QLoRA, placed on ``device`` when that is a CUDA device.
    ``attn_implementation`` is passed to transformers when given (sdpa, flex_attention, ...)."""
    import torch
    from transformers import AutoModelForCausalLM

    where = resolve_model(spec)
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    if dtype is None:
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    kwargs: dict[str, Any] = {"dtype": dtype}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    if quantization == "nf4":
        try:
            import bitsandbytes  # noqa: F401
        except ImportError as exc:
            raise UserError("quantization nf4 needs bitsandbytes: pip install bitsandbytes==0.50.2") from exc
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=dtype,
        )
        if device.startswith("cuda"):
            kwargs["device_map"] = {"": device}
    elif quantization != "none":
        raise UserError(f"unknown quantization {quantization!r}: use none or nf4")
    try:
        model = AutoModelForCausalLM.from_pretrained(str(where), **kwargs)
    except Exception as exc:  # noqa: BLE001 - any loader failure is one line for the user
        raise load_error("a model", spec, exc) from None
    if quantization == "none":
        model = model.to(device)
    return model


def _as_list(value: Any) -> list[int]:
    if value is None:
        return []
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


# Tokens that end an assistant turn in the common chat-template families; each one present in the vocabulary is a
# stop id (ChatML, Llama 3, Gemma, Phi, gpt-oss).
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|return|>")


def stop_token_ids(spec_or_tokenizer: Any, *, model_path: str | Path | None = None, extra: Any = None) -> list[int]:
    """Every id that ends an assistant turn — the ONE list the audit's masks treat as end-of-turn (so training teaches
    the model to emit them) and the server stops on.

    In order, unique: ``eos_token_id`` of ``generation_config.json`` (one or many; read from ``model_path``, else
    from the tokenizer's own folder), the tokenizer's eos, every ``END_OF_TURN_TOKENS`` entry in the vocabulary,
    then ``extra`` (ids an audit or adapter recorded). ``spec_or_tokenizer`` is a model spec or a loaded tokenizer.
    """
    if isinstance(spec_or_tokenizer, (str, Path)):
        tokenizer = load_tokenizer(str(spec_or_tokenizer), template="auto")
        where = model_path or resolve_model(str(spec_or_tokenizer))
    else:
        tokenizer = spec_or_tokenizer
        where = model_path or getattr(tokenizer, "name_or_path", None)
    ids: list[int] = []
    if where:
        try:
            from transformers import GenerationConfig

            ids += _as_list(GenerationConfig.from_pretrained(str(where)).eos_token_id)
        except (OSError, ValueError):
            pass
    ids += _as_list(tokenizer.eos_token_id)
    vocab = tokenizer.get_vocab()
    ids += [vocab[t] for t in END_OF_TURN_TOKENS if t in vocab]
    ids += _as_list(extra)
    out: list[int] = []
    for i in ids:
        if i not in out:
            out.append(i)
    return out


def native_context_length(spec: str) -> int | None:
    """The model's trained context (``max_position_embeddings`` or similar), or None when unknown."""
    from transformers import AutoConfig

    where = resolve_model(spec)
    try:
        config = AutoConfig.from_pretrained(str(where))
    except (OSError, ValueError):
        return None
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    text_config = getattr(config, "text_config", None)
    value = getattr(text_config, "max_position_embeddings", None) if text_config is not None else None
    return value if isinstance(value, int) else None


def adapter_base(adapter_dir: Path | str) -> str | None:
    """The base model a LoRA adapter pins: ``harnessfit_adapter.json``'s ``base_model`` (the spec it was trained
    with), else PEFT's ``base_model_name_or_path``."""
    import orjson

    for name, key in (("harnessfit_adapter.json", "base_model"), ("adapter_config.json", "base_model_name_or_path")):
        try:
            value = orjson.loads((Path(adapter_dir) / name).read_bytes()).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if value:
            return str(value)
    return None


def apply_adapter(model: Any, adapter_dir: Path | str, *, base_hint: str | None = None):
    """``PeftModel.from_pretrained(model, adapter_dir)`` with any failure as one line that names the base the adapter
    pins (a shape mismatch almost always means the adapter was trained on another base)."""
    from peft import PeftModel

    try:
        return PeftModel.from_pretrained(model, str(adapter_dir))
    except Exception as exc:  # noqa: BLE001 - one line for the user
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        pinned = adapter_base(adapter_dir)
        base = base_hint or getattr(getattr(model, "config", None), "_name_or_path", None) or "this base"
        raise UserError(
            f"cannot apply adapter {adapter_dir} to base model {base}: the adapter pins base "
            f"{pinned or '(not recorded)'}; serve or merge it with that base ({first[:200]})"
        ) from None

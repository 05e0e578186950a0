"""Choosing the TRAINING chat template: the one template that audit, training and serving all use.

A template is fit for training an agent when it renders the tool schemas, renders assistant ``tool_calls`` with the
arguments as JSON objects, renders tool results, and marks the assistant's output with ``{% generation %}``. Many
shipped templates fail one of these (SmolLM2's drops tools and tool calls), so ``choose_template`` falls back, in
order, to: the model's own template; TRL's training variant of it; TRL's ChatML/Hermes tool template (Qwen2.5
training variant) when the tokenizer has the ChatML tokens. Template texts come from the TRL library, not copies.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError

__all__ = [
    "TemplateInfo",
    "TEMPLATE_KEY",
    "CHATML_TOOLS",
    "choose_template",
    "template_info",
    "renders_tools",
    "has_generation_markers",
]

TEMPLATE_KEY = "harnessfit_template"
CHATML_TOOLS = "chatml-tools"
_SENTINEL_TOOL = "harnessfit_probe_tool_7c1e"


@dataclass(frozen=True)
class TemplateInfo:
    """Which template a tokenizer carries, by name and by content hash (the hash is what proves sameness)."""

    name: str
    sha256: str
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "text": self.text}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def has_generation_markers(text: str | None) -> bool:
    """True when the template marks assistant output with ``{% generation %}`` (needed by TRL's assistant loss)."""
    from trl.chat_template_utils import has_generation_markers as _trl_has

    return bool(text) and _trl_has(text)


def renders_tools(tokenizer, template: str | None = None) -> bool:
    """True when the template renders the tool schemas, assistant tool calls (arguments as objects) and results."""
    from trl.chat_template_utils import supports_tool_calling

    text = template if template is not None else tokenizer.chat_template
    if not text:
        return False
    saved = tokenizer.chat_template
    tokenizer.chat_template = text
    try:
        if not supports_tool_calling(tokenizer):
            return False
        tools = [
            {
                "type": "function",
                "function": {
                    "name": _SENTINEL_TOOL,
                    "description": "probe",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ]
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        try:
            rendered = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
        except Exception:  # noqa: BLE001 - any template failure means "cannot render tools"
            return False
        return _SENTINEL_TOOL in str(rendered)
    finally:
        tokenizer.chat_template = saved


def _trl_template_name(text: str) -> str | None:
    """Name of a TRL-shipped template with exactly this text (e.g. ``qwen2_5_training``), if any."""
    import trl.chat_template_utils as ctu

    for attr in sorted(dir(ctu)):
        if attr.endswith("_chat_template") and getattr(ctu, attr) == text:
            return attr.removesuffix("_chat_template")
    return None


def _has_chatml_tokens(tokenizer) -> bool:
    vocab = tokenizer.get_vocab()
    return "<|im_start|>" in vocab and "<|im_end|>" in vocab


def chatml_tools_template() -> str:
    from trl.chat_template_utils import qwen2_5_training_chat_template

    return qwen2_5_training_chat_template


def choose_template(tokenizer, template: str = "auto", *, model: str = "") -> tuple[str, str]:
    """Return ``(name, text)`` of the training template for ``tokenizer``.

    ``template``: ``auto`` (see module doc), ``native`` (the model's own, unchanged), ``chatml-tools``, or a path
    to a ``.jinja`` file.
    """
    native = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else None
    label = model or "the model"
    if template == "native":
        if not native:
            raise UserError(f"{label} has no chat template: use --template chatml-tools or a .jinja file")
        return "native", native
    if template == CHATML_TOOLS:
        if not _has_chatml_tokens(tokenizer):
            raise UserError(f"{label} has no <|im_start|>/<|im_end|> tokens, so the ChatML tool template cannot work")
        return CHATML_TOOLS, chatml_tools_template()
    if template != "auto":
        path = Path(template)
        if not path.is_file():
            raise UserError(f"template must be auto, native, {CHATML_TOOLS} or a .jinja file; not found: {template}")
        return f"file:{path.name}", path.read_text(encoding="utf-8")

    if native and has_generation_markers(native) and renders_tools(tokenizer, native):
        return "native", native
    if native:
        from trl.chat_template_utils import get_training_chat_template

        saved = tokenizer.chat_template
        try:
            training = get_training_chat_template(tokenizer)
        except ValueError:
            training = None
        finally:
            tokenizer.chat_template = saved
        if training and renders_tools(tokenizer, training):
            return f"trl:{_trl_template_name(training) or 'training'}", training
    if _has_chatml_tokens(tokenizer):
        return CHATML_TOOLS, chatml_tools_template()
    if not native:
        raise UserError(
            f"{label} has no chat template and no ChatML tokens: pass --template FILE.jinja with a tool-capable template"
        )
    raise UserError(
        f"the chat template of {label} cannot render tools or tool calls and no training variant is known: "
        "pass --template FILE.jinja with a tool-capable template that has {% generation %} markers"
    )


def template_info(tokenizer) -> TemplateInfo:
    """The template a tokenizer from ``load_tokenizer`` carries, with its name and sha256."""
    text = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else ""
    name = tokenizer.init_kwargs.get(TEMPLATE_KEY) or _trl_template_name(text) or "native"
    if text == chatml_tools_template():
        name = CHATML_TOOLS
    return TemplateInfo(name=name, sha256=_sha(text), text=text)

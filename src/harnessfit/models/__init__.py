"""models stage: one way to load tokenizers and models (embedded SmolLM2, local folder, Hugging Face id) and the
training chat template that audit, training and serving all share."""

from harnessfit.models.embedded import EMBEDDED_ALIASES, EMBEDDED_MODEL, embedded_dir, ensure_embedded, gguf_path
from harnessfit.models.loading import (
    adapter_base,
    apply_adapter,
    load_error,
    load_model,
    load_tokenizer,
    model_revision,
    native_context_length,
    resolve_model,
    stop_token_ids,
)
from harnessfit.models.messages import content_text, parse_arguments, to_template_messages
from harnessfit.models.templates import CHATML_TOOLS, TemplateInfo, choose_template, template_info

__all__ = [
    "EMBEDDED_MODEL",
    "EMBEDDED_ALIASES",
    "CHATML_TOOLS",
    "TemplateInfo",
    "resolve_model",
    "load_tokenizer",
    "load_model",
    "load_error",
    "adapter_base",
    "apply_adapter",
    "model_revision",
    "stop_token_ids",
    "native_context_length",
    "choose_template",
    "template_info",
    "embedded_dir",
    "ensure_embedded",
    "gguf_path",
    "content_text",
    "parse_arguments",
    "to_template_messages",
]

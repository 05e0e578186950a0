"""vLLM's token API on the built-in backend: prompt and completion token ids and processed logprobs in a chat response.

Why: a trainer that learns from what an endpoint sampled (TRL's ``async_grpo``, OpenEnv's capture proxy in front of
it, harnessfit's start-up probe ``serve.probe_endpoint``) reads these fields from vLLM; the built-in engine answers
with the same ones so it can stand in for vLLM. The shape followed is the one OpenEnv 0.10.0 documents and grades
(``openenv/core/harness/capture/upstream.py`` and ``validate.py: check_upstream_response``), which is vLLM's:

- the request asks with ``return_token_ids: true`` (vLLM >= 0.10.2) and ``logprobs: true`` with ``top_logprobs``
  set (vLLM fills ``logprobs.content`` only when ``top_logprobs`` is not None; 0 returns only the sampled token's);
- the response carries ``prompt_token_ids`` at its top level, ``choices[0].token_ids`` (every sampled id, the stop
  id included) and ``choices[0].logprobs.content``: one ``{token, logprob, bytes, top_logprobs}`` per sampled id,
  as OpenAI's chat ``logprobs`` object is laid out.

The logprobs are always the processed ones (after temperature and top-p: the distribution each token was drawn
from, what vLLM returns with ``--logprobs-mode processed_logprobs``). ``token`` is written ``token_id:<id>`` — what
vLLM writes with ``--return-tokens-as-token-ids`` — when the request asks for ids (``return_token_ids`` or
``return_tokens_as_token_ids``), and the token's text otherwise. Only non-streaming requests get these fields
(``protocol.ChatRequest`` refuses them with ``stream: true``).
"""

from __future__ import annotations

from typing import Any

from harnessfit.serve.engine import GenerationResult
from harnessfit.serve.protocol import ChatRequest

__all__ = ["token_fields"]


def _entry(tokenizer: Any, token_id: int, logprob: float, as_ids: bool) -> dict[str, Any]:
    text = tokenizer.decode([token_id], skip_special_tokens=False)
    return {
        "token": f"token_id:{token_id}" if as_ids else text,
        "logprob": logprob,
        "bytes": list(text.encode("utf-8")),
    }


def token_fields(
    request: ChatRequest, tokenizer: Any, prompt_ids: list[int], result: GenerationResult
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(fields for the response's top level, fields for its ``choices[0]``) that ``request`` asked for; both empty
    when it asked for neither ids nor logprobs."""
    top: dict[str, Any] = {}
    choice: dict[str, Any] = {}
    if not request.wants_scores() or result.sampled_ids is None or result.logprobs is None:
        return top, choice
    if request.return_token_ids:
        top["prompt_token_ids"] = list(prompt_ids)
        choice["token_ids"] = list(result.sampled_ids)
    if request.logprobs:
        as_ids = bool(request.return_token_ids or request.return_tokens_as_token_ids)
        alternatives = result.top_logprobs or [[] for _ in result.sampled_ids]
        content = []
        for tok, logprob, others in zip(result.sampled_ids, result.logprobs, alternatives, strict=True):
            item = _entry(tokenizer, tok, logprob, as_ids)
            item["top_logprobs"] = [_entry(tokenizer, i, lp, as_ids) for i, lp in others]
            content.append(item)
        choice["logprobs"] = {"content": content}
    return top, choice

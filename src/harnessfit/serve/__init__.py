"""serve stage: an OpenAI-compatible endpoint for a (tuned) model — a built-in CPU backend over transformers with
the training chat template, or a vLLM launcher on GPU — plus the harness's client config for it (Pi's provider
config).

Public surface: ``start_server`` / ``ServerHandle`` (a server subprocess), ``write_harness_config``,
``split_tool_calls`` (the tool-call parser), ``build_vllm_command`` / ``prepare_vllm``.
"""

from harnessfit.serve.launcher import BACKENDS, ServerHandle, choose_backend, start_server, write_harness_config
from harnessfit.serve.toolcalls import ParsedToolCall, ToolCallStream, parse_tool_block, split_tool_calls
from harnessfit.serve.vllm import VllmLaunch, build_vllm_command, prepare_vllm, vllm_available

__all__ = [
    "BACKENDS",
    "ServerHandle",
    "choose_backend",
    "start_server",
    "write_harness_config",
    "ParsedToolCall",
    "ToolCallStream",
    "parse_tool_block",
    "split_tool_calls",
    "VllmLaunch",
    "build_vllm_command",
    "prepare_vllm",
    "vllm_available",
]

"""serve stage: an OpenAI-compatible endpoint for a (tuned) model — a built-in CPU backend over transformers with
the training chat template, or a vLLM launcher on GPU — plus the harness's client config for it (Pi's provider
config).

Public surface: ``start_server`` / ``ServerHandle`` (a server subprocess), ``write_harness_config``,
``build_vllm_command`` / ``prepare_vllm``. The tool-call parser the server uses is ``harnessfit.models.toolcalls``.
"""

from harnessfit.serve.launcher import BACKENDS, ServerHandle, choose_backend, start_server, write_harness_config
from harnessfit.serve.vllm import VllmLaunch, build_vllm_command, prepare_vllm, vllm_available

__all__ = [
    "BACKENDS",
    "ServerHandle",
    "choose_backend",
    "start_server",
    "write_harness_config",
    "VllmLaunch",
    "build_vllm_command",
    "prepare_vllm",
    "vllm_available",
]

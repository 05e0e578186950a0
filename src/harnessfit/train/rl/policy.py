"""The policy being trained, served to Pi from this process with capture on, one API key per episode.

The engine (``serve.engine.Engine``) holds the very model object the update trains (a PEFT LoRA model), so the
next step's episodes are served by the updated weights — on-policy with no copy and no reload. It samples at the
config's temperature when Pi asks for none (Pi sends no temperature; a greedy group would be all the same), with no
top-k and no top-p, so the captured processed logprobs are ``log_softmax(logits / T)`` — what the loss recomputes.

One API key per episode: the episode's ``Endpoint(api_key=<key>)`` is written into that episode's Pi ``models.json``
(``eval.episode_runner``), Pi sends it as ``Authorization: Bearer <key>``, and the capture files the episode's turns
under it (``serve.capture.episode_key``). The capture folder lives outside every sandbox.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.models import load_model, load_tokenizer
from harnessfit.serve.app import create_app
from harnessfit.serve.capture import CaptureStore
from harnessfit.serve.engine import Engine, published_facts
from harnessfit.serve.server import HOST, bind
from harnessfit.serve.sources import collect_stop_ids, resolve_source

__all__ = ["PolicyEngine", "PolicyServer", "Policy", "load_policy"]


class PolicyEngine(Engine):
    """The built-in engine sampling at ``temperature`` when a request names none."""

    temperature: float = 1.0

    def generate(self, prompt_ids: list[int], *, temperature: float | None = None, **kwargs: Any):
        return super().generate(prompt_ids, temperature=temperature or self.temperature, **kwargs)


class PolicyServer:
    """The engine's app (``serve.app.create_app``, capture into ``capture_dir``) on 127.0.0.1 in a thread."""

    def __init__(self, engine: Engine, capture_dir: Path, *, max_queue: int) -> None:
        import uvicorn

        self.engine = engine
        self.store = CaptureStore(capture_dir)
        app = create_app(engine, capture=self.store, max_queue=max_queue)
        self._sock = bind(0)
        self.base = f"http://{HOST}:{self._sock.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True, name="harnessfit-rl-server"
        )

    def __enter__(self) -> PolicyServer:
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise UserError("the policy server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()
        deadline = time.monotonic() + 60  # a generation whose client left stops at its next token: wait for it
        while self.engine.health()["generating_seconds"] is not None and time.monotonic() < deadline:
            time.sleep(0.1)


@dataclass
class Policy:
    """The trainable model (PEFT), its tokenizer with the training template, its stop ids, the serving engine."""

    model: Any
    tokenizer: Any
    stop_ids: list[int]
    engine: PolicyEngine
    adapter_source: str | None


def load_policy(cfg: Any, resume_adapter: Path | None = None) -> Policy:
    """The base model with a trainable LoRA: ``resume_adapter`` (a run's saved state), else ``cfg.sft_adapter``,
    else a fresh one from the ``lora_*`` fields; the tokenizer is the SFT adapter's (its training template)."""
    from peft import LoraConfig, PeftModel, get_peft_model
    from trl.trainer.utils import disable_dropout_in_model

    sft = Path(cfg.sft_adapter) if cfg.sft_adapter else None
    source = resolve_source(cfg.model, adapter=sft)
    tok = load_tokenizer(str(source.tokenizer_dir or cfg.model), template="auto")
    net = load_model(cfg.model)
    start = resume_adapter or sft
    if start is not None:
        try:
            model = PeftModel.from_pretrained(net, str(start), is_trainable=True)
        except Exception as exc:  # noqa: BLE001 - one line for the user
            first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
            raise UserError(f"cannot load the adapter {start} on {cfg.model}: {first[:200]}") from None
    else:
        model = get_peft_model(
            net,
            LoraConfig(
                r=cfg.lora_r,
                lora_alpha=cfg.lora_alpha,
                lora_dropout=cfg.lora_dropout,
                target_modules=cfg.lora_target_modules,
                task_type="CAUSAL_LM",
            ),
        )
    disable_dropout_in_model(model)  # the captured logprobs come from the model in eval mode
    model.eval()
    stop_ids = collect_stop_ids(tok, source)
    engine = PolicyEngine(model, tok, stop_ids=stop_ids, max_tokens=cfg.max_completion_length or 256, model_id="policy")
    engine.temperature = float(cfg.temperature)
    engine.published = published_facts(cfg.model, source.adapter)
    return Policy(model, tok, stop_ids, engine, str(start) if start else None)

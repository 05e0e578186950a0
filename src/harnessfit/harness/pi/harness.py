"""``PiHarness``: the ``Harness`` (``harness/base.py``) every stage reaches Pi through, registered as ``pi``.

Each method hands over to the Pi module that does the work: ``cli`` (install, config, command), ``capture`` (the
card), ``arguments`` (Pi's argument checks), ``episode`` (an eval episode's start and transcript), ``export`` (Pi's
HTML export of a session) and ``texts`` (the catalogue of Pi-authored texts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnessfit.harness.base import EpisodeSetup, Harness, Launch, Transcript, register_harness
from harnessfit.harness.pi import arguments, cli, episode, session, texts
from harnessfit.harness.pi.export import export_producer
from harnessfit.harness.versions import DEFAULT_PI_VERSION, PROFILES

if TYPE_CHECKING:
    from harnessfit.harness.card import HarnessCard, Violation

__all__ = ["PiHarness", "REFUSAL_REASONS"]

REFUSAL_REASONS = {
    "validation_failed": "pi_validation_failed",
    "tool_not_found": "unknown_tool",
    "edit_empty": "pi_edit_input_invalid",
}
"""The card's refusal key -> the reason counted in ``invalid_by_reason``."""


@register_harness("pi")
class PiHarness(Harness):
    """The real Pi CLI."""

    title = "Pi"
    default_version = DEFAULT_PI_VERSION
    profiles = PROFILES

    def install(self, version: str, **options: Any) -> Path:
        return cli.install_pi(version, **options)

    def binary(self, version: str) -> Path:
        return cli.pi_binary(version)

    def capture_card(
        self, version: str, *, profile: str | None = None, progress: Callable[[str], None] | None = None
    ) -> HarnessCard:
        # heavy: capture drives the scripted endpoint (fastapi/uvicorn); only a card capture needs it
        from harnessfit.harness.pi.capture import capture_pi

        return capture_pi(version, profile=profile, progress=progress)

    def validate_call(
        self, card: HarnessCard, name: str, arguments_: Any, active_tools: Sequence[str]
    ) -> list[Violation]:
        return arguments.validate_call(card, name, arguments_, active_tools)

    def repair_arguments(
        self, card: HarnessCard, name: str, arguments_: dict[str, Any]
    ) -> tuple[dict[str, Any], list[Violation], list[str]]:
        return arguments.repair_arguments(card, name, arguments_)

    @property
    def texts(self) -> Any:
        return texts

    def launch(self, version: str, setup: EpisodeSetup) -> Launch:
        return episode.launch(version, setup)

    def started(self, stdout_file: Path) -> str | None:
        return episode.started(stdout_file)

    def session_file(self, session_dir: Path) -> Path | None:
        return episode.session_file(session_dir)

    def transcript(self, stdout_file: Path, session_file: Path | None, *, killed: bool) -> Transcript:
        return episode.transcript(stdout_file, session_file, killed=killed)

    def sent_arguments(self, part: dict[str, Any]) -> Any:
        return session.sent_arguments(part)  # Pi 1.x keeps what it could not parse in argumentsError

    def system_text(self, message: dict[str, Any]) -> str:
        return session.system_text(message)  # Pi 1.x keeps the prompt in the message's sections

    def refusal(self, card: HarnessCard | None, result_text: str) -> str | None:
        refusal = card.refused(result_text) if card is not None else None
        return None if refusal is None else REFUSAL_REASONS.get(refusal, f"pi_{refusal}")

    def session_export(self, session: Path, version: str) -> tuple[str, Callable[[Path], None]] | None:
        return ".pi.html", export_producer(session, version)

    def write_client_config(
        self,
        folder: Path,
        base_url: str,
        model_id: str,
        *,
        context_window: int = 32768,
        max_tokens: int = 4096,
        eval_settings: bool = True,
        reasoning: bool = False,
    ) -> None:
        cli.write_pi_agent_config(
            folder,
            base_url,
            model_id,
            context_window=context_window,
            max_tokens=max_tokens,
            eval_settings=eval_settings,
            reasoning=reasoning,
        )

    def client_config_note(self, folder: Path, model_id: str, version: str) -> str:
        flags = " ".join(cli.run_flags(version))
        return (
            f"Pi config written to {folder} (use: PI_CODING_AGENT_DIR={folder} PI_OFFLINE=1 "
            f"{cli.pi_binary(version)} {flags} --model local/{model_id})"
        )

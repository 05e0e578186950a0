"""The ``Harness`` interface: what an agent CLI provides to every stage, and the registry that names them.

A harness is the agent program a model is trained for and evaluated in (Pi is the one implementation:
``harness/pi/``). Every stage outside ``harness`` reaches it through ``get_harness(spec)`` — ``spec`` is the
``--harness`` value, ``name@VERSION[+PROFILE]`` (``harness.versions``) — never by importing its modules. What one
provides (modelled on inspect_ai's ``SandboxEnvironment`` + ``@sandboxenv``: an abstract class, registered by name
with a decorator):

- **install** (``install``, ``binary``) and **capture its card** (``capture_card``; ``card`` loads a committed one);
- **render a request** (``render_request``: the system prompt and the tools the model is sent) and judge a call as
  the harness would (``validate_call`` / ``repair_arguments``: the part of ``HarnessCard`` each harness replaces);
- **run an episode in the sandbox**: ``launch`` gives the command line, environment and read-only folders that start
  the agent against an endpoint (the eval runner puts them in the sandbox and enforces the caps); ``started`` says
  whether it started, ``TURN_CAP_MARKER`` on its stderr that the turn cap stopped it;
- **read and write its session files**: ``session_file`` (which file of the session folder is the episode's),
  ``transcript`` (the episode's messages in the wire message model — ``role`` user/assistant/toolResult, content
  parts ``text``/``toolCall`` — read from what the runner captured, the session file only as a fallback),
  ``sent_arguments`` (a call's arguments as the model sent them), ``system_text``, ``refusal`` (a result that is the harness's refusal
  to run the call), ``session_export`` (the harness's own rendering of a session, for the report) and
  ``write_client_config`` (the config that points the harness at a served model: ``serve --pi-config``);
- **its harness-authored text catalogue** (``texts``: every text the harness writes into a tool result, and
  re-rendering one in another version's words), or None when it keeps none.

``register_harness("name")`` adds a class to ``HARNESSES``; the built-in ones are imported on first lookup.
"""

from __future__ import annotations

import functools
import importlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from harnessfit.errors import UserError

if TYPE_CHECKING:
    from harnessfit.harness.card import HarnessCard, Violation

__all__ = [
    "Harness",
    "EpisodeSetup",
    "Launch",
    "Transcript",
    "HARNESSES",
    "DEFAULT_HARNESS",
    "TURN_CAP_MARKER",
    "register_harness",
    "unregister_harness",
    "harness_class",
    "harness_names",
    "get_harness",
]

DEFAULT_HARNESS = "pi"
TURN_CAP_MARKER = "harnessfit: turn cap reached"
"""What a harness prints on stderr when the turn cap stopped its agent (the runner records ``turn_cap_hit``)."""

_BUILT_IN = {"pi": "harnessfit.harness.pi.harness"}


@dataclass(frozen=True)
class EpisodeSetup:
    """What the eval runner hands ``Harness.launch`` for one episode. Paths named ``*_inside`` are as the agent
    sees them (inside the sandbox; the host path itself when unsandboxed)."""

    base_url: str  # the OpenAI-compatible endpoint (reached through the sandbox's forwarder at the same URL)
    model_id: str
    prompt: str  # the task's prompt: the one user message
    home: Path  # host folder seeded as the agent's HOME (write the harness's config here)
    home_inside: str
    runner: Path  # host folder of the runner's own files, read-only inside (an extension, a script)
    runner_inside: str
    session_dir: Path  # where the harness writes its session files (captured; the same path inside)
    tools: Sequence[str] | None  # the tools to offer (None: the harness's default set)
    max_turns: int  # model turns before the agent is stopped (printing TURN_CAP_MARKER on stderr)
    context_window: int | None = None  # the served model's window, when known
    api_key: str | None = None  # the API key to send (None: a placeholder; `serve --capture-dir` keys episodes by it)


@dataclass(frozen=True)
class Launch:
    """How to start one episode: ``cmd`` and ``env`` as run inside the sandbox, ``read_only`` host folders the
    command needs there (the harness's install) and ``skip_lines``: stdout line prefixes not stored (events that
    repeat a whole partial message; counted against the output cap all the same)."""

    cmd: list[str]
    env: dict[str, str]
    read_only: list[Path]
    skip_lines: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Transcript:
    """An episode's messages in the wire message model, where they were read from (``source``), and where the
    session file disagrees with the captured output (``mismatch``), or None."""

    messages: list[dict[str, Any]]
    source: str = "event stream"
    mismatch: str | None = None


class Harness(ABC):
    """One agent CLI (see the module docstring). Subclasses set ``title`` and ``default_version`` and implement the
    abstract methods; the others have plain defaults (a harness without card capture, session export or client
    config says so in one line)."""

    name: ClassVar[str] = ""  # set by ``register_harness``
    title: ClassVar[str] = ""  # how text names it ("Pi")
    default_version: ClassVar[str] = ""
    profiles: ClassVar[dict[str, tuple[str, ...]]] = {}  # card profiles: the tools each runs with

    # -- install and card ------------------------------------------------------------------------------------
    @abstractmethod
    def install(self, version: str, **options: Any) -> Path:
        """Install ``version``; return the command that runs it."""

    @abstractmethod
    def binary(self, version: str) -> Path:
        """The installed CLI of ``version``; a UserError that says how to install it when it is missing."""

    def capture_card(
        self, version: str, *, profile: str | None = None, progress: Callable[[str], None] | None = None
    ) -> HarnessCard:
        raise UserError(f"harness {self.name} has no card capture")

    def card(self, version: str, profile: str | None = None) -> HarnessCard | None:
        """The committed card of ``version`` (and ``profile``), or None when there is none."""
        # import order: harness.card imports this module at its top; base stays light (no jsonschema)
        from harnessfit.harness.card import card_path, load_card

        if not card_path(self.name, version, profile).is_file():
            return None
        return load_card(self.name, version, profile)

    # -- requests and calls ----------------------------------------------------------------------------------
    def render_request(
        self,
        card: HarnessCard,
        cwd: str,
        date: str,
        *,
        context_files: Sequence[tuple[str, str]] = (),
        install_dir: str | None = None,
    ) -> dict[str, Any]:
        """What the model is sent before the conversation: ``system`` (the prompt) and ``tools`` (the active ones)."""
        active = set(card.default_tools)
        return {
            "system": card.render_system_prompt(cwd, date, context_files, install_dir=install_dir),
            "tools": [t for t in card.tools if t["function"]["name"] in active],
        }

    def validate_call(
        self, card: HarnessCard, name: str, arguments: Any, active_tools: Sequence[str]
    ) -> list[Violation]:
        """The call checked as the harness checks it (``HarnessCard.validate_call``). This default is plain JSON
        Schema: text that is not one JSON object, or an object the schema rejects, is an error."""
        # import order: harness.card imports this module at its top
        from harnessfit.harness.card import ViolationCode, schema_violations, violation

        if name not in active_tools or card.schema(name) is None:
            return [violation(ViolationCode.unknown_tool, f"tool {name!r} is not active")]
        if isinstance(arguments, (str, bytes)):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return [violation(ViolationCode.invalid_json, "arguments are not JSON")]
        if not isinstance(arguments, dict):
            return [violation(ViolationCode.arguments_not_object, "arguments are not an object")]
        return schema_violations(card, name, arguments)

    def repair_arguments(
        self, card: HarnessCard, name: str, arguments: dict[str, Any]
    ) -> tuple[dict[str, Any], list[Violation], list[str]]:
        """(what the harness runs, its repair notes, its coercion notes); by default the arguments as they are."""
        return dict(arguments), [], []

    @property
    def texts(self) -> Any:
        """The harness-authored text catalogue (``card_wordings``, ``in_target_words``, ``text_violations``), or
        None."""
        return None

    # -- an episode ------------------------------------------------------------------------------------------
    @abstractmethod
    def launch(self, version: str, setup: EpisodeSetup) -> Launch:
        """Write what the episode needs under ``setup.home`` / ``setup.runner`` and return how to start it."""

    def started(self, stdout_file: Path) -> str | None:
        """Why the captured output shows the harness never started, or None."""
        return None

    def session_file(self, session_dir: Path) -> Path | None:
        """The episode's session file in ``session_dir`` (a regular file, never a link), or None."""
        return None

    @abstractmethod
    def transcript(self, stdout_file: Path, session_file: Path | None, *, killed: bool) -> Transcript:
        """The episode's messages from what the runner captured (``stdout_file``) and the session file."""

    def sent_arguments(self, part: dict[str, Any]) -> Any:
        """A ``toolCall`` part's arguments as the model sent them."""
        return part.get("arguments")

    def system_text(self, message: dict[str, Any]) -> str:
        """The text of a ``system`` message the session keeps (the prompt the model was sent)."""
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(
            str(p.get("text") or "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"
        )

    def refusal(self, card: HarnessCard | None, result_text: str) -> str | None:
        """The reason counted in ``invalid_by_reason`` when an error result is the harness refusing to run the call
        (not a call that ran and failed), else None."""
        return None

    def session_export(self, session: Path, version: str) -> tuple[str, Callable[[Path], None]] | None:
        """(file suffix, a function writing the harness's own HTML rendering of ``session``), or None."""
        return None

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
        raise UserError(f"harness {self.name} writes no client config")

    def client_config_note(self, folder: Path, model_id: str, version: str) -> str:
        """One line: how to run ``version`` against the config written into ``folder``."""
        return f"{self.title} config written to {folder}"


HARNESSES: dict[str, type[Harness]] = {}
_H = TypeVar("_H", bound=type[Harness])


def register_harness(name: str) -> Callable[[_H], _H]:
    """Class decorator: register a ``Harness`` subclass under ``name`` (the part of a spec before ``@``)."""

    def add(cls: _H) -> _H:
        if not (isinstance(cls, type) and issubclass(cls, Harness)):
            raise TypeError(f"@register_harness({name!r}) decorates a Harness subclass, not {cls!r}")
        cls.name = name
        HARNESSES[name] = cls
        _instance.cache_clear()
        return cls

    return add


def unregister_harness(name: str) -> None:
    """Remove ``name`` from the registry (a harness a test or plugin registered for a while)."""
    HARNESSES.pop(name, None)
    _instance.cache_clear()


def harness_names() -> list[str]:
    """Every registered harness name (the built-in ones loaded)."""
    for name in _BUILT_IN:
        harness_class(name)
    return sorted(HARNESSES)


def harness_class(name: str) -> type[Harness] | None:
    """The class registered as ``name`` (a built-in one imported on first use), or None."""
    if name not in HARNESSES and name in _BUILT_IN:
        importlib.import_module(_BUILT_IN[name])
    return HARNESSES.get(name)


@functools.cache
def _instance(name: str) -> Harness:
    cls = harness_class(name)
    if cls is None:
        raise UserError(f"unknown harness {name!r} (known: {', '.join(harness_names())})")
    return cls()


def get_harness(spec: str | None = None) -> Harness:
    """The harness a spec names (``pi@1.6.0+tools`` → Pi; None → the default, Pi)."""
    return _instance((spec or DEFAULT_HARNESS).strip().partition("@")[0])

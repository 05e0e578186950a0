"""What a model must provide to be served by the endpoint server (``endpoint.app``): a ``ChatBackend``.

The server owns the HTTP surface — routes, the loopback check, the body limit, admission, SSE framing, error
responses — and a backend owns the model: its model list, turning a request body into a ``PreparedChat`` (every
refusal an ``ApiError``, raised before anything is generated), and how its error bodies look. Where two backends
must answer differently on the wire (the built-in engine checks the content type and bounds the queue; the scripted
model must keep the bytes the committed harness cards were captured against), the difference is an
``EndpointOptions`` field, not a second server.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from fastapi.responses import JSONResponse

from harnessfit.endpoint.errors import ApiError

__all__ = ["ChatBackend", "EndpointOptions", "MAX_BODY_BYTES", "PreparedChat"]

MAX_BODY_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class EndpointOptions:
    """How the server answers for one backend.

    ``model_paths`` / ``chat_paths``: the routes (the scripted model also answers without ``/v1`` and with a trailing
    slash, as the stdlib server it replaced did). ``loopback_only``: refuse a non-loopback ``Host`` or ``Origin``
    (403). ``json_only``: refuse a chat body whose content type is not ``application/json`` (415).
    ``max_body_bytes``: refuse a longer body (413; None: no limit). ``max_queue``: admit at most this many chat
    requests at once (429 with ``Retry-After``; None: no admission control). ``json_response``: the response class
    that encodes JSON bodies. ``sse_headers``: headers of a streamed answer (a ``Content-Type`` here replaces the
    default ``text/event-stream; charset=utf-8``).
    """

    model_paths: tuple[str, ...] = ("/v1/models",)
    chat_paths: tuple[str, ...] = ("/v1/chat/completions",)
    loopback_only: bool = True
    json_only: bool = True
    max_body_bytes: int | None = MAX_BODY_BYTES
    max_queue: int | None = None
    json_response: type[JSONResponse] = JSONResponse
    sse_headers: Mapping[str, str] = field(default_factory=lambda: {"Cache-Control": "no-cache"})


class PreparedChat(Protocol):
    """One validated chat request, ready to answer: ``stream`` says which of ``complete`` / ``events`` is used."""

    @property
    def stream(self) -> bool:
        """Whether the client asked for SSE."""
        ...

    def complete(self) -> dict[str, Any]:
        """The whole answer as one JSON body (may raise ``ApiError``)."""
        ...

    def events(self) -> Iterator[bytes]:
        """The answer as SSE events, each one framed ``data: …\\n\\n`` (a failure after the first is reported
        in-band: the status line is sent already)."""
        ...

    def close(self) -> None:
        """The request ended (answered, failed or its client left): stop and free what it holds."""
        ...


class ChatBackend(Protocol):
    """A model behind the endpoint server. ``prepare`` runs in a worker thread."""

    options: EndpointOptions

    def models(self) -> dict[str, Any]:
        """The body of ``GET /v1/models``."""
        ...

    def prepare(self, body: bytes, headers: Mapping[str, str]) -> PreparedChat:
        """The chat request ``body`` (bytes as sent) prepared, or an ``ApiError`` saying why it is refused."""
        ...

    def error_body(self, error: ApiError) -> dict[str, Any]:
        """The JSON body of a refusal."""
        ...

    def unrouted(self, method: str, path: str, query: str, status: int, detail: str) -> ApiError:
        """The refusal of a request no route answers (``status``: 404 or 405, ``detail`` its reason phrase)."""
        ...

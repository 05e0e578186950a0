"""endpoint: the one OpenAI-compatible HTTP server, below both ``harness`` and ``serve``.

``create_endpoint_app`` serves a ``ChatBackend`` — the built-in engine (``serve.app``) or the scripted model
(``harness.scripted``) — with the routes, loopback check, body limit, admission, SSE framing and error responses
its ``EndpointOptions`` ask for; ``BackgroundServer`` runs such an app on 127.0.0.1 in a thread of this process.
"""

from harnessfit.endpoint.admission import DEFAULT_MAX_QUEUE, Admission
from harnessfit.endpoint.app import LOOPBACK_HOSTS, create_endpoint_app
from harnessfit.endpoint.backend import MAX_BODY_BYTES, ChatBackend, EndpointOptions, PreparedChat
from harnessfit.endpoint.background import HOST, BackgroundServer, bind
from harnessfit.endpoint.errors import ApiError

__all__ = [
    "DEFAULT_MAX_QUEUE",
    "Admission",
    "LOOPBACK_HOSTS",
    "create_endpoint_app",
    "HOST",
    "BackgroundServer",
    "bind",
    "MAX_BODY_BYTES",
    "ChatBackend",
    "EndpointOptions",
    "PreparedChat",
    "ApiError",
]

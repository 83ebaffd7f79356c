"""What stands between the network and the model: the Host and Origin checks, the access token, the
body-size cap and the budget of decoded bytes.

A web page the user visits can reach a service on 127.0.0.1 (DNS rebinding, cross-origin POSTs), so
a locally bound service answers only requests addressed to a local name, and refuses foreign
origins unless the user allowed one (then it sends CORS headers). The token travels only in the
``Authorization`` header: a query string ends up in access logs and browser history.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

LOCAL_NAMES = {"127.0.0.1", "localhost", "::1", "[::1]"}
#: Paths that need no token: liveness, and pages that carry no model data (the console asks for the
#: token itself and sends it as a header).
PUBLIC_PATHS = {"/healthz", "/", "/docs", "/openapi.json"}
MIN_TOKEN_LENGTH = 16


class GuardError(Exception):
    """A request the guards refuse; becomes ``{"error": message}`` with ``status``."""

    def __init__(self, message: str, status: int = 400, headers: dict | None = None):
        super().__init__(message)
        self.message, self.status, self.headers = message, status, headers or {}


def error_response(message: str, status: int, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _host_name(host_header: str) -> tuple[str, str]:
    """(name, port) of a Host header value; IPv6 keeps its brackets."""
    host = host_header.strip().lower()
    if host.startswith("["):
        name, _, rest = host.partition("]")
        return name + "]", rest.lstrip(":")
    name, _, port = host.partition(":")
    return name, port


class RequestGuard:
    """ASGI middleware run before any route reads the request.

    Parameters
    ----------
    token : required ``Authorization: Bearer`` value, or None.
    max_request_bytes : cap on a request body.
    local_only : when the service is bound to a loopback address, accept only Host headers naming
        a loopback address (defeats DNS rebinding).
    allowed_origins : origins (``scheme://host:port``) whose pages may call the API (CORS).
    """

    def __init__(
        self, app, *, token: str | None, max_request_bytes: int, local_only: bool = True, allowed_origins=()
    ):
        self.app = app
        self.token = token
        self.max_request_bytes = max_request_bytes
        self.local_only = local_only
        self.allowed_origins = {o.rstrip("/").lower() for o in allowed_origins}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = Request(scope)
        cors = {}
        try:
            self._check_host(request)
            cors = self._check_origin(request)
            if request.method == "OPTIONS" and cors:
                return await Response(
                    status_code=204,
                    headers={
                        **cors,
                        "Access-Control-Allow-Methods": "GET, POST",
                        "Access-Control-Allow-Headers": "Authorization, Content-Type",
                        "Access-Control-Max-Age": "600",
                    },
                )(scope, receive, send)
            if self.token and scope["path"] not in PUBLIC_PATHS and not self._authorized(request):
                raise GuardError(
                    "missing or wrong access token: send 'Authorization: Bearer <token>'",
                    401,
                    {"WWW-Authenticate": "Bearer"},
                )
            self._check_length(request)
        except GuardError as exc:
            return await error_response(exc.message, exc.status, {**exc.headers, **cors})(
                scope, receive, send
            )

        received = 0
        limit = self.max_request_bytes

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise GuardError(f"request body is over the limit of {limit:,} bytes", 413)
            return message

        async def send_with_cors(message):
            if cors and message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + [
                    (k.lower().encode(), v.encode()) for k, v in cors.items()
                ]
            await send(message)

        await self.app(scope, limited_receive, send_with_cors)

    def _check_host(self, request: Request) -> None:
        if not self.local_only:
            return
        name, _ = _host_name(request.headers.get("host", ""))
        if name not in LOCAL_NAMES:
            raise GuardError(
                "this service answers only requests addressed to 127.0.0.1, localhost or "
                "[::1] (Host header refused)",
                421,
            )

    def _check_origin(self, request: Request) -> dict:
        """CORS headers for an allowed foreign origin; GuardError for any other foreign origin."""
        origin = request.headers.get("origin")
        if not origin or origin == "null" and request.method == "GET":
            return {}
        origin = origin.rstrip("/").lower()
        parts = urlsplit(origin)
        host = request.headers.get("host", "").lower()
        if parts.netloc == host and parts.scheme in ("http", "https"):
            return {}  # same origin: the console itself
        if origin in self.allowed_origins:
            return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
        raise GuardError(
            f"requests from the web page at {origin} are refused; start the service with "
            f"--allow-origin {origin} to allow them",
            403,
        )

    def _check_length(self, request: Request) -> None:
        length = request.headers.get("content-length")
        if length is None:
            return
        if not length.isdigit():
            raise GuardError("bad Content-Length header", 400)
        if int(length) > self.max_request_bytes:
            raise GuardError(f"request body is over the limit of {self.max_request_bytes:,} bytes", 413)

    def _authorized(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        offered = header[7:].strip() if header.lower().startswith("bearer ") else ""
        assert self.token is not None  # only asked when a token is set
        return bool(offered) and hmac.compare_digest(offered.encode(), self.token.encode())


class DecodeBudget:
    """At most ``max_bytes`` of decoded input held at once across all requests.

    ``acquire(n)`` waits up to ``wait_s`` for room, then refuses with 503 and ``Retry-After``; an
    input alone larger than the whole budget is refused with 413 at once.
    """

    def __init__(self, max_bytes: int, wait_s: float = 2.0):
        self.max_bytes = int(max_bytes)
        self.wait_s = wait_s
        self.in_use = 0
        self._cond = threading.Condition()

    def acquire(self, n: int, what: str = "the input needs {} MB to decode") -> None:
        if n > self.max_bytes:
            raise GuardError(
                f"{what.format(f'{n / 1e6:.0f}')}, over this service's limit of {self.max_bytes / 1e6:.0f} MB",
                413,
            )
        deadline = time.monotonic() + self.wait_s
        with self._cond:
            while self.in_use + n > self.max_bytes:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GuardError(
                        "the service is busy decoding other inputs; try again in a moment",
                        503,
                        {"Retry-After": "1"},
                    )
                self._cond.wait(left)
            self.in_use += n

    def release(self, n: int) -> None:
        with self._cond:
            self.in_use -= n
            self._cond.notify_all()


def check_token(host: str, token: str | None) -> None:
    """A service reachable from other machines needs a token of at least MIN_TOKEN_LENGTH characters."""
    if host.strip("[]") in LOCAL_NAMES:
        return
    if not token:
        raise ValueError(
            f"binding {host!r} makes the service reachable from other machines; set a token "
            "(--token or MODELDESK_TOKEN) or bind 127.0.0.1"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        import secrets

        raise ValueError(
            f"a token for a service other machines can reach needs at least {MIN_TOKEN_LENGTH} "
            f"characters; for example: {secrets.token_urlsafe(18)}"
        )

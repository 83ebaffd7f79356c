"""Running the service: one uvicorn configuration with limits that a slow or hostile client cannot
get around, used by ``modeldesk serve``, the desktop app and the deploy bundle.

uvicorn has no deadline for receiving a request (its keep-alive timer restarts on every byte), so a
client that trickles a header holds a connection for ever; :class:`DeadlineH11Protocol` closes a
connection whose request is not complete within ``REQUEST_DEADLINE_S``.
"""

from __future__ import annotations

import socket

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .guards import check_token

REQUEST_DEADLINE_S = 15.0
KEEP_ALIVE_S = 5
MAX_CONNECTIONS = 256
MAX_HEADER_BYTES = 16 * 1024


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers and body."""

    deadline_s = REQUEST_DEADLINE_S

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.deadline_s, self._expire)

    def _disarm(self) -> None:
        handle = getattr(self, "_deadline", None)
        if handle is not None:
            handle.cancel()
        self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            self.logger.warning(
                "closed a connection whose request was not complete after %.0f s", self.deadline_s
            )
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection gets its own deadline

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)


def check_bind(host: str, port: int, token: str | None) -> None:
    """ValueError in one sentence for a port out of range or a public bind without a long token."""
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port {port} is not a TCP port; use a number from 1 to 65535")
    check_token(host, token)


def port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def server_config(app, host: str, port: int, *, log_level: str = "info", access_log: bool = True):
    """The uvicorn configuration every way of serving uses."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=int(port),
        log_level=log_level,
        access_log=access_log,
        http=DeadlineH11Protocol,
        timeout_keep_alive=KEEP_ALIVE_S,
        limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        server_header=False,
    )

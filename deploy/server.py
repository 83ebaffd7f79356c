"""Running the service: one uvicorn configuration with limits that a slow or hostile client cannot
get around, used by ``modeldesk serve``, the desktop app and the deploy bundle.

uvicorn has no deadline for receiving a request (its keep-alive timer restarts on every byte), and
it answers 503 to every request once ``limit_concurrency`` connections are open, so 300 sockets that
trickle headers (slowloris) would shut legitimate clients out. :class:`DeadlineH11Protocol` therefore

- gives a request's headers ``HEADER_DEADLINE_S`` and its whole body ``REQUEST_DEADLINE_S``;
- holds at most ``MAX_PER_CLIENT`` connections per client address: a client's new connection
  closes that client's longest-waiting connection that has not sent a whole request (and is refused
  when none of them is waiting);
- keeps ``SPARE_CONNECTIONS`` of the server's connections free: when they run short, the connections
  that wait longest without a whole request are closed first (those trickling a request before
  silent ones, which get ``SILENT_GRACE_S`` to be read). A request whose headers arrived is never
  cut by either rule, so a slow client costs only its own connections.

The token is never written to a log: :class:`TokenScrubber` removes ``?token=``-style query values
(and the token itself, wherever it appears) from uvicorn's access log.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import stat
import sys
from typing import ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .guards import check_token

HEADER_DEADLINE_S = 5.0
REQUEST_DEADLINE_S = 15.0
KEEP_ALIVE_S = 5
MAX_CONNECTIONS = 256
MAX_PER_CLIENT = 64
SPARE_CONNECTIONS = 16
SILENT_GRACE_S = 0.25
MAX_HEADER_BYTES = 16 * 1024
TOKEN_ENV = "MODELDESK_TOKEN"
_SECRET_PARAMS = re.compile(
    r"((?:^|[?&;])(?:[^=&;]*token|[^=&;]*key|auth[^=&;]*|password|secret)=)[^&;#\s]*", re.IGNORECASE
)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines for a request's headers and body, a per-client
    connection limit and spare connections kept for new clients (see the module docstring)."""

    header_deadline_s = HEADER_DEADLINE_S
    deadline_s = REQUEST_DEADLINE_S
    max_per_client = MAX_PER_CLIENT
    spare_connections = SPARE_CONNECTIONS
    _waiting_since = 0.0
    _partial = False  # part of a request came, not all of it
    _deadline: asyncio.TimerHandle | None
    _closed: ClassVar[dict] = {}  # why -> connections closed since the last report (one log line per 10 s)
    _reported_at = 0.0

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._waiting_since = self.loop.time()
        self._partial = False
        self._arm()
        self._make_room()

    def _waiting(self) -> bool:
        """No whole request received: headers still coming, or idle between requests."""
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    def _cut_order(self) -> tuple:
        """Which waiting connection goes first: trickling ones before silent ones, the longest
        waiting first."""
        return (not self._partial, self._waiting_since)

    def _victims(self, candidates, count: int) -> list:
        """Up to ``count`` waiting connections to cut. A silent one only after ``SILENT_GRACE_S``: a
        burst of new connections is accepted before any of them is read, and a whole request may be
        waiting, unread, in one of them."""
        now = self.loop.time()
        ordered = sorted((c for c in candidates if c._waiting()), key=DeadlineH11Protocol._cut_order)
        return [c for c in ordered if c._partial or now - c._waiting_since >= SILENT_GRACE_S][:count]

    def _make_room(self) -> None:
        if self.transport.is_closing():
            return
        peer = self.client[0] if self.client else None
        others = [c for c in self.connections if c is not self and isinstance(c, DeadlineH11Protocol)]
        mine = [c for c in others if c.client and c.client[0] == peer and not c.transport.is_closing()]
        short = False
        if peer is not None and len(mine) >= self.max_per_client:
            if not any(c._waiting() for c in mine):
                self._report(f"a client already had {self.max_per_client} connections busy")
                self.transport.close()
                return
            need = len(mine) - self.max_per_client + 1
            victims = self._victims(mine, need)
            for victim in victims:
                victim._cut(f"a client opened more than {self.max_per_client} connections")
            short = len(victims) < need
        limit = self.limit_concurrency or MAX_CONNECTIONS
        open_now = sum(1 for c in self.connections if not c.transport.is_closing())
        excess = open_now - (limit - self.spare_connections)
        if excess > 0:
            victims = self._victims(others, excess)
            for victim in victims:
                victim._cut("the server is short of connections")
            short = short or len(victims) < excess
        if short:  # look again once the silent connections have been read
            self.loop.call_later(SILENT_GRACE_S, self._make_room)

    def _cut(self, why: str) -> None:
        self._report(why)
        self._disarm()
        self.transport.close()

    def _report(self, why: str) -> None:
        """Count a closed connection; a warning at most every 10 s (a slowloris must not flood the log)."""
        closed = DeadlineH11Protocol._closed
        closed[why] = closed.get(why, 0) + 1
        now = self.loop.time()
        if now - DeadlineH11Protocol._reported_at >= 10.0:
            summary = "; ".join(f"{count} ({why})" for why, count in closed.items())
            self.logger.warning("closed connections without a whole request: %s", summary)
            closed.clear()
            DeadlineH11Protocol._reported_at = now

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_deadline_s, self._expire)

    def _disarm(self) -> None:
        handle = getattr(self, "_deadline", None)
        if handle is not None:
            handle.cancel()
        self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.SEND_BODY and self.loop.time() - self._waiting_since < self.deadline_s:
            left = self.deadline_s - (self.loop.time() - self._waiting_since)
            self._deadline = self.loop.call_later(left, self._expire)  # headers came: the body's turn
        elif state in (h11.IDLE, h11.SEND_BODY):
            what = "headers" if state is h11.IDLE else "request"
            limit = self.header_deadline_s if state is h11.IDLE else self.deadline_s
            self._report(f"{what} not complete within {limit:.0f} s")
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()
        self._partial = self.conn.their_state is h11.IDLE

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._waiting_since = self.loop.time()
            self._partial = False
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


class TokenScrubber(logging.Filter):
    """Removes secrets from uvicorn's logs: the values of query parameters named like a token, a key,
    a password or a secret, and every token this process serves with, wherever it appears."""

    def __init__(self):
        super().__init__()
        self.tokens: set[str] = set()

    def scrub(self, text: str) -> str:
        text = _SECRET_PARAMS.sub(r"\1***", text)
        for token in self.tokens:
            text = text.replace(token, "***")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(self.scrub(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = self.scrub(record.msg)
        return True


def scrub_access_log(token: str | None) -> None:
    """Make sure uvicorn's access and error loggers carry a :class:`TokenScrubber` that knows ``token``
    (several services in one process, e.g. the desktop app, add theirs to the same one)."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        scrubber = next((f for f in logger.filters if isinstance(f, TokenScrubber)), None)
        if scrubber is None:
            scrubber = TokenScrubber()
            logger.addFilter(scrubber)
        if token:
            scrubber.tokens.add(token)


def read_token_file(path) -> str:
    """The token in the file at ``path`` (first line, white space trimmed); ValueError in one sentence.

    A file other local users can read is refused: the token would be theirs too.
    """
    try:
        info = os.stat(path)
        with open(path, encoding="utf-8") as handle:
            token = handle.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"cannot read the token file {path} ({getattr(exc, 'strerror', None) or exc})"
        ) from None
    if os.name == "posix" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"the token file {path} can be read by other users; run: chmod 600 {path}")
    if not token:
        raise ValueError(f"the token file {path} is empty; write the token on its first line")
    return token


def resolve_token(cli_token: str | None = None, token_file=None, *, stream=None) -> str | None:
    """The service's token: ``--token-file``, else ``--token`` (with a warning on ``stream``, stderr by
    default: a command line is visible to every local user in the process list), else the
    ``MODELDESK_TOKEN`` environment variable, else None."""
    if token_file:
        return read_token_file(token_file)
    if cli_token:
        print(
            "warning: a token given with --token can be read by every user of this machine in the "
            f"process list; use --token-file FILE (mode 600) or the {TOKEN_ENV} environment variable",
            file=stream or sys.stderr,
        )
        return cli_token
    return os.environ.get(TOKEN_ENV) or None


def server_config(
    app, host: str, port: int, *, log_level: str = "info", access_log: bool = True, token: str | None = None
):
    """The uvicorn configuration every way of serving uses (``token``: scrubbed from the logs)."""
    import uvicorn

    config = uvicorn.Config(
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
    scrub_access_log(token)  # after Config, which sets up uvicorn's loggers
    return config

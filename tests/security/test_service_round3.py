"""Attacks on the service from the third hardening round (issue 30, items 4, 5 and 6).

Slowloris (many sockets trickling headers must not keep legitimate requests at 503), a token sent
as ``?token=`` or set on the command line (never logged; a warning for the process list), and JSON
numbers too long for ``int`` (a 400, never a 500).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time

import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from modeldesk.app.cli import main
from modeldesk.deploy import create_app
from modeldesk.deploy import server as server_module

LOCAL = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def client(standin_artifact):
    with TestClient(create_app(standin_artifact), raise_server_exceptions=False, base_url=LOCAL) as c:
        yield c


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    digits=st.integers(min_value=1, max_value=6000),
    negative=st.booleans(),
    where=st.sampled_from(["image", "extra", "nested", "list"]),
)
def test_no_json_number_gives_a_500(client, digits, negative, where):
    number = ("-" if negative else "") + "9" * digits
    body = {
        "image": f'{{"image": {number}}}',
        "extra": f'{{"image": "aGk=", "x": {number}}}',
        "nested": f'{{"image": "aGk=", "x": {{"y": [1, {number}]}}}}',
        "list": f'{{"images": [{number}]}}',
    }[where]
    response = client.post("/v1/predict", content=body, headers={"content-type": "application/json"})
    assert response.status_code < 500, response.text
    assert "error" in response.json()
    if digits > 4300:
        assert response.status_code == 400 and "digits" in response.json()["error"]


@contextlib.contextmanager
def running(app, *, token=None, access_log=False, **protocol_settings):
    """A real uvicorn server for ``app`` on a free 127.0.0.1 port; yields the port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = server_module.server_config(app, "127.0.0.1", port, log_level="info", access_log=access_log)
    if token is not None:
        server_module.scrub_access_log(token)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(400):
            if server.started:
                break
            time.sleep(0.05)
        yield port
    finally:
        server.should_exit = True
        thread.join(15)


def _get(port: int, path: str, headers: str = "") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


def test_legitimate_requests_are_served_during_a_slowloris(standin_artifact, monkeypatch):
    """More trickling sockets than the connection cap: requests that arrive whole still get 200."""
    monkeypatch.setattr(server_module, "MAX_CONNECTIONS", 40)
    slow: list[socket.socket] = []
    with running(create_app(standin_artifact)) as port:
        try:
            for i in range(90):  # more than twice the cap, all from this client's address
                sock = socket.create_connection(("127.0.0.1", port))
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-%d: " % i)
                slow.append(sock)
            time.sleep(0.3)  # let the server take them all in
            for sock in slow:
                with contextlib.suppress(OSError):  # the server cut the oldest ones
                    sock.sendall(b"a")  # still trickling
            answers = [_get(port, "/healthz") for _ in range(10)]
            assert all(a.startswith(b"HTTP/1.1 200") for a in answers), answers[0][:200]
        finally:
            for sock in slow:
                sock.close()


def _closed(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (an orderly close or a reset: it had unread bytes)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_one_client_holds_at_most_its_share_of_connections(standin_artifact, monkeypatch):
    """Past the per-client limit a client's oldest waiting connection is cut, not everyone else's."""
    monkeypatch.setattr(server_module.DeadlineH11Protocol, "max_per_client", 8)
    with running(create_app(standin_artifact)) as port:
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(12)]
        try:
            for sock in socks:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                time.sleep(0.02)  # an order of arrival: the first four are the oldest
            for sock in socks:
                sock.settimeout(10)
            assert all(_closed(sock) for sock in socks[:4])  # cut by the server
            socks[-1].sendall(b"\r\n")
            assert socks[-1].recv(64).startswith(b"HTTP/1.1 200")
        finally:
            for sock in socks:
                sock.close()


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(self.format(record))


def test_a_query_token_is_not_written_to_the_access_log(standin_artifact):
    secret = "a-long-enough-secret-token"
    collect = _Collect()
    access = logging.getLogger("uvicorn.access")
    app = create_app(standin_artifact, token=secret)
    try:
        with running(app, token=secret, access_log=True) as port:
            access.addHandler(collect)
            assert _get(port, f"/v1/model?token={secret}").startswith(b"HTTP/1.1 401")
            assert _get(port, "/v1/model?x=1&access_token=other-secret-value").startswith(b"HTTP/1.1 401")
            bearer = f"Authorization: Bearer {secret}\r\n"
            assert _get(port, f"/v1/model?note={secret}", bearer).startswith(b"HTTP/1.1 200")
    finally:
        access.removeHandler(collect)
    text = "\n".join(collect.lines)
    assert "/v1/model" in text  # the requests were logged...
    assert secret not in text and "other-secret-value" not in text  # ...without the secrets


def test_a_token_on_the_command_line_warns_and_a_token_file_is_read(tmp_path, standin_artifact, capsys):
    code = main(
        ["serve", str(standin_artifact), "--port", "99999", "--token", "x" * 20, "--workspace", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code == 1 and "process list" in err and "--token-file" in err
    token_file = tmp_path / "token.txt"
    token_file.write_text("a-token-from-a-file-1234\n")
    os.chmod(token_file, 0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        server_module.resolve_token(None, token_file)
    os.chmod(token_file, 0o600)
    assert server_module.resolve_token(None, token_file) == "a-token-from-a-file-1234"
    code = main(
        [
            "serve",
            str(standin_artifact),
            "--port",
            "99999",
            "--token-file",
            str(token_file),
            "--workspace",
            str(tmp_path),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "not a TCP port" in err and "process list" not in err

"""Run the local inference service in a background thread, for the desktop app and the demo."""

from __future__ import annotations

import logging
import socket
import threading
import time

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class ServiceHandle:
    """A running service: ``url``, ``token`` and ``stop()``."""

    def __init__(self, server, thread, url: str, token):
        self._server = server
        self._thread = thread
        self.url = url
        self.token = token
        self.note = ""  # why the address is not the usual one, when it is not

    @classmethod
    def start(
        cls, artifact_path, *, host: str = "127.0.0.1", port: int = 0, token=None, timeout: float = 30.0
    ) -> ServiceHandle:
        """Start serving ``artifact_path`` and return once the service accepts requests."""
        import uvicorn

        from modeldesk.deploy.server import check_bind, server_config
        from modeldesk.deploy.service import LOCAL_HOSTS, create_app, load_checked

        check_bind(host, port, token)
        port = port or free_port(host)
        ready = load_checked(artifact_path)
        app = create_app(
            ready.artifact, token=token, predictor=ready, local_only=host.strip("[]") in LOCAL_HOSTS
        )
        server = uvicorn.Server(
            server_config(app, host, port, log_level="warning", access_log=False, token=token)
        )
        thread = threading.Thread(target=server.run, name="modeldesk-service", daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError(f"the service could not start on {host}:{port}; see the log file")
            if time.monotonic() > deadline:
                server.should_exit = True
                raise RuntimeError(f"the service did not start within {timeout:.0f} s")
            time.sleep(0.05)
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}/"
        log.info("service for %s started at %s", artifact_path, url)
        return cls(server, thread, url, token)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to finish its requests and wait for its thread."""
        self._server.should_exit = True
        self._thread.join(timeout)
        log.info("service at %s stopped", self.url)

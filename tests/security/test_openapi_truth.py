"""The service's OpenAPI document tells the truth: schemathesis, every check, against the live
service, with a token and without one."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest
import uvicorn

from modeldesk.deploy import create_app
from modeldesk.deploy.server import server_config

pytest.importorskip("schemathesis")

TOKEN = "a-long-enough-token-123"
# A body can match the schema and still not be an image (bytes the schema cannot describe): the
# service then answers 422, which is the right answer for schema-valid data it cannot decode.
CONFIG = '[checks.positive_data_acceptance]\nexpected-statuses = ["2xx", "401", "422"]\n'


@pytest.fixture
def live(standin_artifact):
    def start(token):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = uvicorn.Server(
            server_config(
                create_app(standin_artifact, token=token),
                "127.0.0.1",
                port,
                log_level="error",
                access_log=False,
            )
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        for _ in range(400):
            if server.started:
                break
            time.sleep(0.05)
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}"

    servers = []
    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(10)


@pytest.mark.slow
@pytest.mark.parametrize("token", [None, TOKEN], ids=["no token", "token"])
def test_schemathesis_all_checks_pass(live, token, tmp_path):
    url = live(token)
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    command = [
        sys.executable,
        "-c",
        "import schemathesis.cli as c; c.schemathesis()",
        "--config-file",
        str(config),
        "run",
        f"{url}/openapi.json",
        "--checks",
        "all",
        "--max-examples",
        "25",
        "--seed",
        "1",
        "--no-color",
    ]
    if token:
        command += ["-H", f"Authorization: Bearer {token}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]

"""The local service attacked as a hostile web page and a hostile client would (issue: hardening).

Each test is one attack; each failed on the service before it was hardened.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import uvicorn
from starlette.testclient import TestClient

from modeldesk.app.cli import main
from modeldesk.deploy import create_app, load_artifact, save_artifact
from modeldesk.deploy.artifact import ArtifactError
from modeldesk.deploy.server import DeadlineH11Protocol, check_bind, server_config
from modeldesk.deploy.service import load_checked

LOCAL = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def client(standin_artifact):
    with TestClient(
        create_app(standin_artifact, allowed_origins=["http://localhost:3000"]),
        raise_server_exceptions=False,
        base_url=LOCAL,
    ) as c:
        yield c


def _image(deploy_helpers):
    return {"file": ("a.png", deploy_helpers.color_image_bytes("red", 1), "image/png")}


@pytest.mark.parametrize("host", ["attacker.rebind.example", "attacker.example:8000", "10.0.0.7:8000"])
def test_dns_rebinding_host_is_refused(client, deploy_helpers, host):
    response = client.post("/v1/predict", files=_image(deploy_helpers), headers={"Host": host})
    assert response.status_code == 421 and "Host" in response.json()["error"]
    assert client.get("/v1/model", headers={"Host": host}).status_code == 421


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "localhost"])
def test_local_names_are_served(client, host):
    assert client.get("/healthz", headers={"Host": host}).status_code == 200


def test_foreign_origin_post_is_refused_and_an_allowed_one_gets_cors(client, deploy_helpers):
    refused = client.post(
        "/v1/predict", files=_image(deploy_helpers), headers={"Origin": "https://evil.example"}
    )
    assert refused.status_code == 403 and "--allow-origin" in refused.json()["error"]
    allowed = client.post(
        "/v1/predict", files=_image(deploy_helpers), headers={"Origin": "http://localhost:3000"}
    )
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://localhost:3000"
    preflight = client.options(
        "/v1/predict", headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"}
    )
    assert preflight.status_code == 204 and "POST" in preflight.headers["access-control-allow-methods"]
    same = client.post("/v1/predict", files=_image(deploy_helpers), headers={"Origin": LOCAL})
    assert same.status_code == 200  # the console itself


def test_token_in_the_query_string_is_not_accepted(standin_artifact):
    with TestClient(create_app(standin_artifact, token="a-long-enough-token"), base_url=LOCAL) as locked:
        assert locked.get("/v1/model?token=a-long-enough-token").status_code == 401
        assert (
            locked.get("/v1/model", headers={"Authorization": "Bearer a-long-enough-token"}).status_code
            == 200
        )


def test_short_tokens_and_bad_ports_are_refused_in_one_line(tmp_path, capsys, standin_artifact):
    with pytest.raises(ValueError, match="at least 16 characters"):
        check_bind("0.0.0.0", 8000, "x")
    for port in ("99999", "-1"):
        code = main(["serve", str(standin_artifact), "--port", port, "--workspace", str(tmp_path)])
        err = capsys.readouterr().err
        assert code == 1 and "not a TCP port" in err and "Traceback" not in err and err.count("\n") == 1


def test_json_nested_100000_deep_is_a_400(client):
    body = "[" * 100_000 + "]" * 100_000
    response = client.post(
        "/v1/predict",
        content=json.dumps({"image": "x"})[:-1] + ', "x": ' + body + "}",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400 and "nested" in response.json()["error"]


def test_more_decoding_than_the_budget_is_refused_not_buffered(standin_artifact, deploy_helpers):
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("1", (6300, 6300)).save(buffer, "PNG")  # ~15 KB on the wire, 40 MP decoded
    assert len(buffer.getvalue()) < 100_000
    app = create_app(standin_artifact, max_decode_bytes=50_000_000)
    with TestClient(app, raise_server_exceptions=False, base_url=LOCAL) as small:
        response = small.post("/v1/predict", files={"file": ("bomb.png", buffer.getvalue(), "image/png")})
        assert response.status_code == 413 and "MB to decode" in response.json()["error"]
        assert small.post("/v1/predict", files=_image(deploy_helpers)).status_code == 200


def test_a_busy_budget_answers_503_with_retry_after(standin_artifact, deploy_helpers):
    from modeldesk.deploy.guards import DecodeBudget, GuardError

    budget = DecodeBudget(1000, wait_s=0.05)
    budget.acquire(900)
    with pytest.raises(GuardError) as caught:
        budget.acquire(200)
    assert caught.value.status == 503 and caught.value.headers["Retry-After"] == "1"
    budget.release(900)
    budget.acquire(200)


def test_405_says_which_methods_are_allowed(client):
    response = client.get("/v1/predict")
    assert response.status_code == 405 and response.headers["allow"] == "POST"


def _card_edit(tmp_path, standin_artifact, **changes):
    artifact = load_artifact(standin_artifact)
    card = {**artifact.card, **changes}
    return save_artifact(tmp_path / "edited", artifact.model_bytes(), card)


def test_a_card_that_does_not_match_its_graph_refuses_to_serve(tmp_path, standin_artifact):
    path = _card_edit(tmp_path, standin_artifact, labels=["a", "b", "c", "d", "e"])
    with pytest.raises(ArtifactError, match="gives 3 scores but its card names 5 labels"):
        load_checked(path)


def test_std_zero_preprocessing_is_refused_instead_of_nan_scores(tmp_path, standin_artifact):
    path = _card_edit(
        tmp_path,
        standin_artifact,
        preprocessing={**load_artifact(standin_artifact).card["preprocessing"], "std": 0},
    )
    with pytest.raises(ArtifactError, match="std above 0"):
        load_artifact(path)


def test_truncated_model_and_missing_preprocessing_are_one_line(tmp_path, standin_artifact, capsys):
    truncated = _card_edit(tmp_path, standin_artifact)
    data = (truncated / "model.onnx").read_bytes()
    (truncated / "model.onnx").write_bytes(data[: len(data) // 2])
    code = main(["serve", str(truncated), "--port", "0", "--workspace", str(tmp_path / "ws")])
    err = capsys.readouterr().err
    assert code == 1 and "damaged" in err and err.count("\n") == 1
    original = load_artifact(standin_artifact)
    nulled = save_artifact(tmp_path / "nulled", original.model_bytes(), dict(original.card))
    card = json.loads((nulled / "model.json").read_text())
    card["preprocessing"] = None
    (nulled / "model.json").write_text(json.dumps(card))
    code = main(["predict", str(nulled), "x.png", "--workspace", str(tmp_path / "ws")])
    err = capsys.readouterr().err
    assert code == 1 and "preprocessing is missing" in err and err.count("\n") == 1


def test_a_client_that_never_finishes_its_header_is_disconnected(standin_artifact, monkeypatch):
    monkeypatch.setattr(DeadlineH11Protocol, "deadline_s", 0.5)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(server_config(create_app(standin_artifact), "127.0.0.1", port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # never finished
        slow.settimeout(30)  # generous: the deadline, not this timeout, must end the connection
        assert slow.recv(1024) == b""  # closed by the server
        slow.close()
        with socket.create_connection(("127.0.0.1", port)) as ok:
            ok.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            ok.settimeout(30)
            assert ok.recv(1024).startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(10)

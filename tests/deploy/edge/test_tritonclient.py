"""A standard inference client (Triton's Python HTTP client) works against the edge server unchanged."""

from __future__ import annotations

import base64
import threading
import time

import numpy as np
import pytest

httpclient = pytest.importorskip("tritonclient.http")  # the test extra installs it


@pytest.fixture
def served(tmp_path, standin_artifact):
    import uvicorn

    from modeldesk.app.service_handle import free_port
    from modeldesk.deploy.edge.app import create_edge_app
    from modeldesk.deploy.edge.server import EdgeServer
    from modeldesk.deploy.server import server_config

    server = EdgeServer(tmp_path / "edge")
    server.add_model(str(standin_artifact), "colors")
    port = free_port()
    uv = uvicorn.Server(server_config(create_edge_app(server), "127.0.0.1", port, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    while not uv.started:
        time.sleep(0.02)
    yield f"127.0.0.1:{port}"
    uv.should_exit = True
    thread.join(10)
    server.close()


def test_tritonclient_reads_health_metadata_and_answers_in_binary_and_json(served, deploy_helpers):
    client = httpclient.InferenceServerClient(served)
    assert client.is_server_live() and client.is_server_ready() and client.is_model_ready("colors")
    meta = client.get_model_metadata("colors")
    assert meta["inputs"][0]["datatype"] == "BYTES" and meta["parameters"]["labels"] == [
        "red",
        "green",
        "blue",
    ]
    images = [deploy_helpers.color_image_bytes(label, i) for i, label in enumerate(["red", "green", "blue"])]

    binary = httpclient.InferInput("image", [3], "BYTES")
    binary.set_data_from_numpy(np.array(images, dtype=np.object_))  # binary_data=True: the default
    answer = client.infer("colors", [binary])  # no outputs named: all of them, as JSON
    assert [v.decode() if isinstance(v, bytes) else v for v in answer.as_numpy("label")] == [
        "red",
        "green",
        "blue",
    ]

    as_json = httpclient.InferInput("image", [3], "BYTES")
    as_json.set_data_from_numpy(
        np.array([base64.b64encode(i) for i in images], dtype=np.object_), binary_data=False
    )
    wanted = [httpclient.InferRequestedOutput(n, binary_data=True) for n in ("label", "scores")]
    answer = client.infer("colors", [as_json], outputs=wanted)
    assert list(answer.as_numpy("label")) == [b"red", b"green", b"blue"]
    scores = answer.as_numpy("scores")
    assert scores.shape == (3, 3) and scores.dtype == np.float32
    assert list(scores.argmax(axis=1)) == [0, 1, 2]

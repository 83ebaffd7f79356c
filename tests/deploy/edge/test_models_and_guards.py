"""Model versions: switching the live one under load loses no request; the guards refuse foreign
Hosts and Origins and state-changing calls without the token."""

from __future__ import annotations

import base64
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from modeldesk.deploy.artifact import save_artifact


@pytest.fixture
def two_versions(tmp_path, deploy_helpers):
    """Two models with the same labels that answer differently (v2 swaps red and blue)."""
    first = save_artifact(
        tmp_path / "v1", deploy_helpers.build_standin_model(), deploy_helpers.standin_card()
    )
    card = deploy_helpers.standin_card(labels=["blue", "green", "red"])
    second = save_artifact(tmp_path / "v2", deploy_helpers.build_standin_model(), card)
    return first, second


def test_switching_the_live_version_under_load_loses_no_request(edge_factory, two_versions, deploy_helpers):
    _, client = edge_factory()
    for source in two_versions:
        client.post("/v1/edge/models", json={"source": str(source), "name": "colors"})
    image = base64.b64encode(deploy_helpers.color_image_bytes("red", 1)).decode()
    stop = threading.Event()

    def load():
        answers = []
        while not stop.is_set():
            response = client.post("/v1/models/colors/predict", json={"image": image})
            answers.append((response.status_code, response.json()))
        return answers

    with ThreadPoolExecutor(4) as pool:
        workers = [pool.submit(load) for _ in range(4)]
        switched = []
        for i in range(12):
            version = 2 if i % 2 == 0 else 1
            response = client.post("/v1/edge/models/colors/live", json={"version": version})
            assert response.status_code == 200 and response.json() == {
                "name": "colors",
                "live_version": version,
            }
            switched.append(version)
            for _ in range(3):  # a few requests on each version
                client.post("/v1/models/colors/predict", json={"image": image})
        stop.set()
        answers = [a for w in workers for a in w.result()]
    assert len(answers) > 12
    assert all(status == 200 for status, _ in answers), [a for a in answers if a[0] != 200][:3]
    # each answer is whole: version 1 calls a red picture red, version 2 (labels swapped) calls it blue
    for _, body in answers:
        assert body["predictions"][0]["label"] == {1: "red", 2: "blue"}[body["version"]]
    assert {body["version"] for _, body in answers} == {1, 2}
    pinned = client.post("/v1/models/colors/versions/1/predict", json={"image": image}).json()
    assert pinned["version"] == 1 and pinned["predictions"][0]["label"] == "red"


def test_versions_are_listed_and_a_model_in_use_is_not_removed(
    edge_factory, two_versions, tmp_path, edge_helpers
):
    _, client = edge_factory()
    for source in two_versions:
        client.post("/v1/edge/models", json={"source": str(source), "name": "colors"})
    (model,) = client.get("/v1/edge/models").json()["models"]
    assert model["live_version"] == 1 and [v["version"] for v in model["versions"]] == [1, 2]
    assert model["labels"] == ["red", "green", "blue"] and model["input_kind"] == "image"
    assert client.post("/v1/edge/models/colors/live", json={"version": 5}).status_code == 404
    assert client.post("/v1/edge/models", json={"source": str(tmp_path), "name": "x"}).status_code == 404
    assert (
        client.post("/v1/edge/models", json={"source": str(two_versions[0]), "name": "../x"}).status_code
        == 422
    )
    video = edge_helpers.write_video(tmp_path / "v.mp4", [edge_helpers.RED] * 3)
    pipeline = client.post(
        "/v1/edge/pipelines", json={"source": video, "model": "colors", "start": False}
    ).json()
    assert client.delete("/v1/edge/models/colors").status_code == 409
    assert client.delete(f"/v1/edge/pipelines/{pipeline['id']}").status_code == 200
    assert client.delete("/v1/edge/models/colors").json() == {"removed": "colors"}
    assert client.get("/v1/edge/models").json() == {"models": []}


def test_a_foreign_host_or_origin_is_refused(edge_factory):
    _, foreign = edge_factory(base_url="http://attacker.example:8765")
    assert foreign.get("/v1/edge/status").status_code == 421
    _, client = edge_factory()
    response = client.post(
        "/v1/edge/models", json={"source": "x", "name": "x"}, headers={"Origin": "http://evil.example"}
    )
    assert response.status_code == 403
    assert client.get("/v1/edge/status", headers={"Origin": "http://127.0.0.1:8765"}).status_code == 200


def test_state_changing_calls_need_the_token(edge_factory, standin_artifact):
    token = "a-long-enough-token-123"
    _, client = edge_factory(token=token)
    body = {"source": str(standin_artifact), "name": "colors"}
    refused = client.post("/v1/edge/models", json=body)
    assert refused.status_code == 401 and "token" in refused.json()["error"]
    assert (
        client.post("/v1/edge/models", json=body, headers={"Authorization": "Bearer wrong"}).status_code
        == 401
    )
    assert client.delete("/v1/edge/models/colors").status_code == 401
    assert client.post("/v2/models/colors/infer", json={"inputs": []}).status_code == 401
    assert client.get("/v1/edge/status").status_code == 200  # reads stay open for the console's pictures
    auth = {"Authorization": f"Bearer {token}"}
    assert client.post("/v1/edge/models", json=body, headers=auth).json() == {"name": "colors", "version": 1}
    assert client.delete("/v1/edge/models/colors", headers=auth).status_code == 200


def test_bodies_over_the_limit_are_refused(edge_factory, standin_artifact):
    _, client = edge_factory(max_request_bytes=10_000)
    client.post("/v1/edge/models", json={"source": str(standin_artifact), "name": "colors"})
    response = client.post(
        "/v2/models/colors/infer", content=b"x" * 20_000, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


def test_a_deploy_bundle_or_a_model_json_path_is_a_model_source(edge_factory, standin_artifact, tmp_path):
    from modeldesk.deploy.bundle import build_bundle

    bundle = build_bundle(standin_artifact, tmp_path / "bundle")
    _, client = edge_factory()
    assert client.post("/v1/edge/models", json={"source": str(bundle), "name": "b"}).json() == {
        "name": "b",
        "version": 1,
    }
    card = standin_artifact / "model.json"
    assert client.post("/v1/edge/models", json={"source": str(card), "name": "b"}).json()["version"] == 2
    (model,) = client.get("/v1/edge/models").json()["models"]
    assert [v["source"] for v in model["versions"]] == [str(bundle), str(card)]


def test_the_console_page_links_the_palette_it_shares_with_the_model_console(edge_factory):
    import re

    _, client = edge_factory()
    page = client.get("/").text
    for sheet in re.findall(r'<link rel="stylesheet" href="([^"]+)"', page):
        response = client.get("/" + sheet)
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/css"), sheet
    assert re.findall(r'<link rel="stylesheet" href="([^"]+)"', page)[0] == "static/base.css"
    assert "--brand:" in client.get("/static/base.css").text
    assert "var(--brand)" in client.get("/static/edge.css").text

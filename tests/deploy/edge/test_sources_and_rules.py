"""Watched folders (each new file once, also across a restart), source names, rule conditions, and the
console's reads (device, logs without the token, stats)."""

from __future__ import annotations

import time

import pytest

from modeldesk.deploy.edge.rules import RuleError, RuleState, check_rule, condition, parse_when
from modeldesk.deploy.edge.sources import SourceError, shown_source, source_kind


def wait_for(check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the condition")


def test_a_watched_folder_processes_each_new_file_once_even_after_a_restart(
    edge_factory, standin_artifact, deploy_helpers, tmp_path
):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "old.png").write_bytes(deploy_helpers.color_image_bytes("red", 1))
    folder = tmp_path / "edge"
    server, client = edge_factory(folder)
    client.post("/v1/edge/models", json={"source": str(standin_artifact), "name": "colors"})
    rule = {"when": {"kind": "label", "label": "red", "score": 0.5}, "cooldown_s": 0}
    pipeline = client.post(
        "/v1/edge/pipelines", json={"source": str(inbox), "model": "colors", "fps": 0, "rules": [rule]}
    ).json()
    assert pipeline["source_kind"] == "folder"
    (inbox / "new.png").write_bytes(deploy_helpers.color_image_bytes("blue", 2))
    (inbox / "later.png").write_bytes(deploy_helpers.color_image_bytes("red", 3))

    def frames():
        return client.get("/v1/edge/pipelines").json()["pipelines"][0]["frames"] == 3

    wait_for(frames)
    time.sleep(1.5)  # a few more polls: nothing is read twice
    assert client.get("/v1/edge/pipelines").json()["pipelines"][0]["frames"] == 3
    events = client.get("/v1/edge/events").json()["events"]
    assert sorted(e["answer"]["file"] for e in events) == ["later.png", "old.png"]
    server.close()

    (inbox / "after.png").write_bytes(deploy_helpers.color_image_bytes("red", 4))
    _, again = edge_factory(folder)
    wait_for(lambda: again.get("/v1/edge/pipelines").json()["pipelines"][0]["frames"] == 1)
    time.sleep(1.5)
    (kept,) = again.get("/v1/edge/pipelines").json()["pipelines"]
    assert kept["frames"] == 1 and kept["last_answer"]["file"] == "after.png"


def test_sources_are_named_by_what_they_are(tmp_path):
    video = tmp_path / "a.mp4"
    video.write_bytes(b"x")
    assert source_kind("camera:0") == "camera"
    assert source_kind("rtsp://10.0.0.5/stream1") == "stream"
    assert source_kind("http://cam.local/video.mjpg") == "stream"
    assert source_kind(str(tmp_path)) == "folder"
    assert source_kind(str(video)) == "file"
    assert shown_source("rtsp://admin:s3cret@10.0.0.5:554/stream1") == "rtsp://admin:***@10.0.0.5:554/stream1"
    assert shown_source("http://cam.local/video.mjpg") == "http://cam.local/video.mjpg"
    for bad in ("camera:front", str(tmp_path / "missing.mp4")):
        with pytest.raises(SourceError):
            source_kind(bad)


def test_rule_conditions_hold_and_cool_down():
    label = check_rule({"when": {"kind": "label", "label": "cat", "score": 0.8}}, ["cat", "dog"])
    assert condition(label["when"], {"label": "cat", "score": 0.9})[0]
    assert not condition(label["when"], {"label": "cat", "score": 0.7})[0]
    assert not condition(label["when"], {"label": "dog", "score": 0.99})[0]
    unsure = check_rule({"when": {"kind": "not_sure", "score": 0.6}})
    assert condition(unsure["when"], {"label": "dog", "score": 0.5})[0]
    assert condition(unsure["when"], {"label": "dog", "score": 0.9, "sure": False})[0]
    assert not condition(unsure["when"], {"label": "dog", "score": 0.9})[0]
    count = check_rule({"when": {"kind": "count", "label": "car", "score": 0.5, "count": 2}})
    boxes = [{"label": "car", "score": 0.9}, {"label": "car", "score": 0.4}, {"label": "bus", "score": 0.9}]
    assert not condition(count["when"], {"boxes": boxes})[0]
    assert condition(count["when"], {"boxes": [*boxes, {"label": "car", "score": 0.6}]})[0]
    anomaly = check_rule({"when": {"kind": "score", "score": 0.7}})
    assert condition(anomaly["when"], {"label": "defect", "score": 0.2, "anomaly_score": 0.8})[0]

    held = RuleState(check_rule({"when": label["when"], "hold_s": 1.0, "cooldown_s": 5}))
    cat = {"label": "cat", "score": 0.95}
    fired = [t for t in (0.0, 0.5, 1.0, 1.5, 2.0, 6.0, 6.5) if held.update(cat, t)[0]]
    assert fired == [1.0, 6.0]  # held 1 s, then quiet for 5 s
    assert not held.update({"label": "dog", "score": 0.9}, 12.0)[0]
    assert not held.update(cat, 12.5)[0]  # the hold starts again after a miss

    with pytest.raises(RuleError, match="no label 'bird'"):
        check_rule({"when": {"kind": "label", "label": "bird"}}, ["cat", "dog"])
    with pytest.raises(RuleError, match="webhook"):
        check_rule({"when": label["when"], "actions": [{"type": "webhook", "url": "file:///etc/passwd"}]})
    assert parse_when("person >= 0.8") == {"kind": "label", "label": "person", "score": 0.8}
    with pytest.raises(RuleError):
        parse_when("person>=high")


def test_console_reads_device_logs_and_stats(edge_factory, standin_artifact, deploy_helpers):
    token = "a-long-enough-token-456"
    server, client = edge_factory(token=token, server_options={"token": token})
    auth = {"Authorization": f"Bearer {token}"}
    client.post("/v1/edge/models", json={"source": str(standin_artifact), "name": "colors"}, headers=auth)
    image = deploy_helpers.color_image_bytes("green", 5)
    client.post("/v1/models/colors/predict", files={"file": ("a.png", image, "image/png")}, headers=auth)
    bad = client.post(
        "/v1/models/colors/predict", files={"file": ("b.png", b"not an image", "image/png")}, headers=auth
    )
    assert bad.status_code == 422
    import logging

    logging.getLogger("modeldesk.deploy.edge").warning("a message that names %s by mistake", token)
    lines = client.get("/v1/edge/logs", params={"lines": 50}).json()["lines"]
    assert any("added model colors version 1" in line for line in lines)
    assert not any(token in line for line in lines) and any("***" in line for line in lines)
    device = client.get("/v1/edge/device").json()
    assert device["cpu_count"] >= 1 and device["memory"]["total"] > device["memory"]["used"] > 0
    assert isinstance(device["gpus"], list)
    (model,) = client.get("/v1/edge/stats").json()["models"]
    totals = [sum(p[k] for p in model["series"]) for k in ("requests", "errors")]
    assert (model["name"], model["version"], totals) == ("colors", 1, [2, 1])
    metrics = client.get("/metrics").text
    assert 'edge_request_errors_total{model="colors",protocol="v1",version="1"} 1.0' in metrics
    assert 'edge_request_latency_seconds_count{model="colors",protocol="v1",version="1"} 1.0' in metrics


def test_a_watched_folder_that_goes_away_is_waited_for(
    edge_factory, standin_artifact, deploy_helpers, tmp_path
):
    inbox = tmp_path / "share"
    inbox.mkdir()
    _, client = edge_factory()
    client.post("/v1/edge/models", json={"source": str(standin_artifact), "name": "colors"})
    client.post("/v1/edge/pipelines", json={"source": str(inbox), "model": "colors", "fps": 0})

    def state():
        return client.get("/v1/edge/pipelines").json()["pipelines"][0]

    wait_for(lambda: state()["state"] == "running")  # watching, with no file yet
    inbox.rmdir()
    found = wait_for(lambda: state()["state"] == "reconnecting" and state())
    assert "gone" in found["last_error"]
    inbox.mkdir()
    (inbox / "back.png").write_bytes(deploy_helpers.color_image_bytes("red", 7))
    found = wait_for(lambda: state()["frames"] == 1 and state())
    assert found["last_answer"]["file"] == "back.png" and found["state"] == "running"

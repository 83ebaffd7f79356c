"""Pipelines: rules fire on the right frames of a video, events and configuration survive a restart,
a stream that drops its connection is reconnected."""

from __future__ import annotations

import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image


def wait_for(check, timeout: float = 60.0, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("timed out waiting for the condition")


@pytest.fixture
def video(tmp_path, edge_helpers):
    """35 frames at 10 fps: red on frames 10-19 and 30-34, blue elsewhere."""
    red = set(range(10, 20)) | set(range(30, 35))
    colors = [edge_helpers.RED if i in red else edge_helpers.BLUE for i in range(35)]
    return edge_helpers.write_video(tmp_path / "line.mp4", colors), red


def finished(client, pipeline_id):
    (found,) = [p for p in client.get("/v1/edge/pipelines").json()["pipelines"] if p["id"] == pipeline_id]
    return found if found["state"] in ("finished", "failed") else None


def test_a_rule_fires_on_the_frames_showing_its_label_and_only_there(edge_factory, standin_artifact, video):
    path, red = video
    _, client = edge_factory()
    client.post("/v1/edge/models", json={"source": str(standin_artifact), "name": "colors"})
    rules = [
        {"when": {"kind": "label", "label": "red", "score": 0.8}, "hold_frames": 1, "cooldown_s": 0},
        {"when": {"kind": "label", "label": "red", "score": 0.8}, "hold_frames": 3, "cooldown_s": 0},
        {"when": {"kind": "label", "label": "red", "score": 0.8}, "hold_frames": 1, "cooldown_s": 100},
    ]
    created = client.post(
        "/v1/edge/pipelines", json={"source": path, "model": "colors", "fps": 0, "rules": rules}
    )
    assert created.status_code == 200, created.text
    pipeline = created.json()
    assert pipeline["source_kind"] == "file"
    done = wait_for(lambda: finished(client, pipeline["id"]))
    assert done["state"] == "finished" and done["frames"] == 35 and done["dropped"] == 0

    events = client.get("/v1/edge/events", params={"limit": 1000}).json()["events"]
    by_rule = {}
    for event in events:
        by_rule.setdefault(event["rule"], []).append(event["answer"]["frame"])
        assert event["label"] == "red" and event["score"] >= 0.8 and event["model"] == "colors"
    every, held, cooled = (sorted(by_rule.get(r["id"], [])) for r in pipeline["rules"])
    assert every == sorted(red)
    assert held == [*range(12, 20), *range(32, 35)]  # the third red frame in a row, and on
    assert cooled == [10]  # once, then the cool-down (100 s of video) keeps it quiet
    times = [e["time"] for e in events]
    assert times == sorted(times, reverse=True)  # newest first
    snapshot = client.get(events[0]["snapshot"])
    assert snapshot.status_code == 200 and Image.open(io.BytesIO(snapshot.content)).size == (96, 80)
    frame = client.get(f"/v1/edge/pipelines/{pipeline['id']}/frame.jpg")
    assert frame.status_code == 200 and frame.headers["content-type"] == "image/jpeg"


def test_a_frame_rate_cap_samples_the_video_and_actions_run(edge_factory, standin_artifact, video, tmp_path):
    path, red = video
    _, client = edge_factory()
    client.post("/v1/edge/models", json={"source": str(standin_artifact), "name": "colors"})
    jsonl, csv_file, frames = tmp_path / "events.jsonl", tmp_path / "events.csv", tmp_path / "frames"
    posted = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            posted.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    hook = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    rule = {
        "when": {"kind": "label", "label": "red", "score": 0.8},
        "cooldown_s": 0,
        "actions": [
            {"type": "jsonl", "path": str(jsonl)},
            {"type": "csv", "path": str(csv_file)},
            {"type": "save_frame", "folder": str(frames)},
            {"type": "webhook", "url": f"http://127.0.0.1:{hook.server_address[1]}/events"},
        ],
    }
    pipeline = client.post(
        "/v1/edge/pipelines", json={"source": path, "model": "colors", "fps": 2, "rules": [rule]}
    ).json()
    done = wait_for(lambda: finished(client, pipeline["id"]))
    assert done["frames"] == 7  # every fifth frame of 35 at 10 fps
    expected = sorted(i for i in range(0, 35, 5) if i in red)
    wait_for(lambda: jsonl.exists() and len(jsonl.read_text().splitlines()) == len(expected))
    wait_for(lambda: frames.exists() and len(list(frames.glob("*.jpg"))) == len(expected))
    lines = csv_file.read_text().splitlines()
    assert lines[0].startswith("id,time,source") and len(lines) == 1 + len(expected)
    wait_for(lambda: len(posted) == len(expected))
    hook.shutdown()
    hook.server_close()
    assert sorted(p["answer"]["frame"] for p in posted) == expected
    assert all(p["label"] == "red" and p["snapshot"].endswith("/snapshot.jpg") for p in posted)


def test_events_models_and_pipelines_survive_a_restart(edge_factory, standin_artifact, video, tmp_path):
    path, red = video
    server, client = edge_factory(tmp_path / "kept")
    client.post("/v1/edge/models", json={"source": str(standin_artifact), "name": "colors"})
    client.post("/v1/edge/models", json={"source": str(standin_artifact), "name": "colors"})
    client.post("/v1/edge/models/colors/live", json={"version": 2})
    rule = {"when": {"kind": "label", "label": "red", "score": 0.8}, "cooldown_s": 0}
    pipeline = client.post(
        "/v1/edge/pipelines", json={"source": path, "model": "colors", "fps": 0, "rules": [rule]}
    ).json()
    wait_for(lambda: finished(client, pipeline["id"]))
    before = client.get("/v1/edge/events", params={"limit": 1000}).json()["events"]
    assert len(before) == len(red) and {e["version"] for e in before} == {2}
    server.close()

    _, again = edge_factory(tmp_path / "kept")  # a file read to its end is not read again
    models = again.get("/v1/edge/models").json()["models"]
    assert [(m["name"], m["live_version"], len(m["versions"])) for m in models] == [("colors", 2, 2)]
    (kept,) = again.get("/v1/edge/pipelines").json()["pipelines"]
    assert kept["id"] == pipeline["id"] and kept["rules"] == pipeline["rules"] and kept["source"] == path
    assert kept["state"] == "stopped" and kept["frames"] == 0
    after = again.get("/v1/edge/events", params={"limit": 1000}).json()["events"]
    assert after == before
    assert again.get(after[-1]["snapshot"]).status_code == 200
    assert again.get("/v1/edge/status").json()["events_total"] == len(red)


def test_old_events_go_past_the_retention_limit(tmp_path):
    from modeldesk.deploy.edge.store import EdgeStore, now_iso

    store = EdgeStore(tmp_path, max_events=10)
    for i in range(120):
        store.add_event({"time": now_iso(), "label": str(i)}, None)
    kept = store.events(limit=1000)
    assert len(kept) == 10 and kept[0]["label"] == "119" and kept[-1]["label"] == "110"
    store.close()


class MJPEGServer:
    """A local MJPEG stream (multipart/x-mixed-replace) that drops each connection after a few frames."""

    def __init__(self, frames_per_connection: int = 6):
        outer = self
        self.connections = 0
        buffer = io.BytesIO()
        Image.new("RGB", (64, 48), (200, 40, 40)).save(buffer, "JPEG")
        jpeg = buffer.getvalue()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.connections += 1
                self.send_response(200)
                self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
                self.end_headers()
                for _ in range(frames_per_connection):
                    self.wfile.write(
                        b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(jpeg)
                        + jpeg
                        + b"\r\n"
                    )
                    self.wfile.flush()
                    time.sleep(0.03)
                # returning closes the connection mid-stream: the camera "died"

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://viewer:s3cret-pass@127.0.0.1:{self.httpd.server_address[1]}/stream.mjpg"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_stream_that_dies_is_reconnected_and_shows_it(edge_factory, standin_artifact):
    stream = MJPEGServer()
    try:
        server, client = edge_factory()
        client.post("/v1/edge/models", json={"source": str(standin_artifact), "name": "colors"})
        pipeline = client.post(
            "/v1/edge/pipelines", json={"source": stream.url, "model": "colors", "fps": 0}
        ).json()
        assert pipeline["source_kind"] == "stream"
        states = set()

        def reconnected_twice():
            found = client.get("/v1/edge/pipelines").json()["pipelines"][0]
            states.add(found["state"])
            return stream.connections >= 3 and found["frames"] > 6 and found

        found = wait_for(reconnected_twice, every=0.02)
        assert "reconnecting" in states or found["last_error"]
        assert found["state"] in ("running", "reconnecting")
        assert client.get("/healthz").json() == {"ok": True}  # the server is fine
        shown = [client.get(p).text for p in ("/v1/edge/status", "/metrics", "/v1/edge/logs")]
        assert all("s3cret-pass" not in text for text in shown) and "viewer:***@" in shown[0]
        assert (
            'edge_source_reconnects_total{{pipeline="{}"}}'.format(pipeline["id"])
            in client.get("/metrics").text
        )
        assert client.post(f"/v1/edge/pipelines/{pipeline['id']}/stop").json()["state"] == "stopped"
    finally:
        stream.close()

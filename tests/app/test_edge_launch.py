"""Put to work for real: ``modeldesk edge serve`` in its own process, a trained model on a video made here,
the rule firing on the shape it names and on no other, the token required for changes, then stopped."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from modeldesk.app.edge_launch import EdgeError, EdgeProcess, put_to_work
from modeldesk.app.sample_data import make_shape_image, make_shapes_folder
from modeldesk.app.workspace import Workspace

FPS = 10


def write_video(path, script, seed=11, size=96) -> None:
    """An MPEG-4 video: for each (shape, frames) of ``script``, that many drawings of the shape."""
    import av

    rng = np.random.default_rng(seed)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=FPS)
        stream.width = stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.bit_rate = 1_000_000
        for shape, frames in script:
            for _ in range(frames):
                frame = np.asarray(make_shape_image(shape, rng, size))
                for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("edge-launch")
    ws = Workspace(root / "ws")
    ws.create_project("Shapes", "image-classification")
    ws.import_data("Shapes", make_shapes_folder(root / "images", 16, seed=5, classes=("circle", "square")))
    model = ws.train("Shapes", "image-classification/fast")["model"]
    yield ws, model, root
    ws.jobs.close()
    ws.close()


def _wait(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_put_to_work_runs_the_model_on_a_video_and_the_rule_fires_on_its_label(trained):
    ws, model, root = trained
    video = root / "line.mp4"
    write_video(video, [("square", 15), ("circle", 15), ("square", 15)])
    edge = EdgeProcess.start(ws.paths.root)
    try:
        assert edge.running and edge.console_url.endswith(f"?token={edge.token}")
        with urllib.request.urlopen(edge.url, timeout=10) as page:
            assert b"static/edge.js" in page.read()  # the console
        # a change without the token is refused: the app's server is not open to other local programs
        refused = urllib.request.Request(edge.url + "v1/edge/models", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refusal:
            urllib.request.urlopen(refused, timeout=10)
        assert refusal.value.code == 401

        result = put_to_work(
            ws,
            model,
            project="Shapes",
            source=str(video),
            label="circle",
            score=0.7,
            hold_frames=2,
            cooldown_s=0.0,
            edge=edge,
        )
        assert result["edge"] is edge and (result["name"], result["version"]) == ("shapes", 1)
        pipeline = result["pipeline"]["id"]
        _wait(
            lambda: any(
                p["id"] == pipeline and p["state"] == "finished"
                for p in edge.call("GET", "v1/edge/pipelines")["pipelines"]
            )
        )
        events = edge.call("GET", f"v1/edge/events?pipeline={pipeline}&limit=100")["events"]
        assert events and {e["label"] for e in events} == {"circle"}
        # frames 15..29 show the circle: with 2 frames held, every event is at frame 16..29
        frames = [e["answer"].get("frame") for e in events]
        assert all(16 <= f <= 29 for f in frames), frames

        # the model is already live: a second source reuses it instead of adding version 2
        again = put_to_work(
            ws, model, project="Shapes", source=str(video), label="square", score=0.7, edge=edge
        )
        assert again["version"] == 1
        assert [len(m["versions"]) for m in edge.call("GET", "v1/edge/models")["models"]] == [1]
        with pytest.raises(EdgeError, match="source"):
            put_to_work(ws, model, project="Shapes", source="  ", label="circle", score=0.7, edge=edge)
    finally:
        edge.stop()
    assert not edge.running

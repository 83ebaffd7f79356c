"""``modeldesk edge add|watch|events|status`` against a real edge server on a loopback port."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from modeldesk.app import edge
from modeldesk.app.cli import main


@pytest.fixture
def standin_artifact(tmp_path):
    """The deploy tests' stand-in colour classifier (a mostly red picture is "red")."""
    import importlib.util
    from pathlib import Path

    from modeldesk.deploy.artifact import save_artifact

    spec = importlib.util.spec_from_file_location(
        "deploy_conftest", Path(__file__).parents[1] / "deploy" / "conftest.py"
    )
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    return save_artifact(tmp_path / "standin", helpers.build_standin_model(), helpers.standin_card())


@pytest.fixture
def running_edge(tmp_path):
    """An edge server for the workspace ``tmp_path/ws`` on a free port, its address written as `edge serve` does."""
    import uvicorn

    from modeldesk.app.service_handle import free_port
    from modeldesk.deploy.edge.app import create_edge_app
    from modeldesk.deploy.edge.server import EdgeServer
    from modeldesk.deploy.server import server_config

    root = tmp_path / "ws"
    root.mkdir()
    port = free_port()
    server = EdgeServer(edge.edge_folder(root), resolve=edge.workspace_resolver(root))
    uv = uvicorn.Server(server_config(create_edge_app(server), "127.0.0.1", port, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    while not uv.started:
        time.sleep(0.02)
    edge.write_address(root, "127.0.0.1", port)
    yield root
    uv.should_exit = True
    thread.join(10)
    server.close()


def run(capsys, *argv):
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def red_blue_video(path, red_frames, count=20):
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 96, 80, "yuv420p"
        for i in range(count):
            pixels = np.empty((80, 96, 3), np.uint8)
            pixels[:] = (200, 40, 40) if i in red_frames else (40, 60, 200)
            for packet in stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return str(path)


def test_add_watch_events_and_status_from_the_command_line(running_edge, tmp_path, capsys, standin_artifact):
    ws = ["--workspace", str(running_edge)]
    assert run(capsys, *ws, "edge", "add", str(standin_artifact), "--name", "colors") == {
        "name": "colors",
        "version": 1,
    }
    assert run(capsys, *ws, "edge", "add", str(standin_artifact), "--name", "colors")["version"] == 2
    video = red_blue_video(tmp_path / "line.mp4", red_frames=set(range(5, 9)))
    pipeline = run(
        capsys,
        *ws,
        "edge",
        "watch",
        "colors",
        "--source",
        video,
        "--when",
        "red>=0.8",
        "--hold",
        "2",
        "--fps",
        "0",
        "--cooldown",
        "0",
    )
    assert pipeline["rules"][0]["when"] == {"kind": "label", "label": "red", "score": 0.8}
    deadline = time.monotonic() + 60
    while run(capsys, *ws, "edge", "status")["pipelines"][0]["state"] != "finished":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    events = run(capsys, *ws, "edge", "events")["events"]
    assert [e["answer"]["frame"] for e in events] == [8, 7, 6]  # newest first; red frames 5-8, held 2
    for event in events:
        assert {"time", "source", "model", "label", "score"} <= set(event)
        assert (event["source"], event["model"], event["label"]) == (video, "colors", "red")
    status = run(capsys, *ws, "edge", "status")
    assert status["models"][0]["live_version"] == 1 and status["events_total"] == 3


def test_a_bad_rule_or_an_absent_server_is_said_in_one_line(tmp_path, capsys):
    code = main(["--workspace", str(tmp_path / "ws"), "edge", "status", "--url", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 1 and "no edge server answers at http://127.0.0.1:9" in err and "edge serve" in err
    assert edge.default_url(tmp_path / "nowhere") == f"http://127.0.0.1:{edge.DEFAULT_PORT}"


def test_a_workspace_model_is_added_by_its_id_and_listed(tmp_path, shapes_folder, capsys):
    from modeldesk.deploy.edge.server import EdgeServer

    root = tmp_path / "ws"
    ws = ["--workspace", str(root)]
    run(capsys, *ws, "project", "create", "shapes", "--task", "image-classification")
    run(capsys, *ws, "import", "shapes", str(shapes_folder))
    model_id = run(capsys, *ws, "train", "shapes", "--template", "image-classification/fast")["model"]
    server = EdgeServer(
        edge.edge_folder(root),
        resolve=edge.workspace_resolver(root),
        workspace_models=edge.workspace_lister(root),
    )
    try:
        listed = server.list_workspace_models()
        assert [(m["id"], m["project"], m["task"]) for m in listed] == [
            (model_id, "shapes", "image-classification")
        ]
        assert server.add_model(model_id, "shapes") == {"name": "shapes", "version": 1}
        (model,) = server.registry.describe()
        assert model["versions"][0]["model_id"] == model_id and model["versions"][0]["source"] == model_id
        with pytest.raises(ValueError, match="no model .m-does-not-exist."):
            server.add_model("m-does-not-exist", "x")
    finally:
        server.close()

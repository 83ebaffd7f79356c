"""Put to work for real: ``modeldesk edge serve`` in its own process, a trained model on a video made here,
the rule firing on the shape it names and on no other, the token required for changes, then stopped.

Then the console in a real browser (headless Chromium, driven over the DevTools protocol with the standard
library; skipped where Chromium is not installed): a refused change says what to do; with the token a model
is added from the workspace list and attached to the video with a rule written in the form; it fires."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

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
        # ... and replaces the pipeline on the same source, keeping its events
        (only,) = [p for p in edge.call("GET", "v1/edge/pipelines")["pipelines"] if p["source"] == str(video)]
        assert only["id"] == again["pipeline"]["id"] and only["rules"][0]["when"]["label"] == "square"
        assert len(edge.call("GET", f"v1/edge/events?pipeline={pipeline}&limit=100")["events"]) == len(events)
        with pytest.raises(EdgeError, match="source"):
            put_to_work(ws, model, project="Shapes", source="  ", label="circle", score=0.7, edge=edge)
    finally:
        edge.stop()
    assert not edge.running


BROWSER = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
)
needs_browser = pytest.mark.skipif(
    BROWSER is None, reason="headless Chromium is not installed (no dependency)"
)


class DevTools:
    """The smallest DevTools-protocol client: one page, JSON over a WebSocket (RFC 6455 client frames)."""

    def __init__(self, ws_url: str):
        host_port, path = ws_url.split("//", 1)[1].split("/", 1)
        host, port = host_port.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += self.sock.recv(1)
        assert b" 101 " in reply.split(b"\r\n")[0], reply
        self.next_id = 0

    def _send(self, text: str) -> None:
        data, mask = text.encode(), os.urandom(4)
        n = len(data)
        head = bytes([0x81]) + (
            bytes([0x80 | n])
            if n < 126
            else bytes([0x80 | 126]) + n.to_bytes(2, "big")
            if n < 65536
            else bytes([0x80 | 127]) + n.to_bytes(8, "big")
        )
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            out += chunk
        return out

    def _receive(self) -> dict:
        message = b""
        while True:
            first, second = self._exactly(2)
            n = second & 0x7F
            if n == 126:
                n = int.from_bytes(self._exactly(2), "big")
            elif n == 127:
                n = int.from_bytes(self._exactly(8), "big")
            message += self._exactly(n)
            if first & 0x80:  # the last fragment
                return json.loads(message)

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self._send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = self._receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def js(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && document.getElementById('status-text') !== null")

    def wait(self, expression: str, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"never true in the page: {expression}")

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))


@pytest.fixture
def browser(tmp_path):
    profile = tempfile.mkdtemp(prefix="edge-chromium-")
    process = subprocess.Popen(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--remote-debugging-port=0",
            "--window-size=1400,1000",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        active = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (active.exists() and active.read_text().strip()):
            assert time.monotonic() < deadline and process.poll() is None, "Chromium did not start"
            time.sleep(0.1)
        port = active.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            page = next(t for t in json.loads(response.read()) if t["type"] == "page")
        tools = DevTools(page["webSocketDebuggerUrl"])
        tools.call("Page.enable")
        yield tools
    finally:
        process.terminate()
        process.wait(timeout=20)
        shutil.rmtree(profile, ignore_errors=True)


def _set(field: str, value) -> str:
    """JS that sets a form field as a person would (the events the page listens to fire)."""
    return (
        f"(() => {{ const e = {field}; e.value = {json.dumps(value)};"
        " e.dispatchEvent(new Event('input', {bubbles: true}));"
        " e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()"
    )


@needs_browser
def test_the_console_adds_a_model_and_watches_a_video_with_a_rule_from_the_form(browser, trained, tmp_path):
    ws, model, _root = trained
    video = tmp_path / "line.mp4"
    write_video(video, [("square", 15), ("circle", 15), ("square", 15)])
    journal = tmp_path / "events.jsonl"
    edge = EdgeProcess.start(ws.paths.root)
    try:
        # without the token: the page loads, but a change is refused with what to do
        browser.open(edge.url)
        browser.wait("document.getElementById('ws-model').options.length === 1")
        browser.js("document.querySelector('#add-model button[type=submit]').click()")
        notice = browser.wait(
            "!document.getElementById('notice').hidden && document.getElementById('notice-text').textContent"
        )
        assert "access token" in notice and "top right" in notice
        assert browser.js("document.getElementById('token-form').classList.contains('needed')")
        assert "line" not in {m["name"] for m in edge.call("GET", "v1/edge/models")["models"]}
        browser.screenshot(tmp_path / "refused.png")

        # with ?token= the page keeps it for the session and takes it out of the address bar
        browser.open(edge.console_url)
        assert browser.js("location.search") == ""
        browser.wait("document.getElementById('ws-model').options.length === 1")
        assert browser.js("document.getElementById('ws-model').value") == model
        assert browser.js("document.getElementById('model-name').value") == "shapes"  # from the project
        browser.js(_set("document.getElementById('model-name')", "line"))
        browser.js("document.querySelector('#add-model button[type=submit]').click()")
        browser.wait("document.getElementById('pipeline-model').value === 'line'")

        # the rule form offers the model's labels; the choices go to the server as a rule
        assert browser.js(
            "[...document.querySelectorAll('#rule-slot [data-r=label] option')].map(o => o.value)"
        ) == [
            "circle",
            "square",
        ]
        browser.js(_set("document.getElementById('source')", str(video)))
        browser.js(_set("document.getElementById('fps')", "10"))
        browser.js(_set("document.querySelector('#rule-slot [data-r=label]')", "circle"))
        browser.js(_set("document.querySelector('#rule-slot [data-r=score]')", "0.7"))
        browser.js(_set("document.querySelector('#rule-slot [data-r=hold]')", "2"))
        browser.js(_set("document.querySelector('#rule-slot [data-r=cooldown]')", "0"))
        browser.js("document.querySelector('#rule-slot [data-a=jsonl]').click()")
        browser.js(_set("document.querySelector('#rule-slot [data-p=jsonl]')", str(journal)))
        assert browser.js("document.querySelector('#rule-slot [data-r=score-value]').textContent") == "70%"
        browser.screenshot(tmp_path / "form.png")
        browser.js("document.querySelector('#add-pipeline button[type=submit]').click()")
        browser.wait("document.getElementById('notice-text').textContent.startsWith('Started')")

        (pipeline,) = [
            p for p in edge.call("GET", "v1/edge/pipelines")["pipelines"] if p["source"] == str(video)
        ]
        (rule,) = pipeline["rules"]
        assert (pipeline["source"], pipeline["model"], pipeline["fps_cap"]) == (str(video), "line", 10)
        assert rule["when"]["kind"] == "label" and rule["when"]["label"] == "circle"
        assert rule["when"]["score"] == pytest.approx(0.7)
        assert (rule["hold_frames"], rule["cooldown_s"]) == (2, 0)
        assert rule["actions"] == [{"type": "jsonl", "path": str(journal)}]

        deadline = time.monotonic() + 60
        mine = "v1/edge/pipelines"
        while (
            next(p for p in edge.call("GET", mine)["pipelines"] if p["id"] == pipeline["id"])["state"]
            != "finished"
        ):
            assert time.monotonic() < deadline, "the video never finished"
            time.sleep(0.2)
        events = edge.call("GET", f"v1/edge/events?pipeline={pipeline['id']}&limit=100")["events"]
        assert events and {e["label"] for e in events} == {"circle"}
        # the page lists them, with their snapshots (filtered to this pipeline)
        browser.js("location.hash = 'events'")
        browser.js(_set("document.getElementById('f-pipeline')", pipeline["id"]))
        shown = browser.wait(
            "document.querySelectorAll('#events .event').length > 0 && "
            "[...document.querySelectorAll('#events .event img')].every(i => i.complete && i.naturalWidth > 0)"
            " && document.querySelectorAll('#events .event').length"
        )
        assert shown == len(events)
        browser.screenshot(tmp_path / "events.png")
        # filters: a label the rule never fired on lists nothing; the last 15 minutes list them all again
        browser.js(_set("document.getElementById('f-label')", "square"))
        browser.wait("!document.getElementById('events-empty').hidden")
        assert browser.js("document.querySelectorAll('#events .event').length") == 0
        browser.js(_set("document.getElementById('f-label')", "circle"))
        browser.js(_set("document.getElementById('f-since')", "15"))
        assert browser.wait("document.querySelectorAll('#events .event').length") == len(events)
        # the rule's action wrote one line per event
        _wait_lines = time.monotonic() + 10
        while len(journal.read_text().splitlines()) < len(events) and time.monotonic() < _wait_lines:
            time.sleep(0.2)
        assert len(journal.read_text().splitlines()) == len(events)

        # a second version, then "Make live" switches to it from the page
        browser.js("location.hash = 'overview'")
        browser.js("document.querySelector('#add-model button[type=submit]').click()")
        line = "[...document.querySelectorAll('.model')].find(m => m.querySelector('.model-name').textContent === 'line')"
        browser.wait(f"{line}.querySelectorAll('.model-versions option').length === 2")
        browser.js(_set(f"{line}.querySelector('.model-versions select')", "2"))
        browser.js(f"{line}.querySelector('.model-versions button').click()")
        browser.wait("document.getElementById('notice-text').textContent.startsWith('Switched')")
        models = {m["name"]: m for m in edge.call("GET", "v1/edge/models")["models"]}
        assert models["line"]["live_version"] == 2
    finally:
        edge.stop()

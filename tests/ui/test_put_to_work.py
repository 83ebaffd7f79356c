"""Deploy's "Put to work": the source, the rule from the model's labels, the edge server's calls, the console.

The edge server is a recorded fake at the app boundary (``EdgeProcess``): what is under test is what
the page asks of it from the user's choices, off the UI thread, and what it shows and opens after.
"""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QDesktopServices

from modeldesk.app import edge_launch
from modeldesk.app.workspace import Workspace
from modeldesk.ui.pages.deploy import DeployPage


@pytest.fixture(scope="module")
def trained(tmp_path_factory, make_images):
    root = tmp_path_factory.mktemp("put-to-work")
    ws = Workspace(root / "ws")
    ws.create_project("Hand signs", "image-classification")
    ws.import_data("Hand signs", make_images(root / "data", {"thumb": 6, "palm": 6}, size=48))
    model = ws.train("Hand signs", "image-classification/fast")["model"]
    yield ws, model
    ws.jobs.close()
    ws.close()


class FakeEdge:
    """Answers as EDGE_API.md says; records every call and the thread it came from."""

    def __init__(self):
        self.calls: list[tuple[str, str, dict | None]] = []
        self.threads: set[str] = set()
        self.models: dict[str, dict] = {}
        self.pipelines: list[dict] = []
        self.url = "http://127.0.0.1:9999/"
        self.token = "t0ken-for-the-test-only"
        self.stopped = False

    running = property(lambda self: not self.stopped)
    console_url = property(lambda self: f"{self.url}?token={self.token}")

    def call(self, method, path, body=None, timeout=30.0):
        self.calls.append((method, path, body))
        self.threads.add(threading.current_thread().name)
        if (method, path) == ("GET", "v1/edge/models"):
            return {"models": list(self.models.values())}
        if (method, path) == ("POST", "v1/edge/models"):
            model = self.models.setdefault(
                body["name"], {"name": body["name"], "live_version": 1, "versions": []}
            )
            version = len(model["versions"]) + 1
            model["versions"].append({"version": version, "model_id": body["source"]})
            return {"name": body["name"], "version": version}
        if (method, path) == ("POST", "v1/edge/pipelines"):
            self.pipelines.append(dict(body, id=f"p{len(self.calls)}", state="running"))
            return self.pipelines[-1]
        if (method, path) == ("GET", "v1/edge/pipelines"):
            return {"pipelines": list(self.pipelines)}
        raise AssertionError(f"unexpected call {method} {path}")

    def stop(self, timeout=5.0):
        self.stopped = True


@pytest.fixture
def fake_edge(monkeypatch):
    started = []

    def start(cls, workspace_root, **kwargs):
        edge = FakeEdge()
        started.append((edge, workspace_root))
        return edge

    monkeypatch.setattr(edge_launch.EdgeProcess, "start", classmethod(start))
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()) or True)
    return started, opened


@pytest.fixture
def page(qtbot, trained, open_page):
    widget = open_page(DeployPage, trained[0])
    widget.set_project("Hand signs")
    qtbot.waitUntil(lambda: widget.loaded and widget.put_to_work.label.count() > 0, timeout=10000)
    return widget


def test_the_rule_offers_the_model_s_own_labels(page):
    card = page.put_to_work
    labels = [card.label.itemText(i) for i in range(card.label.count())]
    assert sorted(labels) == ["palm", "thumb"]
    assert card.button.isEnabled()
    assert not card.console_button.isEnabled()  # nothing is running yet


def test_put_to_work_starts_the_pipeline_with_the_rule_and_opens_the_console(
    qtbot, page, trained, fake_edge, tmp_path
):
    ws, model = trained
    started, opened = fake_edge
    card = page.put_to_work
    video = tmp_path / "line.mp4"
    video.write_bytes(b"not decoded here")
    card.kind.setCurrentIndex(card.kind.findData("file"))
    card.address.setText(str(video))
    card.label.setCurrentText("palm")
    card.score.setValue(65)
    qtbot.mouseClick(card.button, Qt.LeftButton)
    qtbot.waitUntil(lambda: bool(opened), timeout=10000)

    edge, root = started[0]
    assert root == ws.paths.root  # the server reads the app's own workspace
    assert "MainThread" not in edge.threads  # the UI thread never waited on the server
    added = [body for method, path, body in edge.calls if path == "v1/edge/models" and method == "POST"]
    assert added == [{"source": model, "name": "hand-signs"}]
    (pipeline,) = [
        body for method, path, body in edge.calls if (method, path) == ("POST", "v1/edge/pipelines")
    ]
    assert pipeline["source"] == str(video) and pipeline["model"] == "hand-signs" and pipeline["start"]
    (rule,) = pipeline["rules"]
    assert rule["when"] == {"kind": "label", "label": "palm", "score": 0.65}
    assert opened == [f"{edge.url}?token={edge.token}"]
    assert "palm" in card.state.text() and "65%" in card.state.text()
    assert card.console_button.isEnabled()

    # a second source reuses the running server and the model already added
    card.kind.setCurrentIndex(card.kind.findData("stream"))
    card.address.setText("rtsp://10.0.0.5/stream1")
    qtbot.mouseClick(card.button, Qt.LeftButton)
    qtbot.waitUntil(lambda: len(opened) == 2, timeout=10000)
    assert len(started) == 1
    assert [path for method, path, _ in edge.calls if method == "POST"] == [
        "v1/edge/models",
        "v1/edge/pipelines",
        "v1/edge/pipelines",
    ]
    assert edge.calls[-1][2]["source"] == "rtsp://10.0.0.5/stream1"

    page.shutdown()
    assert edge.stopped  # closing the app stops the server it started


def test_an_empty_source_is_said_and_nothing_starts(qtbot, page, fake_edge, monkeypatch):
    started, _ = fake_edge
    said = []
    monkeypatch.setattr(page.put_to_work, "report_error", lambda title, message, *a: said.append(message))
    card = page.put_to_work
    card.kind.setCurrentIndex(card.kind.findData("stream"))
    card.address.setText("  ")
    qtbot.mouseClick(card.button, Qt.LeftButton)
    assert said and "stream address" in said[0]
    assert not started


def test_a_refusal_from_the_server_is_shown(qtbot, page, fake_edge, monkeypatch):
    said = []
    monkeypatch.setattr(page.put_to_work, "report_error", lambda title, message, *a: said.append(message))

    answer = FakeEdge.call

    def refuse(self, method, path, body=None, timeout=30.0):
        if path == "v1/edge/pipelines":
            raise edge_launch.EdgeError("The edge server refused POST /v1/edge/pipelines: no such file")
        return answer(self, method, path, body, timeout)

    monkeypatch.setattr(FakeEdge, "call", refuse)
    card = page.put_to_work
    card.kind.setCurrentIndex(card.kind.findData("folder"))
    card.address.setText("/nowhere/at/all")
    qtbot.mouseClick(card.button, Qt.LeftButton)
    qtbot.waitUntil(lambda: bool(said), timeout=10000)
    assert "no such file" in said[0]
    assert card.button.isEnabled() and card.button.text() == "Put to work"


def _put_to_work_for(facts: dict, qtbot, ws, open_page, monkeypatch):
    """The Deploy page's "Put to work" card for a model with these ``facts`` (``edge_launch.model_facts``)."""
    monkeypatch.setattr(edge_launch, "model_facts", lambda ws, model_id: facts)
    page = open_page(DeployPage, ws)
    page.set_project("Hand signs")
    qtbot.waitUntil(lambda: page.loaded and page.put_to_work.label.count() > 0, timeout=10000)
    return page.put_to_work


def test_a_model_that_reads_no_pictures_is_offered_a_folder_only(qtbot, trained, open_page, monkeypatch):
    ws, model = trained
    assert edge_launch.model_facts(ws, model)["pictures"]  # the trained model reads photos
    facts = {"labels": ["yes", "no"], "pictures": False, "noun": "clip"}
    card = _put_to_work_for(facts, qtbot, ws, open_page, monkeypatch)
    offered = [card.kind.itemData(i) for i in range(card.kind.count())]
    assert offered == ["folder"]  # a video, a camera or a stream carries pictures only
    assert "clip" in card.address.placeholderText() and "clip" in card.about.text()
    assert card.rule_words.text() == "Note when it says"


def test_an_anomaly_model_s_rule_starts_on_defect(qtbot, trained, open_page, monkeypatch):
    """Its labels are good and defect: a rule noting each good part would be the wrong way round."""
    ws, _model = trained
    facts = {"labels": ["good", "defect"], "pictures": True, "noun": "photo"}
    card = _put_to_work_for(facts, qtbot, ws, open_page, monkeypatch)
    assert card.label.currentText() == "defect"


def test_another_project_s_deploy_page_starts_at_its_top(qtbot, page):
    """Left scrolled down to the export card, the page showed the next project from the middle."""
    page.resize(700, 400)
    page.show()
    bar = page.scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=5000)
    bar.setValue(bar.maximum())
    page.set_project(None)
    assert bar.value() == 0

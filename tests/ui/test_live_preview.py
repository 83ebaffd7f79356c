"""Deploy's try-it "Live" mode: the model runs on generated camera frames and microphone blocks, one
prediction at a time (frames that come meanwhile are dropped), the answer updating in place."""

from __future__ import annotations

import io
import threading
import time
import wave

import pytest

from modeldesk.app.live import frame_jpeg
from modeldesk.ui.pages.deploy.try_it import TryIt
from modeldesk.ui.widgets.camera_capture import GeneratedFrames
from modeldesk.ui.widgets.recorder import GeneratedSource, RecorderWidget


class SlowModel:
    """A stand-in predictor that takes a while and records how many calls overlap."""

    def __init__(self, answer: dict, seconds: float = 0.03):
        self.answer, self.seconds = answer, seconds
        self.running = self.most = self.calls = 0
        self.payloads: list[bytes] = []
        self._lock = threading.Lock()

    def __call__(self, payload: bytes) -> dict:
        with self._lock:
            self.running += 1
            self.calls += 1
            self.most = max(self.most, self.running)
            self.payloads.append(payload)
        time.sleep(self.seconds)
        with self._lock:
            self.running -= 1
        return dict(self.answer)


@pytest.fixture
def card(qtbot):
    errors = []
    recorder = RecorderWidget(GeneratedSource(), with_classes=False)
    try_it = TryIt(lambda path: None, lambda title, message: errors.append((title, message)), recorder)
    qtbot.addWidget(try_it.frame)
    try_it.frame.resize(900, 420)
    try_it.frame.show()
    try_it.errors = errors
    yield try_it
    try_it.live.stop()
    try_it.live.loop.wait()


def test_live_answers_one_frame_at_a_time_and_drops_the_rest(qtbot, card):
    live = card.live
    live.camera_source = GeneratedFrames(size=64)
    card.set_input_kind("image")
    assert live.button.isVisible() and live.button.text() == "Live"
    model = SlowModel({"label": "green", "score": 0.9, "scores": {"green": 0.9, "red": 0.1}})
    live.predict = model
    live.button.click()
    qtbot.waitUntil(lambda: live.loop.done >= 5, timeout=20_000)
    assert model.most == 1, "never two predictions at once"
    assert live.loop.offered > live.loop.started, "frames that came during a prediction were dropped"
    assert "green" in card.answer.text()
    assert "answers a second" in card.subtitle.text()
    assert model.payloads[0][:2] == b"\xff\xd8", "a JPEG file's bytes, as a photo tried by hand"
    live.button.click()
    assert not live.running and live.button.text() == "Live"
    assert "answers a second" not in card.subtitle.text()


def test_a_detectors_boxes_are_drawn_on_the_live_frames(qtbot, card):
    live = card.live
    live.camera_source = GeneratedFrames(size=64)
    card.set_input_kind("image")
    box = {"label": "square", "score": 0.8, "box": [10.0, 10.0, 40.0, 40.0]}
    live.predict = SlowModel({"label": "square", "score": 0.8, "scores": {}, "boxes": [box]})
    live.start()
    qtbot.waitUntil(lambda: live.loop.done >= 2, timeout=20_000)
    assert live.boxes == [box]
    assert "square" in card.answer.text().lower() or "1" in card.answer.text()
    pixmap = card.drop.pixmap()
    assert pixmap is not None and not pixmap.isNull() and pixmap.width() > 64, "frames shown, scaled up"


def test_a_failing_model_stops_live_and_says_why(qtbot, card):
    live = card.live
    live.camera_source = GeneratedFrames(size=32)
    card.set_input_kind("image")

    def broken(_payload):
        raise ValueError("the model file is gone")

    live.predict = broken
    live.start()
    qtbot.waitUntil(lambda: not live.running, timeout=20_000)
    assert card.errors and "the model file is gone" in card.errors[0][1]


def test_listen_live_predicts_on_the_last_two_seconds(qtbot, card):
    live = card.live
    live.microphone = GeneratedSource(rate=48000)
    card.set_input_kind("audio")
    assert live.button.isVisible() and live.button.text() == "Listen live"
    model = SlowModel({"label": "yes", "score": 0.7, "scores": {"yes": 0.7, "no": 0.3}})
    live.predict = model
    live.start()
    qtbot.waitUntil(lambda: live.loop.done >= 2, timeout=30_000)
    assert model.most == 1
    with wave.open(io.BytesIO(model.payloads[-1])) as clip:
        assert clip.getframerate() == 16000 and clip.getnframes() == 32000
    assert "yes" in card.answer.text()
    assert len(card.clip_player.waveform.peaks) == 240, "the window heard is drawn"


def test_text_models_have_no_live_mode_and_no_camera_is_said(card):
    card.set_input_kind("text")
    assert not card.live.button.isVisible()

    class NoCamera:
        def available(self):
            return False

    card.live.camera_source = NoCamera()
    card.set_input_kind("image")
    assert not card.live.button.isVisible()
    assert (
        card.subtitle.text()
        == "Drop a photo to see what the model says. No camera was found, so photos come from files."
    )


def test_live_gives_the_answer_a_photo_file_gets(qtbot, tmp_path, make_images):
    """On a really trained model: the live answer for a frame is the answer for that frame as a file."""
    from modeldesk.app.workspace import Workspace
    from modeldesk.ui.pages.deploy import DeployPage

    ws = Workspace(tmp_path / "ws", cleanup=False)
    ws.create_project("colors", "image-classification")
    ws.import_data("colors", make_images(tmp_path / "data", {"red": 6, "green": 6}, size=48))
    model = ws.train("colors", "image-classification/fast")["model"]
    page = DeployPage(ws)
    try:
        page.show()
        page.set_project("colors")
        qtbot.waitUntil(lambda: page.loaded and page.model_id == model, timeout=20_000)
        live = page.try_it.live
        live.camera_source = GeneratedFrames(size=64)
        page.try_it.set_input_kind("image")
        answers = []
        live.loop.answered.connect(lambda prediction, frame: answers.append((prediction, frame)))
        live.start()
        qtbot.waitUntil(lambda: len(answers) >= 2, timeout=30_000)
        live.stop()
        prediction, frame = answers[-1]
        photo = tmp_path / "frame.jpg"
        photo.write_bytes(frame_jpeg(frame))
        expected = ws.predict(model, [photo])[0]
        assert prediction["label"] == expected["label"]
        assert prediction["score"] == pytest.approx(expected["score"], abs=1e-5)
        assert prediction["label"] in page.try_it.answer.text()
    finally:
        live.loop.wait()
        qtbot.waitUntil(lambda: not page.tasks.busy, timeout=60_000)
        page.shutdown()
        page.close()
        ws.jobs.close()
        ws.close()

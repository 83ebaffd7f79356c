"""Sound projects in the app: record into a class (from a generated signal), waveform thumbnails,
and a page that says so when there is no microphone."""

from __future__ import annotations

import numpy as np

from modeldesk.ui.pages.data_page import DataPage
from modeldesk.ui.widgets.recorder import GeneratedSource, RecorderWidget


class NoMicrophone:
    def available(self) -> bool:
        return False


def test_recording_adds_a_clip_to_the_chosen_class(qtbot, ws, show_widget):
    ws.create_project("sounds", "sound-classification")
    page = DataPage(ws)
    page.make_recorder = lambda: RecorderWidget(GeneratedSource(rate=48000), seconds=0.5, countdown_s=0.2)
    page.resize(1000, 700)
    show_widget(page)
    page.set_project("sounds")
    qtbot.waitUntil(lambda: page.recorder is not None and page.refresh_task is None, timeout=10_000)
    recorder = page.recorder
    assert recorder.button.isVisible() and not recorder.note.isVisible()
    recorder.classes.setCurrentText("whistle")
    with qtbot.waitSignal(recorder.recorded, timeout=10_000) as signal:
        recorder.button.click()
    label, wav = signal.args
    assert label == "whistle" and wav[:4] == b"RIFF"
    qtbot.waitUntil(lambda: ws.stats("sounds")["labels"].get("whistle") == 1, timeout=10_000)
    sample = ws.sample(ws.sample_ids("sounds")[0])
    assert sample.duration == 0.5
    thumb = ws.thumbnail(sample.id)  # a picture of the waveform
    assert thumb.suffix == ".jpg" and thumb.stat().st_size > 0


def test_without_a_microphone_the_button_is_absent_and_the_page_says_so(qtbot):
    widget = RecorderWidget(NoMicrophone())
    qtbot.addWidget(widget)
    widget.show()
    assert not widget.button.isVisible() and widget.note.isVisible()
    assert "No microphone" in widget.note.text() and "WAV" in widget.note.text()


def test_recorder_level_meter_and_countdown_follow_the_frames(qtbot):
    source = GeneratedSource(rate=16000)
    widget = RecorderWidget(source, seconds=1.0, countdown_s=1.0, with_classes=False)
    qtbot.addWidget(widget)
    widget.show()
    widget.recorder.start(rate=16000)  # drive it by hand, block by block
    widget.button.setEnabled(False)
    widget.feed(np.zeros(8000, "<i2").tobytes())
    assert widget.button.text().startswith("Get ready")
    widget.feed((np.ones(12000) * 16000).astype("<i2").tobytes())
    assert widget.button.text() == "Recording…" and widget.meter.value() == 49
    with qtbot.waitSignal(widget.recorded, timeout=2000) as signal:
        widget.feed(np.zeros(16000, "<i2").tobytes())
    assert signal.args[0] == "" and widget.button.isEnabled()

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
    qtbot.waitUntil(lambda: page.recorder is not None and page.is_idle(), timeout=10_000)
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
    assert not widget.into.isVisible()  # no "Record into" heading over nothing


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


def test_sound_model_pages_play_record_and_classify(qtbot, ws, show_widget, tmp_path, monkeypatch):
    """Label shows a playable waveform; Deploy records (generated signal) and classifies; Evaluate
    speaks of clips and lists them with their waveforms."""
    from modeldesk.deploy.audio_input import wav_bytes
    from modeldesk.ui.pages.deploy import DeployPage
    from modeldesk.ui.pages.evaluate_page import EvaluatePage
    from modeldesk.ui.pages.label import LabelPage

    rng = np.random.default_rng(0)
    for label, freq in (("low", 300.0), ("high", 2000.0)):
        (tmp_path / "clips" / label).mkdir(parents=True)
        for i in range(6):
            t = np.arange(int(16000 * rng.uniform(0.5, 1.0))) / 16000
            clip = 0.3 * np.sin(2 * np.pi * freq * rng.uniform(0.9, 1.1) * t) * np.hanning(len(t))
            (tmp_path / "clips" / label / f"{label}{i}.wav").write_bytes(wav_bytes(clip, 16000))
    ws.create_project("tones", "sound-classification")
    ws.import_data("tones", tmp_path / "clips")
    ws.train("tones", "sound-classification/fast")

    label_page = LabelPage(ws)
    show_widget(label_page)
    with qtbot.waitSignal(label_page.sample_shown, timeout=20_000):
        label_page.set_project("tones")
    view = label_page.views["audio"]
    assert len(view.player.waveform.peaks) > 0 and view.player.caption.text()

    monkeypatch.setattr(
        DeployPage,
        "make_recorder",
        lambda self: RecorderWidget(
            GeneratedSource(rate=16000, freq=2000.0), with_classes=False, seconds=0.8, countdown_s=0.0
        ),
    )
    deploy = DeployPage(ws)
    show_widget(deploy)
    deploy.set_project("tones")
    qtbot.waitUntil(lambda: deploy.sound and deploy.recorder.isVisible(), timeout=10_000)
    assert not deploy.drop.isVisible()
    deploy.recorder.button.click()
    qtbot.waitUntil(lambda: deploy.last_prediction is not None, timeout=20_000)
    assert deploy.last_prediction["label"] == "high"
    assert len(deploy.clip_player.waveform.peaks) > 0

    evaluate = EvaluatePage(ws)
    show_widget(evaluate)
    evaluate.set_project("tones")
    qtbot.waitUntil(lambda: evaluate.report is not None, timeout=10_000)
    assert evaluate.sound and "clips" in evaluate.hero_detail.text()


def test_the_waveform_is_dark_in_the_dark_theme(qtbot):
    """It was a glaring near-white box on the dark Label and Deploy pages."""
    from PySide6.QtGui import QColor
    from PySide6.QtWidgets import QApplication

    from modeldesk.ui import theme
    from modeldesk.ui.widgets.clip_player import Waveform

    wave = Waveform()
    qtbot.addWidget(wave)
    wave.resize(200, 90)
    wave.set_peaks(np.array([[-0.5, 0.5]] * 20, np.float32))
    app = QApplication.instance()
    try:
        for choice, dark in (("dark", True), ("light", False)):
            theme.apply_theme(app, choice)
            corner = QColor(wave.grab().toImage().pixel(2, 2))
            assert (corner.lightness() < 80) == dark, choice
    finally:
        theme.apply_theme(app, "light")

"""Record a sound clip from the microphone: a record button, a countdown and a level meter.

The recording logic is :class:`modeldesk.app.recording.ClipRecorder` (Qt-free, frames in, WAV out);
this widget only moves frames from a *source* to it and shows its state. The default source is the
computer's default microphone through Qt Multimedia (``QMediaDevices`` / ``QAudioSource``); where
there is none (or Qt Multimedia cannot load) the button is absent and the widget says so. Tests and
previews pass :class:`GeneratedSource`, which delivers a made-up signal as a device would.

Signals
-------
recorded(label, wav_bytes)
    A clip is complete (label: the chosen class, or "" when the widget has no class chooser).
"""

from __future__ import annotations

import logging

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from modeldesk.app.recording import ClipRecorder

log = logging.getLogger(__name__)


class QtMicrophone(QObject):
    """The default microphone via Qt Multimedia; ``available()`` is False without one."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._audio = None
        self._io = None
        self._device = None
        try:
            from PySide6.QtMultimedia import QMediaDevices

            device = QMediaDevices.defaultAudioInput()
            self._device = None if device.isNull() else device
        except Exception as exc:  # no Qt Multimedia backend (e.g. no PulseAudio library): no microphone
            log.info("no microphone: %s", exc)

    def available(self) -> bool:
        return self._device is not None

    def start(self, on_frames) -> tuple[int, int, str]:
        """Open the microphone; returns (rate, channels, sample format) of the frames it will deliver."""
        from PySide6.QtMultimedia import QAudioFormat, QAudioSource

        fmt = QAudioFormat()
        fmt.setSampleRate(16000)
        fmt.setChannelCount(1)
        fmt.setSampleFormat(QAudioFormat.Int16)
        if not self._device.isFormatSupported(fmt):
            fmt = self._device.preferredFormat()
        names = {
            QAudioFormat.Int16: "int16",
            QAudioFormat.Int32: "int32",
            QAudioFormat.Float: "float32",
            QAudioFormat.UInt8: "uint8",
        }
        self._audio = QAudioSource(self._device, fmt, self)
        self._io = self._audio.start()
        self._io.readyRead.connect(lambda: on_frames(bytes(self._io.readAll().data())))
        return fmt.sampleRate(), fmt.channelCount(), names.get(fmt.sampleFormat(), "int16")

    def stop(self) -> None:
        if self._audio is not None:
            self._audio.stop()
            self._audio = None


class GeneratedSource(QObject):
    """A stand-in microphone: a tone with a little noise, delivered in 20 ms blocks by a timer.

    ``interval_ms=0`` delivers blocks as fast as the event loop runs (tests).
    """

    def __init__(self, rate: int = 48000, freq: float = 440.0, interval_ms: int = 0, parent=None):
        super().__init__(parent)
        self.rate, self.freq = rate, freq
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)
        self._t = 0
        self._on_frames = None
        self._rng = np.random.default_rng(0)

    def available(self) -> bool:
        return True

    def start(self, on_frames) -> tuple[int, int, str]:
        self._on_frames, self._t = on_frames, 0
        self._timer.start()
        return self.rate, 1, "int16"

    def _tick(self) -> None:
        n = self.rate // 50
        t = (self._t + np.arange(n)) / self.rate
        self._t += n
        envelope = 0.2 + 0.6 * np.abs(np.sin(2 * np.pi * 1.5 * t))
        signal = envelope * np.sin(2 * np.pi * self.freq * t) + 0.02 * self._rng.standard_normal(n)
        self._on_frames(np.round(np.clip(signal, -1, 1) * 32767).astype("<i2").tobytes())

    def stop(self) -> None:
        self._timer.stop()


class RecorderWidget(QWidget):
    """Class chooser (optional), record button, countdown and level meter.

    Parameters
    ----------
    source : a microphone-like object (``available``, ``start(on_frames)``, ``stop``); default: the
        computer's microphone.
    seconds, countdown_s : clip length and the countdown before it.
    with_classes : show a class chooser (Data page); without it the clip is emitted with label "".
    """

    recorded = Signal(str, bytes)

    def __init__(
        self,
        source=None,
        *,
        seconds: float = 2.0,
        countdown_s: float = 1.0,
        with_classes: bool = True,
        button_text: str = "Record a clip",
        parent=None,
    ):
        super().__init__(parent)
        self.source = source if source is not None else QtMicrophone(self)
        self.recorder = ClipRecorder(seconds=seconds, countdown_s=countdown_s)
        self.button_text = button_text
        self.classes = QComboBox()
        self.classes.setEditable(True)
        self.classes.setMinimumContentsLength(12)
        self.classes.setToolTip("The class the recording goes into (type a new name to add a class)")
        self.classes.setVisible(with_classes)
        self.button = QPushButton(button_text)
        self.button.setObjectName("Primary")
        self.button.clicked.connect(self.start)
        self.status = QLabel()
        self.status.setObjectName("Muted")
        self.meter = QProgressBar()
        self.meter.setRange(0, 100)
        self.meter.setTextVisible(False)
        self.meter.setFixedHeight(8)
        self.meter.setMinimumWidth(120)
        self.note = QLabel()
        self.note.setObjectName("Muted")
        self.note.setWordWrap(True)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        self.into = QLabel("Record into")
        row.addWidget(self.into)
        row.addWidget(self.classes)
        row.addWidget(self.button)
        row.addWidget(self.meter, 1)
        row.addWidget(self.status)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.note)
        self.has_microphone = bool(self.source.available())
        for widget in (self.into, self.classes, self.button, self.meter, self.status):
            # without a microphone only the note shows: no heading stands over nothing
            widget.setVisible(
                self.has_microphone and (widget not in (self.into, self.classes) or with_classes)
            )
        self.note.setText(
            ""
            if self.has_microphone
            else "No microphone was found on this computer, so clips cannot be recorded here: "
            "import WAV files instead."
        )
        self.note.setVisible(not self.has_microphone)

    def set_classes(self, labels, current: str | None = None) -> None:
        """The classes offered (the typed or chosen one is kept)."""
        keep = current or self.classes.currentText()
        self.classes.blockSignals(True)
        self.classes.clear()
        self.classes.addItems(list(labels))
        self.classes.setCurrentText(keep or (labels[0] if labels else ""))
        self.classes.blockSignals(False)

    @property
    def recording(self) -> bool:
        return bool(self.recorder.rate) and not self.recorder.done

    def start(self) -> None:
        """Open the source and start the countdown, then the clip."""
        if self.recording or not self.has_microphone:
            return
        if self.classes.isVisible() and not self.classes.currentText().strip():
            self.note.setText("Choose or type the class to record into first.")
            self.note.show()
            return
        self.note.hide()
        try:
            rate, channels, fmt = self.source.start(self.feed)
        except Exception as exc:  # a device that refuses to open: say so, keep the page usable
            log.exception("could not open the microphone")
            self.note.setText(f"The microphone could not be opened ({exc}).")
            self.note.show()
            return
        self.recorder.start(rate=rate, channels=channels, sample_format=fmt)
        self.button.setEnabled(False)
        self._show_state()

    def feed(self, data) -> None:
        """Frames from the source (the device's bytes)."""
        if not self.recorder.rate or self.recorder.done:
            return
        self.recorder.feed(data)
        self._show_state()
        if self.recorder.done:
            self.source.stop()
            self.button.setEnabled(True)
            self.button.setText(self.button_text)
            self.status.setText("Saved" if self.classes.isVisible() else "")
            self.meter.setValue(0)
            label = self.classes.currentText().strip() if self.classes.isVisible() else ""
            self.recorded.emit(label, self.recorder.wav())
            self.recorder.rate = 0

    def _show_state(self) -> None:
        self.meter.setValue(int(round(100 * self.recorder.level)))
        remaining = self.recorder.remaining_s
        if self.recorder.counting_down:
            self.button.setText(f"Get ready… {remaining - self.recorder.seconds:.0f}")
            self.status.setText("")
        else:
            self.button.setText("Recording…")
            self.status.setText(f"{remaining:.1f} s left")
        self.status.setAlignment(Qt.AlignRight | Qt.AlignVCenter)

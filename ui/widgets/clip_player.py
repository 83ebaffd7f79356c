"""A sound clip on screen: its waveform, a play button and a caption.

:func:`load_peaks` reads a WAV's waveform (standard library ``wave`` + numpy) on a worker thread;
:class:`ClipPlayer` paints it and plays the file through Qt Multimedia. Where Qt Multimedia cannot
play (no audio output or backend), the button is disabled and its tooltip says why.
"""

from __future__ import annotations

import logging
import wave

import numpy as np
from PySide6.QtCore import QRectF, QUrl
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from .. import theme

log = logging.getLogger(__name__)

COLUMNS = 400


def load_peaks(path, columns: int = COLUMNS, max_seconds: float = 30.0) -> tuple[np.ndarray, float]:
    """(columns x 2 array of min/max in [-1, 1], duration in seconds) of a PCM WAV (any thread)."""
    with wave.open(str(path), "rb") as reader:
        width, channels, rate = reader.getsampwidth(), reader.getnchannels(), reader.getframerate()
        frames = reader.getnframes()
        raw = reader.readframes(min(frames, int(max_seconds * rate)))
    if width == 3:
        raw = np.frombuffer(raw[: len(raw) - len(raw) % 3], np.uint8).reshape(-1, 3)[:, 1:].tobytes()
        width = 2
    dtype = {1: "u1", 2: "<i2", 4: "<i4"}[width]
    x = np.frombuffer(raw[: len(raw) - len(raw) % width], dtype).astype(np.float32)
    x = (x - 128) / 128 if width == 1 else x / float(2 ** (8 * width - 1))
    x = x[: len(x) - len(x) % channels].reshape(-1, channels).mean(axis=1)
    if not len(x):
        return np.zeros((0, 2), np.float32), 0.0
    parts = np.array_split(x, min(columns, len(x)))
    return np.array([[p.min(), p.max()] for p in parts], np.float32), frames / max(rate, 1)


#: (background, centre line, peaks) on each theme: the light ones were a glaring white box in the dark
WAVE_COLORS = {False: ("#eef2ff", "#a5b4fc", "#6366f1"), True: ("#2a2f38", "#4b5563", "#a5b4fc")}


class Waveform(QWidget):
    """Paints min/max peaks, scaled to the loudest."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.peaks = np.zeros((0, 2), np.float32)
        self.setMinimumHeight(90)

    def set_peaks(self, peaks) -> None:
        self.peaks = np.asarray(peaks, np.float32)
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt name)
        background, line, peaks = (QColor(c) for c in WAVE_COLORS[theme.current().dark])
        painter = QPainter(self)
        painter.fillRect(self.rect(), background)
        middle, half = self.height() / 2, self.height() * 0.44
        painter.setPen(line)
        painter.drawLine(0, int(middle), self.width(), int(middle))
        if len(self.peaks):
            scale = half / max(float(np.abs(self.peaks).max()), 1e-3)
            step = self.width() / len(self.peaks)
            color = peaks
            for i, (low, high) in enumerate(self.peaks):
                top = middle - high * scale
                painter.fillRect(
                    QRectF(i * step, top, max(step - 0.3, 0.7), max((high - low) * scale, 1.0)), color
                )
        painter.end()


class ClipPlayer(QWidget):
    """Waveform + play button + caption for one clip (``set_clip`` with peaks from :func:`load_peaks`)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.path = None
        self.waveform = Waveform()
        self.play_button = QPushButton("▶  Play")
        self.play_button.clicked.connect(self.play)
        self.caption = QLabel()
        self.caption.setObjectName("Muted")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.play_button)
        row.addWidget(self.caption, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.waveform, 1)
        layout.addLayout(row)
        self._player = None
        self._output = None
        self._why_silent = ""
        self.play_button.setEnabled(False)

    def set_clip(self, path, peaks, duration: float, caption: str = "") -> None:
        self.path = path
        self.waveform.set_peaks(peaks)
        self.caption.setText(caption or f"{duration:.2f} s")
        self.play_button.setEnabled(path is not None and self._ensure_player())
        self.play_button.setToolTip(self._why_silent)

    def clear(self) -> None:
        self.stop()
        self.path = None
        self.waveform.set_peaks(np.zeros((0, 2)))
        self.caption.setText("")
        self.play_button.setEnabled(False)

    def _ensure_player(self) -> bool:
        if self._player is not None:
            return True
        if self._why_silent:
            return False
        try:
            from PySide6.QtMultimedia import QAudioOutput, QMediaDevices, QMediaPlayer

            if QMediaDevices.defaultAudioOutput().isNull():
                raise RuntimeError("no sound output device")
            self._output = QAudioOutput(self)
            self._player = QMediaPlayer(self)
            self._player.setAudioOutput(self._output)
            return True
        except (
            Exception
        ) as exc:  # no Qt Multimedia backend or no speakers: show the clip, say why it is silent
            self._why_silent = f"Cannot play sound on this computer ({exc})"
            log.info("clip player: %s", self._why_silent)
            return False

    def play(self) -> None:
        if self.path is None or not self._ensure_player():
            return
        self._player.setSource(QUrl.fromLocalFile(str(self.path)))
        self._player.play()

    def stop(self) -> None:
        if self._player is not None:
            self._player.stop()

    @property
    def can_play(self) -> bool:
        return self.play_button.isEnabled()

    def sizeHint(self):  # noqa: N802 (Qt name)
        hint = super().sizeHint()
        hint.setHeight(max(hint.height(), 140))
        return hint


__all__ = ["ClipPlayer", "Waveform", "load_peaks"]

"""Photos from the webcam into a class: a live preview, a class chooser and a "hold to record" button
(a burst of frames while held). Where no camera exists the bar is absent and a note says so.

Frame sources: :class:`QtCamera` (Qt Multimedia) and :class:`GeneratedFrames` (tests and previews);
the keeping and encoding of frames is Qt-free (:class:`modeldesk.app.capture.Burst`).

Signals
-------
captured(label, photos) : the button was released; ``photos`` are JPEG bytes.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QWidget

from modeldesk.app.capture import Burst

from . import camera

log = logging.getLogger(__name__)


def image_to_array(image: QImage) -> np.ndarray:
    """An RGB uint8 array (H x W x 3) of ``image``."""
    image = image.convertToFormat(QImage.Format_RGB888)
    width, height, stride = image.width(), image.height(), image.bytesPerLine()
    data = np.frombuffer(image.constBits(), np.uint8, count=stride * height).reshape(height, stride)
    return data[:, : width * 3].reshape(height, width, 3).copy()


class QtCamera(QObject):
    """The first camera, through Qt Multimedia; ``start(on_frame)`` calls ``on_frame(rgb, t)``."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._camera = self._session = self._sink = None

    def available(self) -> bool:
        return bool(camera.cameras())

    def start(self, on_frame) -> None:
        from PySide6.QtMultimedia import QCamera, QMediaCaptureSession, QVideoSink

        self._camera = QCamera(camera.cameras()[0], self)
        self._session = QMediaCaptureSession(self)
        self._sink = QVideoSink(self)
        self._session.setCamera(self._camera)
        self._session.setVideoSink(self._sink)
        start = time.monotonic()
        self._sink.videoFrameChanged.connect(
            lambda frame: (
                frame.isValid() and on_frame(image_to_array(frame.toImage()), time.monotonic() - start)
            )
        )
        self._camera.start()

    def stop(self) -> None:
        if self._camera is not None:
            self._camera.stop()
            self._camera = None


class GeneratedFrames(QObject):
    """A camera for tests: frames of a square moving over a coloured background, 30 per second of
    frame time, delivered as fast as the event loop runs."""

    def __init__(self, size: int = 64, fps: float = 30.0, parent=None):
        super().__init__(parent)
        self.size, self.fps, self.index = size, fps, 0
        self._timer = QTimer(self)
        self._timer.setInterval(5)
        self._timer.timeout.connect(self._tick)
        self._on_frame = None

    def available(self) -> bool:
        return True

    def start(self, on_frame) -> None:
        self._on_frame = on_frame
        self._timer.start()

    def _tick(self) -> None:
        frame = np.full((self.size, self.size, 3), (40, 160, 70), np.uint8)
        x = (self.index * 3) % (self.size - 16)
        frame[20:36, x : x + 16] = (200, 40, 40)
        self.index += 1
        self._on_frame(frame, self.index / self.fps)

    def stop(self) -> None:
        self._timer.stop()


class CaptureWidget(QWidget):
    """Preview, "into" class chooser and the hold-to-record button (see the module docstring)."""

    captured = Signal(str, list)

    def __init__(self, source=None, *, every_s: float = 0.2, max_frames: int = 50, parent=None):
        super().__init__(parent)
        self.source = source if source is not None else QtCamera(self)
        self.every_s, self.max_frames = every_s, max_frames
        self.has_camera = bool(self.source.available())
        self.burst: Burst | None = None
        self._running = False
        self.preview = QLabel()
        self.preview.setFixedSize(96, 72)
        self.preview.setAlignment(Qt.AlignCenter)
        self.preview.setStyleSheet("background: #15181d; border-radius: 6px;")
        self.classes = QComboBox()
        self.classes.setEditable(True)
        self.classes.setMinimumContentsLength(10)
        self.classes.setToolTip("The class the photos go into (type a new name to add a class)")
        self.button = QPushButton("Hold to record")
        self.button.setObjectName("Primary")
        self.button.setToolTip(
            "Hold the button down: a photo is taken every "
            f"{every_s:g} s until you let go (at most {max_frames})."
        )
        self.button.pressed.connect(self.begin)
        self.button.released.connect(self.end)
        self.status = QLabel()
        self.status.setObjectName("Muted")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.preview)
        row.addWidget(QLabel("Camera photos into"))
        row.addWidget(self.classes)
        row.addWidget(self.button)
        row.addWidget(self.status, 1)

    def set_classes(self, labels) -> None:
        keep = self.classes.currentText()
        self.classes.blockSignals(True)
        self.classes.clear()
        self.classes.addItems(list(labels))
        self.classes.setCurrentText(keep or (labels[0] if labels else ""))
        self.classes.blockSignals(False)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt name): the preview runs while shown
        super().showEvent(event)
        if self.has_camera and not self._running:
            try:
                self.source.start(self.feed)
                self._running = True
            except Exception as exc:  # a camera that refuses to open: say so, keep the page usable
                log.exception("could not open the camera")
                self.status.setText(f"The camera could not be opened ({exc}).")

    def hideEvent(self, event) -> None:  # noqa: N802 (Qt name)
        if self._running:
            self.source.stop()
            self._running = False
        super().hideEvent(event)

    def begin(self) -> None:
        """The button went down: keep frames from now on."""
        if not self.classes.currentText().strip():
            self.status.setText("Choose or type the class first.")
            return
        self.burst = Burst(self.every_s, self.max_frames)
        self.status.setText("Recording…")

    def end(self) -> None:
        """The button came up: hand the photos over."""
        burst, self.burst = self.burst, None
        if burst is None:
            return
        photos = burst.photos()
        self.status.setText(
            f"{len(photos)} photo{'s' if len(photos) != 1 else ''} added"
            if photos
            else "Hold the button a little longer"
        )
        if photos:
            self.captured.emit(self.classes.currentText().strip(), photos)

    def feed(self, frame: np.ndarray, t: float) -> None:
        """One frame from the source: into the preview, and into the burst while held."""
        height, width = frame.shape[:2]
        image = QImage(
            np.ascontiguousarray(frame).data, width, height, width * 3, QImage.Format_RGB888
        ).copy()
        self.preview.setPixmap(QPixmap.fromImage(image).scaled(self.preview.size(), Qt.KeepAspectRatio))
        if self.burst is not None:
            self.burst.feed(frame, t)
            self.status.setText(f"Recording… {self.burst.count}")
            if self.burst.full:
                self.end()

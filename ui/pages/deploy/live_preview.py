"""The try-it card's "Live" mode: the model runs again and again on the webcam (image models) or on
the microphone's last two seconds (sound models), and the answer updates in place.

Predictions run in a one-thread pool of their own (:class:`LatestOnly`): while one runs, the frames that
arrive are shown but not predicted (dropped, never queued), so the answers come as fast as the machine
sustains and always describe a recent frame. A detector's latest boxes are drawn on every frame shown.
What goes to the model is a JPEG or WAV file's bytes (``app.live``), as a photo or clip tried by hand.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from PySide6.QtCore import QEvent, QObject, QSize, Qt, QThreadPool, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QPushButton, QSizePolicy

from modeldesk.app.live import RollingClip, clip_wav, frame_jpeg

from ...kinds import ui_kind
from ...widgets import camera
from ...workers import run_task

log = logging.getLogger(__name__)

#: seconds of sound each live answer is about
CLIP_S = 2.0
#: the height of the camera picture while Live runs
LIVE_HEIGHT = 320
NO_CAMERA = "No camera was found, so photos come from files."


class LatestOnly(QObject):
    """Run ``predict(payload)`` on the latest input only: at most one prediction in flight.

    :meth:`offer` starts one when none runs and drops the input otherwise. ``make_payload()`` is called
    in the worker thread (encoding stays off the UI thread).

    Signals
    -------
    answered(prediction, context) : a prediction for the input offered with ``context``.
    failed(message) : the prediction raised.
    """

    answered = Signal(dict, object)
    failed = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.predict = None  # payload -> prediction dict; set by the page (called in the worker thread)
        self.busy = False
        self.offered = self.started = self.done = 0
        self._generation = 0
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)

    def offer(self, make_payload, context=None) -> bool:
        """Predict for this input if nothing is running; True when it was taken."""
        self.offered += 1
        if self.busy or self.predict is None:
            return False
        self.busy, self.started = True, self.started + 1
        generation, predict = self._generation, self.predict
        handle = run_task(lambda _state: predict(make_payload()), pool=self._pool, parent=self)
        handle.finished.connect(lambda result: self._finished(generation, result, context))
        handle.failed.connect(lambda message, _details: self._failed(generation, message))
        return True

    def reset(self) -> None:
        """Forget the prediction in flight (its answer is dropped when it comes)."""
        self._generation += 1
        self.busy = False

    def wait(self, ms: int = 5000) -> bool:
        return self._pool.waitForDone(ms)

    def _finished(self, generation: int, result, context) -> None:
        if generation != self._generation:
            return
        self.busy, self.done = False, self.done + 1
        self.answered.emit(result, context)

    def _failed(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self.busy = False
            self.failed.emit(message)


def peaks(samples: np.ndarray, columns: int = 240) -> np.ndarray:
    """(columns x 2) min/max of ``samples``, for the clip player's waveform."""
    usable = len(samples) - len(samples) % columns
    if usable <= 0:
        return np.zeros((0, 2), np.float32)
    blocks = np.asarray(samples[:usable], np.float32).reshape(columns, -1)
    return np.stack([blocks.min(axis=1), blocks.max(axis=1)], axis=1)


def frame_pixmap(frame: np.ndarray) -> QPixmap:
    """An RGB uint8 frame as a pixmap."""
    height, width = frame.shape[:2]
    frame = np.ascontiguousarray(frame)
    return QPixmap.fromImage(QImage(frame.data, width, height, width * 3, QImage.Format_RGB888).copy())


class LiveMode(QObject):
    """The "Live" button of a :class:`~.try_it.TryIt` card and the loop behind it.

    ``buttons`` is the card's row of buttons (the Live button joins it). The page sets
    :attr:`predict` (``payload bytes -> prediction``); tests replace :attr:`camera_source` and
    :attr:`microphone` with generated ones (``GeneratedFrames``, ``GeneratedSource``).
    """

    def __init__(self, try_it, buttons, parent=None):
        super().__init__(parent)
        self.try_it = try_it
        self.loop = LatestOnly(self)
        self.loop.answered.connect(self._answered)
        self.loop.failed.connect(self._failed)
        self.camera_source = None
        self.microphone = None
        self.mode: str | None = None  # "camera", "microphone" or None: what Live reads
        self.running = False
        self.boxes: list = []
        self.frame: np.ndarray | None = None
        self.clip: RollingClip | None = None
        self._answer_times: list[float] = []
        self._subtitle = ""
        self._min_height, self._policy, self._camera_button = 0, None, False
        self.button = QPushButton("Live")
        self.button.setCheckable(True)
        self.button.toggled.connect(self._toggled)
        self.button.hide()
        buttons.addWidget(self.button)
        try_it.frame.installEventFilter(self)

    @property
    def predict(self):
        return self.loop.predict

    @predict.setter
    def predict(self, fn) -> None:
        self.loop.predict = fn

    def answers_per_second(self) -> float:
        """How many answers came in the last few seconds, per second."""
        times = self._answer_times
        return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and times[-1] > times[0] else 0.0

    # -- the inputs -------------------------------------------------------------------------------

    def _camera(self):
        if self.camera_source is None:
            from ...widgets.camera_capture import QtCamera

            self.camera_source = QtCamera(self)
        return self.camera_source

    def _microphone(self):
        if self.microphone is None:
            from ...widgets.recorder import QtMicrophone

            self.microphone = QtMicrophone(self)
        return self.microphone

    def set_input_kind(self, kind: str | None) -> None:
        """Offer Live for image models with a camera and sound models with a microphone (called after the
        card set its subtitle: without a camera, the subtitle says so)."""
        self.stop()
        parts = ui_kind(kind).try_parts if kind else frozenset()
        self.mode = "camera" if "camera" in parts else "microphone" if "recorder" in parts else None
        if self.mode == "camera":
            available = self.camera_source.available() if self.camera_source else bool(camera.cameras())
            self.button.setText("Live")
            self.button.setToolTip("Run the model on the camera, again and again, as fast as it answers")
            if not available:
                self.try_it.subtitle.setText(f"{self.try_it.subtitle.text()} {NO_CAMERA}")
        elif self.mode == "microphone":
            available = self._microphone().available()
            self.button.setText("Listen live")
            self.button.setToolTip("Run the model on the microphone's last two seconds, again and again")
        else:
            available = False
        self.button.setVisible(available)

    # -- running ------------------------------------------------------------------------------------

    def start(self) -> None:
        if not self.button.isChecked():
            self.button.setChecked(True)  # toggled() starts it

    def stop(self) -> None:
        if self.button.isChecked():
            self.button.setChecked(False)  # toggled() stops it

    def _toggled(self, on: bool) -> None:
        if on:
            self._start()
        else:
            self._stop()

    def _start(self) -> None:
        self.loop.reset()
        self.boxes, self.frame, self._answer_times = [], None, []
        self._subtitle = self.try_it.subtitle.text()
        try:
            if self.mode == "microphone":
                source = self._microphone()
                self.clip = RollingClip(CLIP_S)
                rate, channels, sample_format = source.start(self._sound)
                self.clip.start(rate=rate, channels=channels, sample_format=sample_format)
                self.try_it.subtitle.setText("Live: listening to the microphone's last two seconds.")
            else:
                self._camera().start(self._frame)
                self.try_it.subtitle.setText("Live: the answer follows the camera.")
        except Exception as exc:  # a device that refuses to open: say so, keep the page usable
            log.exception("the live preview could not start")
            self.button.setChecked(False)
            self.try_it.on_error("The live preview could not start", str(exc))
            return
        self.running = True
        self.try_it.answer.setText("Looking…" if self.mode != "microphone" else "Listening…")
        self.button.setText("Stop")
        self._camera_button = self.try_it.camera_button.isVisible()
        self.try_it.camera_button.hide()  # one photo while the camera runs live: no
        drop = self.try_it.drop
        self._min_height, self._policy = drop.minimumHeight(), drop.sizePolicy()
        if self.mode != "microphone":  # more room for the frames; their size must not push the layout wider
            drop.setMinimumHeight(max(self._min_height, LIVE_HEIGHT))
            drop.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Ignored)

    def _stop(self) -> None:
        if not self.running:
            return
        self.running = False
        source = self.microphone if self.mode == "microphone" else self.camera_source
        if source is not None:
            source.stop()
        self.loop.reset()
        self.try_it.drop.setMinimumHeight(self._min_height)
        self.try_it.drop.setSizePolicy(self._policy)
        self.try_it.camera_button.setVisible(self._camera_button)
        self.try_it.subtitle.setText(self._subtitle)
        self.button.setText("Listen live" if self.mode == "microphone" else "Live")

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt name): the card hidden stops Live
        if event.type() == QEvent.Hide and watched is self.try_it.frame:
            self.stop()
        return False

    def _frame(self, frame: np.ndarray, _t: float = 0.0) -> None:
        """A camera frame: shown at once (with the latest boxes), predicted when the model is free."""
        if not self.running:
            return
        self.frame = frame
        self._show_frame(frame)
        self.loop.offer(lambda: frame_jpeg(frame), frame)

    def _sound(self, data: bytes) -> None:
        if not self.running or self.clip is None:
            return
        self.clip.feed(data)
        if self.clip.done and not self.loop.busy:
            samples, rate = self.clip.snapshot()
            self.loop.offer(lambda: clip_wav(samples, rate), samples)

    def _show_frame(self, frame: np.ndarray) -> None:
        pixmap = frame_pixmap(frame)
        if self.boxes:
            from .try_it import draw_boxes  # imported here: try_it imports this module

            draw_boxes(pixmap, self.boxes)
        drop = self.try_it.drop
        drop.setPixmap(pixmap.scaled(drop.size() - QSize(16, 16), Qt.KeepAspectRatio, Qt.FastTransformation))

    def _answered(self, prediction: dict, context) -> None:
        if not self.running:
            return
        now = time.monotonic()
        self._answer_times = [t for t in self._answer_times if now - t < 3.0] + [now]
        self.boxes = prediction.get("boxes") or []
        self.try_it.show_prediction(prediction)  # no path: the answer and the bars only
        if self.boxes and self.frame is not None:
            self._show_frame(self.frame)
        if self.mode == "microphone" and context is not None:  # the two seconds the model heard
            self.try_it.clip_player.waveform.set_peaks(peaks(context))
        rate = self.answers_per_second()
        if rate:
            prefix = "Live: listening" if self.mode == "microphone" else "Live"
            self.try_it.subtitle.setText(f"{prefix} · {rate:.1f} answers a second")

    def _failed(self, message: str) -> None:
        self.stop()
        self.try_it.on_error("The live preview stopped", message)

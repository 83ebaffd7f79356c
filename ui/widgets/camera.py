"""The webcam: which cameras exist, and a dialog that takes one photo with the first of them."""

from __future__ import annotations

import os
import tempfile

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QPushButton, QVBoxLayout


def cameras() -> list:
    """The video inputs Qt Multimedia finds (empty when there is none or no backend)."""
    try:
        from PySide6.QtMultimedia import QMediaDevices
    except ImportError:
        return []
    return list(QMediaDevices.videoInputs())


class CameraDialog:
    """Take one photo with the first camera; calls ``on_photo(path)`` with a temporary JPEG."""

    def __init__(self, parent, on_photo, on_error):
        from PySide6.QtMultimedia import QCamera, QImageCapture, QMediaCaptureSession
        from PySide6.QtMultimediaWidgets import QVideoWidget

        self.dialog = QDialog(parent)
        self.dialog.setWindowTitle("Take a photo")
        self.on_photo, self.on_error = on_photo, on_error
        self.camera = QCamera(cameras()[0])
        self.session = QMediaCaptureSession()
        self.capture = QImageCapture()
        self.video = QVideoWidget()
        self.video.setMinimumSize(480, 360)
        self.session.setCamera(self.camera)
        self.session.setImageCapture(self.capture)
        self.session.setVideoOutput(self.video)
        self.capture.imageCaptured.connect(self._captured)
        self.capture.errorOccurred.connect(lambda _id, _err, text: self._fail(text))
        self.camera.errorOccurred.connect(lambda _err, text: self._fail(text))
        shoot = QPushButton("Take photo")
        shoot.setObjectName("Primary")
        shoot.clicked.connect(self.capture.capture)
        layout = QVBoxLayout(self.dialog)
        layout.addWidget(self.video, 1)
        layout.addWidget(shoot, 0, Qt.AlignRight)
        self.dialog.finished.connect(lambda _: self.camera.stop())
        self.camera.start()
        self.dialog.show()

    def _captured(self, _request_id, image) -> None:
        fd, path = tempfile.mkstemp(prefix="modeldesk-camera-", suffix=".jpg")
        os.close(fd)
        if not image.save(path, "JPG", 92):
            self._fail("the photo could not be saved")
            return
        self.dialog.accept()
        self.on_photo(path)

    def _fail(self, text: str) -> None:
        self.dialog.reject()
        self.on_error("The camera did not work", text or "unknown camera error")

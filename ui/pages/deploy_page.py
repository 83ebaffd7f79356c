"""The Deploy page: try the model on a photo, serve it locally, export, compress and bundle it.

Everything that takes time (prediction, export, compression, bundle, starting and stopping the
service) runs in the thread pool with a progress panel; export and compression stop at the next
candidate when the user cancels.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from PySide6.QtCore import QSize, Qt, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices, QGuiApplication, QPixmap
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFileDialog, QFrame,
                               QGridLayout, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton,
                               QScrollArea, QStackedWidget, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from modeldesk.ui import theme
from modeldesk.ui.charts import BarChart
from modeldesk.ui.job_watcher import TaskGroup
from modeldesk.ui.widgets.model_picker import fill_model_picker
from modeldesk.ui.widgets import ProgressPanel, show_error
from modeldesk.ui.widgets.clip_player import ClipPlayer, load_peaks
from modeldesk.ui.widgets.recorder import RecorderWidget
from modeldesk.ui.workers import TaskCancelled

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")
TOP_SCORES = 5


def human_size(n_bytes) -> str:
    """``1_234_567`` -> ``1.2 MB``."""
    if not isinstance(n_bytes, (int, float)):
        return "–"
    for unit in ("bytes", "KB", "MB", "GB"):
        if n_bytes < 1000 or unit == "GB":
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1000
    return ""


def candidate_words(name: str) -> str:
    """``int8-qdq-perchannel-160`` -> ``8-bit, 160 px (qdq, per channel)``; ``fp32`` -> ``Original``."""
    parts = name.split("-")
    size = f"{parts.pop()} px" if parts and parts[-1].isdigit() else ""
    kind = parts[0] if parts else name
    words = ["Original" if kind in ("fp32", "float32") else "8-bit" if kind == "int8" else
             "16-bit" if kind == "fp16" else kind]
    if size:
        words.append(size)
    detail = ", ".join(p.replace("perchannel", "per channel").replace("pertensor", "per tensor") for p in parts[1:])
    return ", ".join(words) + (f" ({detail})" if detail else "")


def verdict(candidate: dict) -> str:
    """What happened to a compression candidate, in two words."""
    reason = str(candidate.get("reason") or "")
    if candidate.get("kept"):
        return "✓ Kept"
    if reason.startswith("reference"):
        return "Original"
    for prefix, words in (("rejected: accuracy", "Less accurate"), ("rejected: not faster", "Not faster"),
                          ("accurate enough", "Slower"), ("failed", "Failed"), ("skipped", "Skipped")):
        if reason.startswith(prefix):
            return words
    return reason.split(":")[0].capitalize()


def top_scores(prediction: dict, k: int = TOP_SCORES) -> list[tuple[str, float]]:
    """The ``k`` best ``(label, score)`` of a prediction, best first."""
    scores = prediction.get("scores") or {prediction.get("label"): prediction.get("score", 0.0)}
    return sorted(((str(label), float(score)) for label, score in scores.items()), key=lambda x: -x[1])[:k]


def cancellable_progress(state, describe=str):
    """A ``progress(done, total, message)`` callback that also stops the call when the user cancels;
    ``describe`` turns the message into words."""
    def progress(done, total=0, message=""):
        if state.is_interruption_requested():
            raise TaskCancelled()
        state.set_progress(int(done), int(total or 0), describe(message) if message else "")
    return progress


class DropArea(QLabel):
    """A dashed box that accepts one dropped image file and emits its path."""

    dropped = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setAlignment(Qt.AlignCenter)
        self.setMinimumSize(240, 200)
        self.setWordWrap(True)
        self.setObjectName("DropArea")
        self._idle_style()
        self.setText("Drop a photo here")

    def _idle_style(self, hover: bool = False) -> None:
        border = "#2f6fed" if hover else "#9aa4b5"
        self.setStyleSheet(f"QLabel#DropArea {{ border: 2px dashed {border}; border-radius: 10px; padding: 6px; }}")

    @staticmethod
    def _image_path(event) -> str | None:
        for url in event.mimeData().urls():
            path = url.toLocalFile()
            if path and path.lower().endswith(IMAGE_SUFFIXES):
                return path
        return None

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if self._image_path(event):
            self._idle_style(True)
            event.acceptProposedAction()

    def dragLeaveEvent(self, event) -> None:  # noqa: N802
        self._idle_style()

    def dropEvent(self, event) -> None:  # noqa: N802
        self._idle_style()
        path = self._image_path(event)
        if path:
            event.acceptProposedAction()
            self.dropped.emit(path)

    def show_image(self, path: str, boxes=None) -> None:
        """Show ``path`` scaled into the box, with a detector's ``boxes`` drawn on it."""
        pixmap = QPixmap(path)
        if pixmap.isNull():
            self.setText(f"Cannot show {Path(path).name}")
            return
        if boxes:
            draw_boxes(pixmap, boxes)
        self.setPixmap(pixmap.scaled(self.size() - QSize(16, 16), Qt.KeepAspectRatio, Qt.SmoothTransformation))


def draw_boxes(pixmap: QPixmap, boxes) -> None:
    """Paint ``boxes`` (``{"label", "score", "box"}`` in the photo's pixels) onto ``pixmap``."""
    from PySide6.QtGui import QFont, QPainter, QPen

    from modeldesk.ui.canvas import label_color

    painter = QPainter(pixmap)
    width = max(2, round(max(pixmap.width(), pixmap.height()) / 250))
    font = QFont()
    font.setPixelSize(width * 7)
    painter.setFont(font)
    for box in boxes:
        x0, y0, x1, y1 = box["box"]
        color = label_color(box["label"])
        painter.setPen(QPen(color, width))
        painter.drawRect(round(x0), round(y0), round(x1 - x0), round(y1 - y0))
        painter.drawText(round(x0) + width, max(round(y0) - width, width * 7), f"{box['label']} {box['score']:.0%}")
    painter.end()


def found_words(boxes) -> str:
    """ "2 raccoon, 1 dog" or "Nothing found" for a detector's boxes."""
    if not boxes:
        return "Nothing found"
    counts: dict = {}
    for box in boxes:
        counts[box["label"]] = counts.get(box["label"], 0) + 1
    return ", ".join(f"{n} {label}" for label, n in counts.items())


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
        from PySide6.QtWidgets import QDialog

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


class DeployPage(QWidget):
    """Try, serve and export the project's models.

    Signals
    -------
    status_changed() : the service started or stopped.
    navigate(str) : go to another page ("train").
    """

    status_changed = Signal()
    navigate = Signal(str)

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.project: str | None = None
        self.models: list[dict] = []
        self.model_id: str | None = None
        self.service = None
        self.service_model: str | None = None
        self.service_project: str | None = None
        self.last_prediction: dict | None = None
        self.last_export: dict | None = None
        self.tasks = TaskGroup(self._error, self)
        self._camera = None
        self._build()

    # -- layout ------------------------------------------------------------------------------------

    def _card(self, title: str, subtitle: str = ""):
        card = QFrame()
        card.setObjectName("Card")
        layout = QVBoxLayout(card)
        layout.setContentsMargins(16, 12, 16, 14)
        layout.setSpacing(8)
        heading = QLabel(f"<b>{title}</b>")
        heading.setStyleSheet("font-size: 15px;")
        layout.addWidget(heading)
        if subtitle:
            note = QLabel(subtitle)
            note.setObjectName("Muted")
            note.setWordWrap(True)
            layout.addWidget(note)
        return card, layout

    def _build(self) -> None:
        title = QLabel("Use your model")
        title.setObjectName("PageTitle")
        self.picker = QComboBox()
        self.picker.setMinimumWidth(280)
        self.picker.currentIndexChanged.connect(self._picked)
        self.picker_label = QLabel("Model")
        top = QHBoxLayout()
        top.addWidget(title)
        top.addStretch(1)
        top.addWidget(self.picker_label)
        top.addWidget(self.picker)

        # Try it
        try_card, try_layout = self._card("Try it", "Drop a photo to see what the model says.")
        self.try_card_subtitle = try_card.findChildren(QLabel)[-1]
        self.drop = DropArea()
        self.drop.dropped.connect(self.try_file)
        self.choose_button = QPushButton("Choose a photo…")
        self.choose_button.clicked.connect(self._choose_photo)
        self.camera_button = QPushButton("Take a photo")
        self.camera_button.clicked.connect(self._take_photo)
        self.camera_button.setVisible(bool(cameras()))
        self.answer = QLabel()
        self.answer.setObjectName("Hero")
        self.answer.setWordWrap(True)
        self.scores = BarChart(("Score",), highlight_first=True,
                               empty_text="The model's answer for your photo appears here.")
        # sound models: the clip tried, and recording one from the microphone
        self.clip_player = ClipPlayer()
        self.clip_player.hide()
        self.recorder = self.make_recorder()
        self.recorder.recorded.connect(self._recorded)
        self.recorder.hide()
        self.sound = False
        from ..widgets.text_try import TextTry

        self.text_try = TextTry()  # text models: a text box instead of the drop area
        self.text_try.submitted.connect(self.try_text)
        self.text_try.hide()
        left = QVBoxLayout()
        left.addWidget(self.text_try, 1)
        left.addWidget(self.drop, 1)
        left.addWidget(self.clip_player, 1)
        left.addWidget(self.recorder)
        buttons = QHBoxLayout()
        buttons.addWidget(self.choose_button)
        buttons.addWidget(self.camera_button)
        buttons.addStretch(1)
        left.addLayout(buttons)
        right = QVBoxLayout()
        right.addWidget(self.answer)
        right.addWidget(self.scores)
        right.addStretch(1)
        row = QHBoxLayout()
        row.addLayout(left, 1)
        row.addSpacing(12)
        row.addLayout(right, 1)
        try_layout.addLayout(row)

        # Service
        service_card, service_layout = self._card(
            "Local service", "Other programs on this computer can send photos to the model over HTTP.")
        self.service_state = QLabel("Not running")
        self.service_url = QLabel()
        self.service_url.setTextInteractionFlags(Qt.TextBrowserInteraction)
        self.service_url.setOpenExternalLinks(True)
        self.service_button = QPushButton("Start service")
        self.service_button.setObjectName("Primary")
        self.service_button.clicked.connect(self.toggle_service)
        self.console_button = QPushButton("Open console in browser")
        self.console_button.clicked.connect(self.open_console)
        self.copy_button = QPushButton("Copy address")
        self.copy_button.clicked.connect(self.copy_address)
        service_row = QHBoxLayout()
        service_row.addWidget(self.service_state)
        service_row.addWidget(self.service_url, 1)
        service_row.addWidget(self.copy_button)
        service_row.addWidget(self.console_button)
        service_row.addWidget(self.service_button)
        service_layout.addLayout(service_row)
        self.service_hint = QLabel()
        self.service_hint.setObjectName("Muted")
        self.service_hint.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.service_hint.setWordWrap(True)
        service_layout.addWidget(self.service_hint)

        # Export, compress, bundle
        export_card, export_layout = self._card(
            "Export", "Save the model as one ONNX file with its card, make a smaller and faster copy, "
                      "or build a bundle that runs on a computer without ModelDesk.")
        self.out_dir = QLineEdit()
        self.out_dir.setPlaceholderText("Choose a folder…")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._choose_folder)
        self.export_button = QPushButton("Export")
        self.export_button.clicked.connect(lambda: self.export(compress=False, bundle=False))
        self.compress_button = QPushButton("Make smaller && faster")
        self.compress_button.setToolTip("Tries 8-bit and smaller-input versions; keeps the fastest that "
                                        "loses at most 1 point of accuracy.")
        self.compress_button.clicked.connect(lambda: self.export(compress=True, bundle=False))
        self.bundle_button = QPushButton("Build deploy bundle")
        self.bundle_button.clicked.connect(lambda: self.export(compress=False, bundle=True))
        folder_row = QHBoxLayout()
        folder_row.addWidget(QLabel("Folder"))
        folder_row.addWidget(self.out_dir, 1)
        folder_row.addWidget(browse)
        action_row = QHBoxLayout()
        action_row.addWidget(self.export_button)
        action_row.addWidget(self.compress_button)
        action_row.addWidget(self.bundle_button)
        action_row.addStretch(1)
        self.progress = ProgressPanel()
        self.export_result = QLabel()
        self.export_result.setWordWrap(True)
        self.export_result.setTextInteractionFlags(Qt.TextBrowserInteraction)
        self.export_result.hide()
        self.export_result.linkActivated.connect(lambda link: QDesktopServices.openUrl(QUrl(link)))
        self.candidates = QTableWidget(0, 5)
        self.candidates.setHorizontalHeaderLabels(["Version", "Size", "Time per photo", "Accuracy", "Result"])
        self.candidates.verticalHeader().hide()
        self.candidates.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.candidates.setSelectionMode(QAbstractItemView.NoSelection)
        self.candidates.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.candidates.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
        self.candidates.hide()
        export_layout.addLayout(folder_row)
        export_layout.addLayout(action_row)
        export_layout.addWidget(self.progress)
        export_layout.addWidget(self.export_result)
        export_layout.addWidget(self.candidates)

        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(24, 12, 24, 20)
        layout.setSpacing(12)
        layout.addWidget(try_card)
        layout.addWidget(service_card)
        layout.addWidget(export_card)
        layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(content)

        empty = QWidget()
        empty_layout = QGridLayout(empty)
        text = QLabel("No model yet.\nTrain one, then try it, serve it and export it here.")
        text.setObjectName("Muted")
        text.setAlignment(Qt.AlignCenter)
        go = QPushButton("Go to training")
        go.setObjectName("Primary")
        go.clicked.connect(lambda: self.navigate.emit("train"))
        empty_layout.addWidget(text, 0, 0, Qt.AlignBottom | Qt.AlignHCenter)
        empty_layout.addWidget(go, 1, 0, Qt.AlignTop | Qt.AlignHCenter)
        self.stack = QStackedWidget()
        self.stack.addWidget(empty)
        self.stack.addWidget(scroll)

        header = QWidget()
        header_layout = QVBoxLayout(header)
        header_layout.setContentsMargins(24, 20, 24, 0)
        header_layout.addLayout(top)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(header)
        outer.addWidget(self.stack, 1)
        self._update_service_widgets()
        self._set_empty(True)

    def _error(self, title: str, message: str, details: str | None = None) -> None:
        show_error(self, title, message, details, self.ws.paths.log)

    def _set_empty(self, empty: bool) -> None:
        self.stack.setCurrentIndex(0 if empty else 1)
        several = len(self.models) > 1
        self.picker.setVisible(several)
        self.picker_label.setVisible(several)

    # -- project and model --------------------------------------------------------------------------

    def set_project(self, name: str | None) -> None:
        """Show project ``name``'s newest model (a running service keeps running)."""
        self.project = name
        self.model_id = None
        self.refresh()
        if name is not None:
            ws = self.ws
            self.tasks.run(lambda state: ws.project_info(name).get("input_kind"),
                           lambda kind: self.set_input_kind(kind) if self.project == name else None)

    def set_input_kind(self, kind: str | None) -> None:
        """Switch the try-it card to the model's input: photos, sound clips or texts."""
        self.set_sound(kind == "audio")
        text = kind == "text"
        self.text_try.setVisible(text)
        if text:
            self.drop.hide()
            self.camera_button.hide()
            self.choose_button.hide()
            self.try_card_subtitle.setText("Type or paste a text to see what the model says.")
            self.scores.empty_text = "The model's answer for your text appears here."
        else:
            self.choose_button.show()

    def try_text(self, text: str) -> None:
        """Classify a typed text with the current model (off the UI thread) and show the scores."""
        if self.model_id is None:
            return
        model_id = self.model_id
        self.answer.setText("Reading…")
        self.scores.set_rows([])

        def done(results):
            prediction = results[0]
            self.last_prediction = prediction
            self.answer.setText(f"{prediction['label']}  <span style='font-size:15px; font-weight:400'>"
                                f"({prediction['score']:.0%} sure)</span>")
            self.scores.set_rows((label, (score,)) for label, score in top_scores(prediction))

        def failed(message, details):
            self.answer.setText("")
            self._error("Could not read this text", message, details)

        self.tasks.run(lambda state: self.ws.predict_texts(model_id, [text]), done, on_failed=failed)

    def make_recorder(self):
        """The record bar of sound models (tests and previews pass a generated signal instead)."""
        return RecorderWidget(with_classes=False, button_text="Record and classify", countdown_s=0.5)

    def set_sound(self, sound: bool) -> None:
        """Switch the try-it card between photos and sound clips."""
        self.sound = sound
        self.drop.setVisible(not sound)
        self.camera_button.setVisible(not sound and bool(cameras()))
        self.clip_player.setVisible(sound)
        self.recorder.setVisible(sound)
        self.choose_button.setText("Choose a WAV clip…" if sound else "Choose a photo…")
        self.try_card_subtitle.setText("Record a clip or choose a WAV file to see what the model says." if sound
                                       else "Drop a photo to see what the model says.")
        self.scores.empty_text = ("The model's answer for your clip appears here." if sound else
                                  "The model's answer for your photo appears here.")

    def _recorded(self, _label: str, wav: bytes) -> None:
        """A clip from the microphone: save it (worker) and classify it."""
        ws = self.ws

        def save(state):
            path = ws.paths.tmp / "try-it-recording.wav"
            path.write_bytes(wav)
            return str(path)

        self.tasks.run(save, self.try_file)

    def refresh(self) -> None:
        """Re-read the project's models (a running service keeps serving its model)."""
        self.models, keep = fill_model_picker(self.picker, self.ws, self.project, self.model_id)
        self._set_empty(not self.models)
        if not self.models:
            self.model_id = None
            self._update_service_widgets()
            return
        self.model_id = keep or self.models[0]["id"]
        self.picker.setCurrentIndex(self.picker.findData(self.model_id))
        self._update_service_widgets()
        if not self.out_dir.text():
            self.out_dir.setText(str(Path.home() / "ModelDesk exports" / (self.project or "model")))

    def _picked(self, index: int) -> None:
        model_id = self.picker.itemData(index)
        if model_id:
            self.model_id = model_id
            self.answer.setText("")
            self.scores.set_rows([])

    # -- try it ---------------------------------------------------------------------------------------

    def _choose_photo(self) -> None:
        if self.sound:
            path, _ = QFileDialog.getOpenFileName(self, "Choose a sound clip", str(Path.home()),
                                                  "WAV sound clips (*.wav *.wave)")
            if path:
                self.try_file(path)
            return
        path, _ = QFileDialog.getOpenFileName(self, "Choose a photo", str(Path.home()),
                                              "Images (" + " ".join(f"*{s}" for s in IMAGE_SUFFIXES) + ")")
        if path:
            self.try_file(path)

    def _take_photo(self) -> None:
        if cameras():
            self._camera = CameraDialog(self, self.try_file, self._error)

    def try_file(self, path: str) -> None:
        """Predict ``path`` with the current model (off the UI thread) and show the scores."""
        if self.model_id is None:
            return
        model_id = self.model_id
        sound = self.sound
        if not sound:
            self.drop.show_image(path)
        self.answer.setText("Listening…" if sound else "Looking…")
        self.scores.set_rows([])

        def work(state):
            results = self.ws.predict(model_id, [path])
            return results, (load_peaks(path) if sound else None)

        def done(result):
            results, clip = result
            if clip is not None:
                self.clip_player.set_clip(path, *clip)
            prediction = results[0]
            self.last_prediction = prediction
            if "boxes" in prediction:  # a detector: the boxes on the photo, one row per box
                self.drop.show_image(path, prediction["boxes"])
                self.answer.setText(found_words(prediction["boxes"]))
                self.scores.set_rows((b["label"], (b["score"],)) for b in prediction["boxes"][:10])
                return
            self.answer.setText(f"{prediction['label']}  <span style='font-size:15px; font-weight:400'>"
                                f"({prediction['score']:.0%} sure)</span>")
            self.scores.set_rows((label, (score,)) for label, score in top_scores(prediction))

        def failed(message, details):
            self.answer.setText("")
            self._error("Could not read this clip" if sound else "Could not read this photo", message, details)

        self.tasks.run(work, done, on_failed=failed)

    # -- service ----------------------------------------------------------------------------------------

    def _update_service_widgets(self, starting: bool = False) -> None:
        running = self.service is not None
        self.service_button.setText("Stop service" if running else "Start service")
        self.service_button.setEnabled(not starting and (running or self.model_id is not None))
        self.console_button.setEnabled(running)
        self.copy_button.setEnabled(running)
        if starting:
            self.service_state.setText("Starting…")
            self.service_url.setText("")
        elif running:
            other = f" for '{self.service_project}'" if self.service_project != self.project else ""
            self.service_state.setText(f"<span style='color:#1e9e5a'>●</span> Running{other} at")
            self.service_url.setText(f"<a href='{self.service.url}'>{self.service.url}</a>")
            self.service_hint.setText(f"From a program: <code>curl -F file=@photo.jpg {self.service.url}v1/predict"
                                      "</code>. It stops when you close ModelDesk.")
        else:
            self.service_state.setText("<span style='color:#9aa4b5'>●</span> Not running")
            self.service_url.setText("")
        self.service_hint.setVisible(running and not starting)

    def toggle_service(self) -> None:
        """Start the service on the current model, or stop the running one."""
        if self.service is not None:
            self.stop_service()
        elif self.model_id is not None:
            self.start_service()

    def start_service(self) -> None:
        """Start the local service for the current model (off the UI thread)."""
        model_id, project = self.model_id, self.project
        self._update_service_widgets(starting=True)

        def done(handle):
            self.service, self.service_model, self.service_project = handle, model_id, project
            self._update_service_widgets()
            self.status_changed.emit()

        def failed(message, details):
            self._update_service_widgets()
            self._error("The service did not start", message, details)

        self.tasks.run(lambda state: self.ws.start_service(model_id), done, on_failed=failed)

    def stop_service(self) -> None:
        """Stop the running service (off the UI thread)."""
        handle, self.service = self.service, None
        self._update_service_widgets(starting=True)
        self.service_state.setText("Stopping…")

        def done(_):
            self._update_service_widgets()
            self.status_changed.emit()

        self.tasks.run(lambda state: handle.stop(), done, title="The service did not stop cleanly")

    def copy_address(self) -> None:
        """Put the service's address on the clipboard."""
        if self.service is not None:
            QGuiApplication.clipboard().setText(self.service.url)

    def open_console(self) -> None:
        """Open the service's browser console."""
        if self.service is not None:
            QDesktopServices.openUrl(QUrl(self.service.url))

    def shutdown(self) -> None:
        """Stop the service now (the app is closing)."""
        if self.service is not None:
            handle, self.service = self.service, None
            handle.stop(timeout=3.0)

    # -- export -------------------------------------------------------------------------------------------

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export to folder", self.out_dir.text() or str(Path.home()))
        if folder:
            self.out_dir.setText(folder)

    def _set_export_enabled(self, enabled: bool) -> None:
        for button in (self.export_button, self.compress_button, self.bundle_button):
            button.setEnabled(enabled)

    def export(self, *, compress: bool, bundle: bool) -> None:
        """Export the current model to the chosen folder; ``compress``/``bundle`` as in ``ws.export_model``."""
        if self.model_id is None:
            return
        folder = self.out_dir.text().strip()
        if not folder:
            self._choose_folder()
            folder = self.out_dir.text().strip()
            if not folder:
                return
        model_id = self.model_id
        name = self.project or model_id
        target = str(Path(folder) / (f"{name}-bundle" if bundle else f"{name}-model-small" if compress
                                     else f"{name}-model"))
        what = "Building the bundle" if bundle else "Trying smaller versions" if compress else "Exporting"
        self._set_export_enabled(False)
        self.export_result.setText("")
        self.export_result.hide()
        if compress:
            self.candidates.hide()

        def describe(message):
            return f"tried {candidate_words(str(message))}" if compress else str(message)

        def work(state):
            return self.ws.export_model(model_id, target, compress=compress, bundle=bundle,
                                        progress=cancellable_progress(state, describe))

        def done(result):
            self.last_export = result
            self._show_export(result, compress=compress, bundle=bundle)

        def ended():
            self._set_export_enabled(True)

        def cancelled():
            self.export_result.setText("Cancelled.")
            self.export_result.show()

        handle = self.tasks.run(work, done, title="Export failed", on_cancelled=cancelled,
                                panel=self.progress, panel_title=what)
        handle.ended.connect(ended)

    def _show_export(self, result: dict, *, compress: bool, bundle: bool) -> None:
        path = result.get("path") or self.out_dir.text()
        folder_link = QUrl.fromLocalFile(str(Path(path) if Path(path).is_dir() else Path(path).parent)).toString()
        text = f"Saved to <a href='{folder_link}'>{path}</a> ({human_size(result.get('size_bytes'))})."
        if bundle:
            text = (f"Bundle ready in <a href='{folder_link}'>{path}</a>. Copy the folder to another computer; "
                    "its README says how to run it.")
        if compress and result.get("candidates"):
            speedup = result.get("speedup")
            before, after = result.get("accuracy_fp32"), result.get("accuracy_compressed")
            kept = candidate_words(str(result.get("chosen", "")))
            text = f"Kept <b>{kept}</b>"
            if isinstance(speedup, (int, float)):
                text += f": {speedup:.1f}× faster"
            if isinstance(before, (int, float)) and isinstance(after, (int, float)):
                text += f", accuracy {before:.0%} → {after:.0%}"
            text += f". Saved to <a href='{folder_link}'>{path}</a>."
            self._fill_candidates(result["candidates"])
        self.export_result.setText(text)
        self.export_result.show()

    def _fill_candidates(self, candidates: list[dict]) -> None:
        self.candidates.setRowCount(len(candidates))
        for row, candidate in enumerate(candidates):
            latency = candidate.get("latency_ms")
            accuracy = candidate.get("accuracy")
            cells = [candidate_words(candidate.get("name", "")), human_size(candidate.get("size_bytes")),
                     f"{latency:.1f} ms" if isinstance(latency, (int, float)) else "–",
                     f"{accuracy:.1%}" if isinstance(accuracy, (int, float)) else "–",
                     verdict(candidate)]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(f"{candidate.get('name', '')}: {candidate.get('reason', '')}")
                if candidate.get("kept"):
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                    good = QColor(theme.current().good)
                    good.setAlpha(40)
                    item.setBackground(good)
                self.candidates.setItem(row, col, item)
        height = self.candidates.horizontalHeader().height() + sum(
            self.candidates.rowHeight(r) for r in range(len(candidates))) + 4
        self.candidates.setFixedHeight(height)
        self.candidates.show()

"""The "Put to work" card: run the model on a webcam, a video, a folder or a stream, with a rule
made from its own labels, on an edge server in the background; the console opens in the browser."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSlider,
)

from modeldesk.app import edge_launch

from ...page import card
from ...widgets import camera

#: (kind, words in the source list, placeholder of the address field)
SOURCES = (
    ("camera", "The webcam", ""),
    ("file", "A video file", "Choose a video (MP4, AVI, MKV, MOV…)"),
    ("folder", "A folder", "Choose a folder: each new picture in it is looked at once"),
    ("stream", "A stream", "rtsp://192.168.1.20/stream1 or http://…/video.mjpg"),
)
PICTURES_ABOUT = (
    "Let the model watch a webcam, a video, a folder or a stream, and note each time it sees what you "
    "choose. It runs in the background; the console in your browser shows it."
)
FILES_ABOUT = (
    "Let the model answer each new {noun} put in a folder, and note each time it says what you choose. "
    "It runs in the background; the console in your browser shows it."
)
VIDEO_FILTER = "Videos (*.mp4 *.avi *.mkv *.mov *.webm *.m4v);;All files (*)"


class PutToWorkCard(QObject):
    """``run(fn, on_done, on_failed=...)`` is the page's background runner.

    Signals
    -------
    changed() : a pipeline was started (the model is in use).
    """

    changed = Signal()

    def __init__(self, workspace, run, report_error, parent=None):
        super().__init__(parent)
        self.ws, self.run, self.report_error = workspace, run, report_error
        self.project: str | None = None
        self.model_id: str | None = None
        self.edge = None  # the EdgeProcess this card started (reused for the next pipeline)
        self.last: dict | None = None
        self.busy = False
        self.frame, layout = card("Put to work")
        self.about = QLabel(PICTURES_ABOUT)
        self.about.setObjectName("Muted")
        self.about.setWordWrap(True)
        layout.addWidget(self.about)
        self.kind = QComboBox()
        self.has_camera = bool(camera.cameras())
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.kind.setSizePolicy(QSizePolicy.Maximum, QSizePolicy.Fixed)  # the address takes the room
        self.address = QLineEdit()
        self.address.setClearButtonEnabled(True)
        self.choose = QPushButton("Choose…")
        self.choose.clicked.connect(self.choose_source)
        self.label = QComboBox()
        self.label.setMinimumContentsLength(12)
        self.label.setSizePolicy(QSizePolicy.Maximum, QSizePolicy.Fixed)
        self.area = False  # a segmentation model: the rule is the share of the picture a class covers
        self.score = QSlider(Qt.Horizontal)
        self.score.setRange(5, 100)
        self.score.setSingleStep(5)
        self.score.setPageStep(10)
        self.score.setValue(80)
        self.score_text = QLabel()
        self.score.valueChanged.connect(self._score_changed)
        self.button = QPushButton("Put to work")
        self.button.setObjectName("Primary")
        self.button.clicked.connect(self.start)
        self.console_button = QPushButton("Open console")
        self.console_button.clicked.connect(self.open_console)
        self.state = QLabel()
        self.state.setWordWrap(True)
        self.state.setTextInteractionFlags(Qt.TextSelectableByMouse)
        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        grid.addWidget(QLabel("Watch"), 0, 0)
        source_row = QHBoxLayout()
        source_row.addWidget(self.kind)
        source_row.addWidget(self.address, 1)
        source_row.addWidget(self.choose)
        grid.addLayout(source_row, 0, 1)
        self.rule_words = QLabel("Note when it sees")
        grid.addWidget(self.rule_words, 1, 0)
        rule_row = QHBoxLayout()
        rule_row.addWidget(self.label)
        self.at_least = QLabel("at least")
        rule_row.addWidget(self.at_least)
        rule_row.addWidget(self.score, 1)
        rule_row.addWidget(self.score_text)
        grid.addLayout(rule_row, 1, 1)
        layout.addLayout(grid)
        buttons = QHBoxLayout()
        buttons.addWidget(self.state, 1)
        buttons.addWidget(self.console_button)
        buttons.addWidget(self.button)
        layout.addLayout(buttons)
        self._offer_sources(pictures=True, noun="picture")
        self._kind_changed()
        self._score_changed(self.score.value())
        self.show_state()

    # -- what is chosen ------------------------------------------------------------------------------------

    @property
    def source_kind(self) -> str:
        return self.kind.currentData()

    def source(self) -> str:
        """The source as the edge server reads it: ``camera:0``, a path, or a URL."""
        if self.source_kind == "camera":
            return edge_launch.camera_source(0)
        return self.address.text().strip()

    def _offer_sources(self, *, pictures: bool, noun: str) -> None:
        """Every source for a model that reads pictures; a folder of files for any other (video,
        cameras and streams carry pictures only)."""
        self.kind.blockSignals(True)
        self.kind.clear()
        for kind, words, _ in SOURCES:
            if (kind != "camera" or self.has_camera) and (pictures or kind == "folder"):
                self.kind.addItem(words, kind)
        self.kind.blockSignals(False)
        self.pictures, self.noun = pictures, noun
        self.about.setText(PICTURES_ABOUT if pictures else FILES_ABOUT.format(noun=noun))
        self.rule_words.setText("Note when it sees" if pictures else "Note when it says")

    def _kind_changed(self, *_args) -> None:
        kind = self.source_kind
        placeholder = next(p for k, _, p in SOURCES if k == kind)
        if kind == "folder" and not self.pictures:
            placeholder = f"Choose a folder: each new {self.noun} in it is answered once"
        self.address.setVisible(kind != "camera")
        self.choose.setVisible(kind in ("file", "folder"))
        self.address.setPlaceholderText(placeholder)
        self.show_state()

    def _score_changed(self, value: int) -> None:
        # "covers at least 10%" (of the picture: the tooltip says it; the row must fit a narrow window)
        self.score_text.setText(f"{value}%" if self.area else f"{value}% sure")
        self.score.setToolTip("The share of the picture the class covers" if self.area else "")

    def _offer_rule(self, area: bool) -> None:
        """A segmentation model's rule is the share of the picture a class covers, not a certainty."""
        if area != self.area:
            self.score.setRange(1 if area else 5, 100)
            self.score.setValue(10 if area else 80)
        self.area = area
        self.at_least.setText("covers at least" if area else "at least")
        self.rule_words.setText(
            "Note when" if area else "Note when it sees" if self.pictures else "Note when it says"
        )
        self._score_changed(self.score.value())

    def choose_source(self) -> None:
        if self.source_kind == "folder":
            path = QFileDialog.getExistingDirectory(self.frame, "Folder to watch")
        else:
            path, _ = QFileDialog.getOpenFileName(self.frame, "Video to watch", "", VIDEO_FILTER)
        if path:
            self.address.setText(path)

    def set_model(self, project: str | None, model_id: str | None) -> None:
        """Follow the page's model: its labels fill the rule's list (read off the UI thread)."""
        self.project, self.model_id = project, model_id
        self.label.clear()
        self.show_state()
        if model_id is None:
            return
        ws = self.ws

        def done(facts):
            if self.model_id == model_id:
                self._offer_sources(pictures=facts["pictures"], noun=facts["noun"])
                self._offer_rule(bool(facts.get("area")))
                self._kind_changed()
                self.label.clear()
                self.label.addItems(facts["labels"])
                if set(facts["labels"]) == {"good", "defect"}:  # an anomaly model: the rule is for defects
                    self.label.setCurrentText("defect")
                self.show_state()

        self.run(
            lambda state: edge_launch.model_facts(ws, model_id),
            done,
            title="The model's labels were not read",
        )

    # -- start -------------------------------------------------------------------------------------------

    def show_state(self, message: str | None = None) -> None:
        ready = self.model_id is not None and self.label.count() > 0 and not self.busy
        self.button.setEnabled(ready)
        self.button.setText("Starting…" if self.busy else "Put to work")
        running = self.edge is not None and self.edge.running
        self.console_button.setEnabled(running)
        if message is not None:
            self.state.setText(message)
        elif not running and not self.busy:
            self.state.setText("<span style='color:#9aa4b5'>●</span> Not running")

    def start(self) -> None:
        """Start (or reuse) the edge server, add the model, start the pipeline; all off the UI thread."""
        source = self.source()
        if not source:
            self.report_error(
                "Choose what to watch",
                "Write a stream address, or choose a video file or a folder, then press Put to work.",
            )
            return
        ws, model_id, project, edge = self.ws, self.model_id, self.project, self.edge
        label, score, area = self.label.currentText(), self.score.value() / 100, self.area
        self.busy = True
        self.show_state("Starting the edge server and the model…")

        def work(state):
            return edge_launch.put_to_work(
                ws, model_id, project=project, source=source, label=label, score=score, edge=edge, area=area
            )

        def done(result):
            self.busy = False
            self.edge, self.last = result["edge"], result
            where = "the webcam" if source.startswith("camera:") else source
            self.show_state(
                f"<span style='color:#1e9e5a'>●</span> Watching {where}: an event is noted when "
                + (
                    f"<b>{label}</b> covers {round(score * 100)}% of the picture or more."
                    if area
                    else f"it sees <b>{label}</b> at {round(score * 100)}% or more."
                )
                + " It stops when you close ModelDesk."
            )
            self.changed.emit()
            self.open_console()

        def failed(message, details):
            self.busy = False
            self.show_state()
            self.report_error("The model was not put to work", message, details)

        self.run(work, done, on_failed=failed)

    def open_console(self) -> None:
        if self.edge is None:
            return
        if not QDesktopServices.openUrl(QUrl(self.edge.console_url)):
            self.report_error(
                "Could not open the console", f"No browser opened {self.edge.url}. Open the address yourself."
            )

    def shutdown(self) -> None:
        """Stop the edge server this card started (the app is closing)."""
        if self.edge is not None:
            edge, self.edge = self.edge, None
            edge.stop(timeout=3.0)

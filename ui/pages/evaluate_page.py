"""The Evaluate page: how good the model is, in plain words, and where it goes wrong.

Shows the headline accuracy on the held-out photos, the confusion matrix, per-class precision and
recall, and the misclassified photos as thumbnails; clicking one asks the frame to open it for
relabeling (``relabel_requested``). The report is read and the thumbnails are made off the UI thread.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QSize, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QIcon, QPixmap
from PySide6.QtWidgets import (QComboBox, QFrame, QHBoxLayout, QLabel, QListView, QListWidget,
                               QListWidgetItem, QPushButton, QScrollArea, QSizePolicy, QStackedWidget, QVBoxLayout,
                               QWidget)

from modeldesk.ui.charts import BarChart, ConfusionMatrixView
from modeldesk.ui.pages.detection_summary import detection_words, mistake_caption
from modeldesk.ui.job_watcher import TaskGroup
from modeldesk.ui.widgets import show_error
from modeldesk.ui.widgets.clip_player import ClipPlayer, load_peaks
from modeldesk.ui.widgets.model_picker import fill_model_picker

log = logging.getLogger(__name__)

THUMB = 112
MAX_MISTAKES = 200


def headline(accuracy: float | None, n: int | None = None) -> str:
    """``0.97`` -> ``Right 97 times out of 100``; with few test photos, the real counts."""
    if not isinstance(accuracy, (int, float)):
        return "No accuracy measured yet"
    if n and n < 100:
        right = round(accuracy * n)
        return f"Right {right} times out of {n}"
    return f"Right {round(accuracy * 100)} times out of 100"


def per_class_rows(report: dict) -> list[tuple[str, tuple[float, float]]]:
    """``(label, (precision, recall))`` rows from the report's ``per_class`` (a dict or a list)."""
    per_class = report.get("per_class") or {}
    if isinstance(per_class, dict):
        items = per_class.items()
    else:
        items = ((entry.get("label"), entry) for entry in per_class)
    rows = []
    for label, values in items:
        rows.append((str(label), (float(values.get("precision", 0.0)), float(values.get("recall", 0.0)))))
    return rows


def most_confused(report: dict) -> tuple[str, str, int] | None:
    """The (true, predicted, count) pair the model mixes up most, or None when it makes no mistake."""
    labels, matrix = report.get("labels") or [], report.get("confusion") or []
    best = None
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if i != j and value and (best is None or value > best[2]):
                best = (labels[i], labels[j], int(value))
    return best


class EvaluatePage(QWidget):
    """Evaluation of the project's models.

    Signals
    -------
    status_changed() : nothing the sidebar tracks changes here; kept for the page contract.
    navigate(str) : go to another page ("train").
    relabel_requested(int) : the user clicked a misclassified photo (its sample id).
    """

    status_changed = Signal()
    navigate = Signal(str)
    relabel_requested = Signal(int)

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.project: str | None = None
        self.models: list[dict] = []
        self.model_id: str | None = None
        self.report: dict | None = None
        self.tasks = TaskGroup(self._error, self)
        self._generation = 0
        self._mistakes_generation = 0
        self.sound = False  # a sound project's model: clips are played, their nouns are "clips"
        self._build()

    # -- layout ----------------------------------------------------------------------------------

    def _build(self) -> None:
        title = QLabel("How good is the model?")
        title.setObjectName("PageTitle")
        self.picker = QComboBox()
        self.picker.setMinimumWidth(280)
        self.picker.currentIndexChanged.connect(self._picked)
        self.picker_label = QLabel("Model")
        self.report_button = QPushButton("Open full report")
        self.report_button.setToolTip("The whole evaluation as a web page you can save or share.")
        self.report_button.clicked.connect(self.open_report)
        top = QHBoxLayout()
        top.addWidget(title)
        top.addStretch(1)
        top.addWidget(self.picker_label)
        top.addWidget(self.picker)
        top.addWidget(self.report_button)

        self.hero = QLabel()
        self.hero.setObjectName("Hero")
        self.hero_detail = QLabel()
        self.hero_detail.setObjectName("Muted")
        self.hero_detail.setWordWrap(True)
        self.advice = QLabel()
        self.advice.setWordWrap(True)
        hero_card = QFrame()
        hero_card.setObjectName("Card")
        hero_layout = QVBoxLayout(hero_card)
        hero_layout.setContentsMargins(16, 14, 16, 14)
        hero_layout.addWidget(self.hero)
        hero_layout.addWidget(self.hero_detail)
        hero_layout.addWidget(self.advice)

        self.matrix = ConfusionMatrixView()
        self.matrix.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.matrix.cell_clicked.connect(self._filter_mistakes)
        matrix_card = self.matrix_card = QFrame()
        matrix_card.setObjectName("Card")
        matrix_layout = QVBoxLayout(matrix_card)
        matrix_layout.addWidget(QLabel("<b>What it answered, for each right answer</b>"))
        hint = QLabel("Green: right. Red: mixed up. Click a square to see those photos.")
        hint.setObjectName("Muted")
        hint.setWordWrap(True)
        self.matrix_hint = hint
        matrix_layout.addWidget(hint)
        matrix_layout.addWidget(self.matrix, 1)

        self.bars = BarChart(("Precision", "Recall"))
        bars_card = QFrame()
        bars_card.setObjectName("Card")
        bars_layout = QVBoxLayout(bars_card)
        bars_layout.addWidget(QLabel("<b>Per class</b>"))
        explain = QLabel("Precision: when it says this class, how often it is right.\n"
                         "Recall: of the photos of this class, how many it finds.")
        explain.setObjectName("Muted")
        explain.setWordWrap(True)
        self.bars_hint = explain
        bars_layout.addWidget(explain)
        bars_layout.addWidget(self.bars)
        bars_layout.addStretch(1)
        middle = QHBoxLayout()
        middle.setSpacing(12)
        middle.addWidget(matrix_card, 3)
        middle.addWidget(bars_card, 2)

        self.mistakes_title = QLabel("<b>Photos it got wrong</b>")
        self.show_all = QPushButton("Show all")
        self.show_all.clicked.connect(lambda: self._filter_mistakes(None, None))
        self.show_all.hide()
        self.mistakes_hint = QLabel("Click a photo to check its label: a wrong label teaches the model wrong.")
        self.mistakes_hint.setObjectName("Muted")
        self.mistakes = QListWidget()
        self.mistakes.setObjectName("Gallery")
        self.mistakes.setViewMode(QListView.IconMode)
        self.mistakes.setIconSize(QSize(THUMB, THUMB))
        self.mistakes.setGridSize(QSize(THUMB + 36, THUMB + 44))
        self.mistakes.setResizeMode(QListView.Adjust)
        self.mistakes.setMovement(QListView.Static)
        self.mistakes.setWordWrap(True)
        self.mistakes.setUniformItemSizes(True)
        self.mistakes.setMinimumHeight(THUMB + 70)
        self.mistakes.itemClicked.connect(self._mistake_clicked)
        self.mistakes.itemDoubleClicked.connect(self._mistake_relabel)
        self.clip_player = ClipPlayer()
        self.clip_player.hide()
        mistakes_card = QFrame()
        mistakes_card.setObjectName("Card")
        mistakes_layout = QVBoxLayout(mistakes_card)
        row = QHBoxLayout()
        row.addWidget(self.mistakes_title)
        row.addStretch(1)
        row.addWidget(self.show_all)
        mistakes_layout.addLayout(row)
        mistakes_layout.addWidget(self.mistakes_hint)
        mistakes_layout.addWidget(self.mistakes, 1)
        mistakes_layout.addWidget(self.clip_player)
        self.no_mistakes = QLabel("None: every test sample was recognised correctly.")
        self.no_mistakes.setObjectName("Muted")
        mistakes_layout.addWidget(self.no_mistakes)

        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(24, 20, 24, 20)
        layout.setSpacing(12)
        layout.addWidget(hero_card)
        layout.addLayout(middle)
        layout.addWidget(mistakes_card)
        layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(content)

        self.empty = QWidget()
        empty_layout = QVBoxLayout(self.empty)
        empty_layout.addStretch(1)
        self.empty_text = QLabel("No model yet.\nTrain one and its evaluation appears here.")
        self.empty_text.setAlignment(Qt.AlignCenter)
        self.empty_text.setObjectName("Muted")
        self.empty_button = QPushButton("Go to training")
        self.empty_button.setObjectName("Primary")
        self.empty_button.clicked.connect(lambda: self.navigate.emit("train"))
        empty_layout.addWidget(self.empty_text)
        empty_layout.addWidget(self.empty_button, 0, Qt.AlignCenter)
        empty_layout.addStretch(2)

        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(scroll)
        outer = QVBoxLayout(self)
        header = QWidget()
        header_layout = QVBoxLayout(header)
        header_layout.setContentsMargins(24, 20, 24, 0)
        header_layout.addLayout(top)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(header)
        outer.addWidget(self.stack, 1)
        self._set_empty(True)

    def _error(self, title: str, message: str, details: str | None = None) -> None:
        show_error(self, title, message, details, self.ws.paths.log)

    def _set_empty(self, empty: bool) -> None:
        self.stack.setCurrentIndex(0 if empty else 1)
        self.report_button.setVisible(not empty)
        several = len(self.models) > 1
        self.picker.setVisible(several)
        self.picker_label.setVisible(several)

    # -- project and models -----------------------------------------------------------------------

    def set_project(self, name: str | None) -> None:
        """Show the newest model of project ``name`` (None: nothing)."""
        self.project = name
        self.model_id = None
        self.refresh()

    def refresh(self) -> None:
        """Re-read the project's models; keep the picked one if it still exists, else the newest."""
        self.models, keep = fill_model_picker(self.picker, self.ws, self.project, self.model_id)
        if not self.models:
            self.model_id = None
            self.report = None
            self._set_empty(True)
            return
        self._set_empty(False)
        target = keep or self.models[0]["id"]
        self.picker.setCurrentIndex(self.picker.findData(target))
        if target != self.model_id or self.report is None:
            self.show_model(target)

    def _picked(self, index: int) -> None:
        model_id = self.picker.itemData(index)
        if model_id and model_id != self.model_id:
            self.show_model(model_id)

    def show_model(self, model_id: str) -> None:
        """Load and show the evaluation of ``model_id`` (read off the UI thread)."""
        self.model_id = model_id
        self._generation += 1
        generation = self._generation
        self.hero.setText("Reading the evaluation…")
        self.hero_detail.setText("")
        self.advice.setText("")

        def done(result):
            report, kind = result
            if generation == self._generation:
                self.sound = kind == "audio"
                self.input_kind = kind
                self.clip_player.hide()  # shown with the first clip clicked
                self.clip_player.clear()
                self.matrix_hint.setText(f"Green: right. Red: mixed up. Click a square to see those {self.noun}s.")
                self.bars_hint.setText(f"Precision: when it says this class, how often it is right.\n"
                                       f"Recall: of the {self.noun}s of this class, how many it finds.")
                self._show_report(report)

        project, ws = self.project, self.ws

        def read(state):
            kind = ws.project_info(project).get("input_kind") if project else None
            return ws.model_report(model_id), kind

        self.tasks.run(read, done, title="Could not read the evaluation")

    @property
    def noun(self) -> str:
        return "clip" if self.sound else "text" if getattr(self, "input_kind", None) == "text" else "photo"

    def _show_report(self, report: dict) -> None:
        self.report = report
        n = report.get("n") or sum(sum(row) for row in report.get("confusion") or [])
        self.hero.setText(headline(report.get("accuracy"), n or None))
        detail = (f"on {n} {self.noun}s it never saw during training." if n else
                  f"on {self.noun}s it never saw during training.")
        if n and n < 20:
            detail += (f" With only {n} test {self.noun}s this number is rough: label more {self.noun}s for a "
                       "reliable one.")
        self.hero_detail.setText(detail)
        confused = most_confused(report)
        detector = "map50" in report
        self.matrix_card.setVisible(not detector)  # no confusion matrix for boxes
        if detector:  # boxes found and missed instead of labels
            hero, detail, advice = detection_words(report)
            self.hero.setText(hero)
            self.hero_detail.setText(detail)
            self.advice.setText(advice)
        elif confused:
            true, predicted, count = confused
            times = "once" if count == 1 else f"{count} times"
            self.advice.setText(f"It mixes up <b>{true}</b> and <b>{predicted}</b> most often ({times}). "
                                f"More varied {self.noun}s of both would help.")
        else:
            self.advice.setText(f"It made no mistake on the test {self.noun}s.")
        labels = report.get("labels") or []
        if labels and report.get("confusion"):
            self.matrix.set_data(labels, report["confusion"])
            self.matrix.setFixedHeight(self.matrix.sizeHint().height())
        self.bars.set_rows(per_class_rows(report))
        self._filter_mistakes(None, None)

    # -- mistakes ---------------------------------------------------------------------------------

    def _filter_mistakes(self, true: str | None, predicted: str | None) -> None:
        mistakes = [m for m in (self.report or {}).get("mistakes") or []
                    if (true is None or m.get("true") == true)
                    and (predicted is None or m.get("predicted") == predicted)]
        if true is not None and true == predicted:
            self.mistakes_title.setText(f"<b>'{true}' {self.noun}s it got right</b> are not listed; "
                                        "pick a red square")
        elif true is not None:
            self.mistakes_title.setText(f"<b>'{true}' {self.noun}s it took for '{predicted}'</b> ({len(mistakes)})")
        else:
            total = len((self.report or {}).get("mistakes") or [])
            detector = "map50" in (self.report or {})
            what = "Photos with missed objects or false boxes" if detector else f"{self.noun.capitalize()}s it got wrong"
            self.mistakes_title.setText(f"<b>{what}</b> ({total})")
        self.show_all.setVisible(true is not None)
        self._mistakes_generation += 1
        self.mistakes.clear()
        shown = mistakes[:MAX_MISTAKES]
        for mistake in shown:
            sample_id = mistake.get("sample_id")
            caption, tip = mistake_caption(mistake)
            item = QListWidgetItem(caption)
            item.setData(Qt.UserRole, sample_id)
            item.setToolTip(tip.replace("\nClick to check its label.",
                                        "\nClick to play it, double-click to check its label.") if self.sound else tip)
            item.setSizeHint(QSize(THUMB + 30, THUMB + 40))
            self.mistakes.addItem(item)
        self.mistakes_hint.setText(
            "Click a clip to hear it, double-click to check its label: a wrong label teaches the model wrong."
            if self.sound else "Click a photo to check its boxes: a missing box teaches the model wrong."
            if "map50" in (self.report or {}) else
            f"Click a {self.noun} to check its label: a wrong label teaches the model wrong.")
        self.mistakes_hint.setVisible(bool(mistakes))
        self.mistakes.setVisible(bool(mistakes))
        self.no_mistakes.setVisible(not mistakes)
        if "mistakes" not in (self.report or {}):
            self.mistakes_title.setText(f"<b>{self.noun.capitalize()}s it got wrong</b>")
            self.no_mistakes.setText("This model's evaluation does not list them.")
        elif true is not None:
            self.no_mistakes.setText("None in this square.")
        else:
            self.no_mistakes.setText(f"None: every test {self.noun} was recognised correctly.")
        if shown:
            self._load_thumbnails(shown)

    def _load_thumbnails(self, mistakes: list[dict]) -> None:
        """Find each mistake's sample (by id, else by its media hash ``key``) and its thumbnail."""
        generation, project, ws, sound = self._mistakes_generation, self.project, self.ws, self.sound

        def make(state):
            by_hash = {}
            if any(m.get("sample_id") is None for m in mistakes):
                by_hash = ws.sample_ids_for_keys(project, [m.get("key") for m in mistakes if m.get("key")])
            found = []
            for mistake in mistakes:
                if state.is_interruption_requested():
                    break
                sample_id = mistake.get("sample_id")
                if sample_id is None:
                    sample_id = by_hash.get(mistake.get("key"))
                path = clip = None
                if sample_id is not None:
                    try:
                        path = str(ws.thumbnail(sample_id, THUMB))
                        if sound:
                            media = ws.sample(sample_id).path
                            clip = (media, *load_peaks(media))
                    except (KeyError, ValueError, OSError, EOFError) as exc:
                        log.warning("no thumbnail for sample %s: %s", sample_id, exc)
                found.append((sample_id, path, clip))
            return found

        def done(found):
            if generation != self._mistakes_generation:  # the list was rebuilt meanwhile
                return
            for row, (sample_id, path, clip) in enumerate(found):
                item = self.mistakes.item(row)
                if item is None:
                    continue
                item.setData(Qt.UserRole, sample_id)
                item.setData(Qt.UserRole + 1, clip)
                if path:
                    item.setIcon(QIcon(QPixmap(path)))

        self.tasks.run(make, done, on_failed=lambda message, details: log.warning("thumbnails: %s", message))

    def _mistake_clicked(self, item: QListWidgetItem) -> None:
        clip = item.data(Qt.UserRole + 1)
        if self.sound:
            if clip:
                path, peaks, duration = clip
                self.clip_player.set_clip(path, peaks, duration, f"{item.text()} · {duration:.2f} s")
                self.clip_player.show()
                self.clip_player.play()
            return
        self._mistake_relabel(item)

    def _mistake_relabel(self, item: QListWidgetItem) -> None:
        sample_id = item.data(Qt.UserRole)
        if sample_id is not None:
            self.relabel_requested.emit(int(sample_id))

    # -- report -----------------------------------------------------------------------------------

    def open_report(self) -> None:
        """Open the self-contained HTML report in the browser."""
        if self.model_id is None:
            return
        model_id = self.model_id

        def done(path):
            if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
                self._error("Could not open the report", f"No program opened {path}. Open the file yourself.")

        self.tasks.run(lambda state: self.ws.report_html(model_id), done, title="Could not open the report")

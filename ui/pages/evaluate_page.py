"""The Evaluate page: how good the model is, in plain words, and where it goes wrong.

Shows the headline accuracy on the held-out samples, the confusion matrix, per-class precision and
recall, and the misclassified samples as thumbnails; clicking one asks the frame to open it for
relabeling (``relabel_requested``). The report is read and the thumbnails are made off the UI thread.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFrame, QLabel, QPushButton, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from ..charts import BarChart, ConfusionMatrixView
from ..kinds import ui_kind
from ..page import LatestTask, Page, card
from ..widgets.clip_player import load_peaks
from ..widgets.columns import Columns
from ..widgets.mistakes import THUMB, MistakesCard, report_sample_ids
from ..widgets.model_picker import ModelPicker
from ..wording import explain, headline, most_confused, nouns, per_class_rows, template_title
from .anomaly_evaluation import AnomalyCard
from .detection_photos import DetectionPhotosCard, load_photos
from .detection_summary import detection_words
from .segmentation_evaluation import SegmentationCard, segmentation_words
from .tags_summary import tags_words
from .value_evaluation import TableEvaluation, value_words

log = logging.getLogger(__name__)


class HidingLabel(QLabel):
    """A label that is hidden while it has no text, so an empty line leaves no gap in its card."""

    def setText(self, text: str) -> None:  # noqa: N802 (Qt name)
        super().setText(text)
        self.setVisible(bool(text))


class EvaluatePage(Page):
    """Evaluation of the project's models."""

    title = "How good is the model?"
    empty_text = "No model yet.\nTrain one and its evaluation appears here."
    empty_button = "Go to training"
    empty_target = "train"

    def __init__(self, workspace, parent=None):
        super().__init__(workspace, parent)
        self.models: list[dict] = []
        self.model_id: str | None = None
        self.report: dict | None = None
        self.noun = "photos"
        self.sound = False  # a sound project's model: clips are played, their nouns are "clips"
        self.reports = LatestTask(self.tasks, self)
        self.thumbs = LatestTask(self.tasks, self)
        self.pixels = LatestTask(self.tasks, self)  # an anomaly model's pixel AUROC from stored masks
        self._build()
        self.show_empty(True)

    def _build(self) -> None:
        self.picker_label = QLabel("Model")
        self.picker = ModelPicker()
        self.picker.picked.connect(self.pick_model)
        self.report_button = QPushButton("Open full report")
        self.report_button.setToolTip("The whole evaluation as a web page you can save or share.")
        self.report_button.clicked.connect(self.open_report)
        for widget in (self.picker_label, self.picker, self.report_button):
            self.header.add(widget)

        hero_card, hero_layout = card()
        self.hero = QLabel()
        self.hero.setObjectName("Hero")
        self.hero.setWordWrap(True)
        self.hero_detail = QLabel()
        self.hero_detail.setObjectName("Muted")
        self.hero_detail.setWordWrap(True)
        self.advice = HidingLabel()  # empty (an anomaly model's card says it all): takes no room
        self.advice.setWordWrap(True)
        for widget in (self.hero, self.hero_detail, self.advice):
            hero_layout.addWidget(widget)

        self.matrix = ConfusionMatrixView()
        self.matrix.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.matrix_card, matrix_layout = card(
            "What it answered, for each right answer",
            "Green: right. Red: mixed up. Click a square to see those.",
        )
        matrix_layout.addWidget(self.matrix, 1)
        self.bars = BarChart(("Precision", "Recall"))
        bars_card, bars_layout = card(
            "Per class",
            "Precision: when it says this class, how often it is right.\n"
            "Recall: of the examples of this class, how many it finds.",
        )
        bars_layout.addWidget(self.bars)
        bars_layout.addStretch(1)
        self.middle = middle = Columns()  # one under the other on a small window
        middle.add(self.matrix_card, 3)
        middle.add(bars_card, 2)

        self.mistakes_card = MistakesCard(self._load_thumbnails, self.relabel_requested.emit)
        self.matrix.cell_clicked.connect(self.mistakes_card.filter)
        for name, part in (
            ("mistakes", "list"),
            ("mistakes_title", "title"),
            ("show_all", "show_all"),
            ("no_mistakes", "none"),
        ):
            setattr(self, name, getattr(self.mistakes_card, part))

        self.detection_photos = DetectionPhotosCard(
            self._load_detection_photos, self.relabel_requested.emit, self._move_threshold
        )
        self.detection_photos.frame.hide()
        self.anomaly = AnomalyCard(self._load_anomaly_photos, self._anomaly_words)
        self.anomaly.frame.hide()
        self.segmentation = SegmentationCard(self._load_mask_photos, self.relabel_requested.emit)
        self.segmentation.frame.hide()
        self.table = TableEvaluation()  # numbers predicted; which columns matter

        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(0, 0, 8, 0)
        layout.setSpacing(12)
        layout.addWidget(hero_card)
        layout.addWidget(self.table.values_frame)
        layout.addWidget(middle)
        layout.addWidget(self.table.importance_frame)
        layout.addWidget(self.mistakes_card.frame)
        layout.addWidget(self.detection_photos.frame)
        layout.addWidget(self.anomaly.frame)
        layout.addWidget(self.segmentation.frame)
        layout.addStretch(1)
        self.scroll = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(content)
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        body.addWidget(scroll)

    def show_empty(self, empty: bool, text: str | None = None) -> None:
        super().show_empty(empty, text)
        self.report_button.setVisible(not empty)
        several = len(self.models) > 1
        self.picker.setVisible(several)
        self.picker_label.setVisible(several)

    # -- project and models -----------------------------------------------------------------------

    def project_changed(self) -> None:
        self.model_id, self.report = None, None
        self.reports.cancel()
        self.scroll.verticalScrollBar().setValue(0)  # the new project's page starts at its top

    def load(self, project: str) -> dict:
        ws = self.ws
        info = ws.project_info(project)
        titles = {t["name"]: template_title(t) for t in ws.templates(info["task"])}
        return {"models": list(reversed(ws.list_models(project))), "titles": titles, "info": info}

    def show_data(self, data: dict) -> None:
        """Show the project's models; keep the picked one if it still exists, else the newest."""
        self.models = data["models"]
        self.noun = nouns(data["info"].get("input_kind"))[1]
        self.sound = ui_kind(data["info"].get("input_kind")).plays
        self.mistakes_card.noun = self.noun
        target = self.picker.set_models(self.models, self.model_id, data["titles"])
        self.show_empty(not self.models)
        if target is None:
            self.model_id, self.report = None, None
        elif target != self.model_id or self.report is None:
            self.show_model(target)

    def pick_model(self, model_id: str) -> None:
        """The user picked ``model_id``: show it, and the other pages follow."""
        if model_id and model_id != self.model_id:
            self.show_model(model_id)
            self.model_selected.emit(model_id)

    def select_model(self, model_id: str) -> None:
        if model_id == self.model_id:
            return
        if any(m["id"] == model_id for m in self.models):
            self.show_model(model_id)
        else:  # a model trained since the last read: read the list again, then show it
            self.model_id, self.report = model_id, None
            self.refresh()

    def show_model(self, model_id: str) -> None:
        """Load and show the evaluation of ``model_id`` (read off the UI thread)."""
        self.model_id, self.report = model_id, None
        self.picker.setCurrentIndex(max(self.picker.findData(model_id), 0))
        self.hero.setText("Reading the evaluation…")
        self.hero_detail.setText("")
        self.advice.setText("")
        ws = self.ws
        self.reports.start(
            lambda state: ws.model_report(model_id), self._show_report, title="Could not read the evaluation"
        )

    def _show_report(self, report: dict) -> None:
        self.report = report
        n = report.get("n") or sum(sum(row) for row in report.get("confusion") or [])
        self.hero.setText(headline(report.get("accuracy"), n or None))
        detail = (
            f"on {n} {self.noun} it never saw during training."
            if n
            else f"on {self.noun} it never saw during training."
        )
        if n and n < 20:
            detail += f" With only {n} to test on this number is rough: label more for a reliable one."
        self.hero_detail.setText(detail)
        confused = most_confused(report)
        detector = "map50" in report
        tags = "micro_f1" in report and report.get("accuracy") is None
        segmentation = "miou" in report
        self.report_button.setVisible(bool(report.get("has_html", True)))
        values = "r2" in report  # a number per row instead of a class
        if tags or values:  # each photo's set of tags, or a number, instead of one label
            hero, detail, advice = value_words(report, self.noun) if values else tags_words(report, self.noun)
            self.hero.setText(hero)
            self.hero_detail.setText(detail)
            self.advice.setText(advice)
        elif segmentation:  # a class per pixel: overlap per class instead of right answers
            hero, detail, advice = segmentation_words(report)
            self.hero.setText(hero)
            self.hero_detail.setText(detail)
            self.advice.setText(advice)
        elif detector:  # boxes found and missed instead of labels
            hero, detail, advice = detection_words(report)
            self.hero.setText(hero)
            self.hero_detail.setText(detail)
            self.hero_detail.setToolTip(explain(detail))
            self.advice.setText(advice)
        elif confused:
            true, predicted, count = confused
            times = "once" if count == 1 else f"{count} times"
            self.advice.setText(
                f"It mixes up <b>{true}</b> and <b>{predicted}</b> most often ({times}). "
                f"More varied examples of both would help."
            )
        else:
            self.advice.setText(f"It made no mistake on the test {self.noun}.")
        labels = report.get("labels") or []
        self.matrix_card.setVisible(bool(labels and report.get("confusion")) and not detector)
        if labels and report.get("confusion"):
            self.matrix.set_data(labels, report["confusion"])
            self.matrix.setFixedHeight(self.matrix.sizeHint().height())
        self.bars.set_rows([] if segmentation else per_class_rows(report))
        anomaly = "auroc" in report  # an anomaly model: caught defects and false alarms instead
        self.middle.setVisible(not anomaly and not segmentation and not values)
        # the card lists single-label mistakes: for tags it would say "none" beside a 50% headline
        unlisted = "importance" in report and not report.get("mistakes")  # a table model lists no rows
        self.mistakes_card.frame.setVisible(
            not (detector or anomaly or segmentation or tags or values or unlisted)
        )
        self.segmentation.frame.setVisible(segmentation)
        self.segmentation.set_report(report if segmentation else None)
        self.detection_photos.frame.setVisible(detector)
        self.anomaly.frame.setVisible(anomaly)
        self.mistakes_card.set_report(
            None if detector or anomaly or segmentation else report, sound=self.sound
        )
        self.detection_photos.set_report(report if detector else None)
        self.anomaly.set_report(report if anomaly else None)
        if anomaly and report.get("pixel_auroc") is None:
            self._load_pixel_auroc(report)
        self.table.set_report(report)

    def _load_thumbnails(self, mistakes: list[dict], done) -> None:
        """Find each mistake's sample (by id, else by its media hash ``key``) and its thumbnail."""
        project, ws, sound = self.project, self.ws, self.sound

        def make(state):
            found = []
            for sample_id in report_sample_ids(ws, project, mistakes):
                if state.is_interruption_requested():
                    break
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

        self.thumbs.start(
            make, done, on_failed=lambda message, details: log.warning("thumbnails: %s", message)
        )

    def _load_detection_photos(self, images: list[dict], threshold: float, done) -> None:
        """A detector's test photos with their boxes drawn, made off the UI thread."""
        project, ws = self.project, self.ws
        self.thumbs.start(
            lambda state: load_photos(ws, project, images, threshold, state),
            done,
            on_failed=lambda message, details: log.warning("test photos: %s", message),
        )

    def _load_mask_photos(self, photos: list[dict], done) -> None:
        """The test photos' true and predicted masks side by side, made off the UI thread."""
        from modeldesk.app.mask_views import comparison_thumbnails

        project, model_id, ws = self.project, self.model_id, self.ws

        def make(state):
            ids = report_sample_ids(ws, project, photos)
            return comparison_thumbnails(
                ws, model_id, project, ids, should_stop=state.is_interruption_requested
            )

        self.thumbs.start(make, done, on_failed=lambda message, details: log.warning("masks: %s", message))

    def _anomaly_words(self, hero: str, detail: str) -> None:
        self.hero.setText(hero)
        self.hero_detail.setText(detail)
        self.advice.setText("")

    def _load_pixel_auroc(self, report: dict) -> None:
        """Pixel AUROC on the report's test photos from the defect masks stored in the project, worked
        out off the UI thread (a project without masks gives None: the page says nothing about it)."""
        model_id, ws = self.model_id, self.ws
        keys = [m["key"] for m in report.get("images") or [] if m.get("key")]

        def done(found):
            if self.model_id == model_id and self.report is report:
                self.anomaly.set_pixel_auroc(found)

        self.pixels.start(
            lambda state: ws.stored_pixel_auroc(model_id, keys) if keys else None,
            done,
            on_failed=lambda message, details: log.warning("pixel AUROC: %s", message),
        )

    def _load_anomaly_photos(self, files: list[str], done) -> None:
        """The test photos with the model's heatmap drawn, made off the UI thread."""
        from modeldesk.app.anomaly_views import overlay_thumbnails

        model_id, ws = self.model_id, self.ws
        self.thumbs.start(
            lambda state: overlay_thumbnails(
                ws, model_id, files, should_stop=state.is_interruption_requested
            ),
            done,
            on_failed=lambda message, details: log.warning("heatmaps: %s", message),
        )

    def _move_threshold(self, threshold: float) -> None:
        """Save a detector's new score threshold, then show its figures and photos at it."""
        model_id, ws = self.model_id, self.ws
        if model_id is None:
            return

        def work(state):
            ws.set_score_threshold(model_id, threshold)
            return ws.model_report(model_id)

        self.reports.start(work, self._show_report, title="Could not move the threshold")

    # -- report -----------------------------------------------------------------------------------

    def open_report(self) -> None:
        """Open the self-contained HTML report in the browser."""
        if self.model_id is None:
            return
        model_id, ws = self.model_id, self.ws

        def done(path):
            if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
                self.report_error(
                    "Could not open the report", f"No program opened {path}. Open the file yourself."
                )

        self.run(lambda state: ws.report_html(model_id), done, title="Could not open the report")

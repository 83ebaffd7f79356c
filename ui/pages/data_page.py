"""The Data step: import images (dialog or drag-and-drop), browse them, see how balanced the classes are."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt, QThreadPool, QTimer, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QFrame, QHBoxLayout, QLabel, QMenu,
                               QPushButton, QStackedWidget, QVBoxLayout, QWidget)

from ..gallery import GalleryQuery, GalleryRows, GalleryView, SampleIdRole, SampleListModel
from ..widgets.error_dialog import show_error
from ..widgets.import_summary import ImportSummaryDialog, merge_reports, summary_line
from ..widgets.label_counts import LabelCountsChart, small_class_warning
from ..widgets.progress_panel import ProgressPanel
from ..workers import run_task

log = logging.getLogger(__name__)

IMAGE_FILTER = ("Images and zip archives (*.jpg *.jpeg *.png *.bmp *.gif *.webp *.tif *.tiff *.zip);;"
                "All files (*)")
REFRESH_DURING_IMPORT_MS = 2000


def import_many(ws, project: str, paths: list[Path], state) -> dict:
    """Import each path in turn (worker thread); a path refused as a whole is listed in ``failed``."""
    reports = []
    for number, path in enumerate(paths, start=1):
        if state.is_interruption_requested():
            reports.append({"stopped": True})
            break

        def progress(done, total, current, number=number):
            prefix = f"{number}/{len(paths)}: " if len(paths) > 1 else ""
            state.set_progress(done, total, f"{prefix}{current}")

        try:
            reports.append(ws.import_data(project, path, progress=progress,
                                          should_stop=state.is_interruption_requested))
        except (ValueError, OSError) as exc:
            reports.append({"failed": [{"file": str(path), "reason": str(exc)}]})
    return merge_reports(reports)


class DataPage(QWidget):
    """Import and browse the project's images.

    Signals
    -------
    status_changed()
        The project's data changed (the frame updates the sidebar).
    navigate(key)
        Go to another step.
    relabel_requested(sample_id)
        Open a sample in the Label step (double-click in the gallery).
    """

    status_changed = Signal()
    navigate = Signal(str)
    relabel_requested = Signal(int)

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.project: str | None = None
        self.import_task = None
        self.refresh_task = None
        self._refresh_again = False
        self._queued: list[list[Path]] = []
        self.last_report: dict | None = None
        self.summary_dialog: ImportSummaryDialog | None = None
        self.pool = QThreadPool(self)  # imports and queries; waited for on shutdown
        self._shut = False  # after shutdown() no new background work starts
        self.pool.setMaxThreadCount(2)

        title = QLabel("Data")
        title.setObjectName("PageTitle")
        self.subtitle = QLabel()
        self.subtitle.setObjectName("Muted")
        self.import_button = QPushButton("Add images")
        self.import_button.setObjectName("Primary")
        menu = QMenu(self)
        menu.addAction("Images or zip archives…", self.choose_files)
        menu.addAction("A folder…", self.choose_folder)
        self.import_button.setMenu(menu)
        self.import_button.setProperty("hasMenu", True)
        self.label_button = QPushButton("Label images  ›")
        self.label_button.clicked.connect(lambda: self.navigate.emit("label"))
        header = QHBoxLayout()
        heading = QVBoxLayout()
        heading.addWidget(title)
        heading.addWidget(self.subtitle)
        header.addLayout(heading, 1)
        header.addWidget(self.label_button, 0, Qt.AlignBottom)
        header.addWidget(self.import_button, 0, Qt.AlignBottom)

        self.progress = ProgressPanel()
        self.result_line = QLabel()
        self.result_line.setObjectName("Muted")
        self.result_line.hide()

        self.show_filter = QComboBox()
        self.show_filter.setMinimumContentsLength(14)
        self.split_filter = QComboBox()
        for text, value in (("Any split", None), ("Training", "train"), ("Validation", "val"),
                            ("Test", "test"), ("Not assigned", "unassigned")):
            self.split_filter.addItem(text, value)
        self.wrong_filter = QCheckBox("Only images the model got wrong")
        self.wrong_filter.setEnabled(False)
        self.wrong_filter.setToolTip("Available after training a model")
        self.count_label = QLabel()
        self.count_label.setObjectName("Muted")
        for combo in (self.show_filter, self.split_filter):
            combo.currentIndexChanged.connect(self.refresh)
        self.wrong_filter.toggled.connect(self.refresh)
        filters = QHBoxLayout()
        filters.addWidget(QLabel("Show"))
        filters.addWidget(self.show_filter)
        filters.addWidget(self.split_filter)
        filters.addWidget(self.wrong_filter)
        filters.addStretch(1)
        filters.addWidget(self.count_label)

        self.model = SampleListModel(self.ws, ratio=self.devicePixelRatioF(), parent=self)
        self.gallery = GalleryView()
        self.gallery.setModel(self.model)
        self.gallery.doubleClicked.connect(
            lambda index: self.relabel_requested.emit(int(index.data(SampleIdRole))))
        self.empty = QLabel("Drop images, folders or a zip archive here\n\n"
                            "or use “Add images”. A folder with one sub-folder per class "
                            "imports the labels too.")
        self.empty.setAlignment(Qt.AlignCenter)
        self.empty.setWordWrap(True)
        self.empty.setObjectName("Muted")
        self.empty.setStyleSheet("border: 2px dashed palette(mid); border-radius: 12px; font-size: 15px;")
        self.body = QStackedWidget()
        self.body.addWidget(self.gallery)
        self.body.addWidget(self.empty)

        side = QFrame()
        side.setObjectName("Card")
        side.setFixedWidth(290)
        side_title = QLabel("Examples per class")
        side_title.setStyleSheet("font-weight: 600;")
        self.chart = LabelCountsChart()
        self.warning = QLabel()
        self.warning.setObjectName("Warning")
        self.warning.setWordWrap(True)
        self.warning.hide()
        hint = QLabel("Tip: drag more images onto the window at any time. Double-click an image "
                      "to label it.")
        hint.setObjectName("Muted")
        hint.setWordWrap(True)
        self.tip = hint
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(16, 14, 16, 14)
        side_layout.addWidget(side_title)
        side_layout.addWidget(self.chart)
        side_layout.addWidget(self.warning)
        side_layout.addStretch(1)
        side_layout.addWidget(hint)

        content = QHBoxLayout()
        content.setSpacing(14)
        content.addWidget(self.body, 1)
        content.addWidget(side)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 18, 24, 18)
        layout.setSpacing(10)
        layout.addLayout(header)
        self.recorder_slot = QVBoxLayout()  # a sound project's record bar (ui/widgets/recorder.py)
        self.recorder = None
        self.text_adder = None  # a text project's "type a text" box (ui/widgets/text_adder.py)
        layout.addLayout(self.recorder_slot)
        layout.addWidget(self.progress)
        layout.addWidget(self.result_line)
        layout.addLayout(filters)
        layout.addLayout(content, 1)

        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_DURING_IMPORT_MS)
        self._timer.timeout.connect(self.refresh)
        self._set_label_filter_items([])

    # -- project ----------------------------------------------------------------------------

    def set_project(self, name: str | None) -> None:
        if name == self.project:
            return
        self.project = name
        self.model.set_rows(GalleryRows())
        self.model.forget()
        self.result_line.hide()
        self.show_filter.blockSignals(True)
        self._set_label_filter_items([])
        self.show_filter.blockSignals(False)
        self.refresh()

    def query(self) -> GalleryQuery:
        """The filters as chosen in the bar."""
        kind, _, value = (self.show_filter.currentData() or "all").partition(":")
        return GalleryQuery(label=value if kind == "label" else None, unlabeled=kind == "unlabeled",
                            split=self.split_filter.currentData(),
                            wrong_only=self.wrong_filter.isChecked())

    def set_filter(self, *, label: str | None = None, unlabeled: bool = False, split: str | None = None,
                   wrong_only: bool = False) -> None:
        """Choose filters programmatically (same effect as using the bar)."""
        wanted = f"label:{label}" if label else "unlabeled" if unlabeled else "all"
        index = self.show_filter.findData(wanted)
        self.show_filter.setCurrentIndex(max(0, index))
        self.split_filter.setCurrentIndex(max(0, self.split_filter.findData(split)))
        self.wrong_filter.setChecked(wrong_only)
        self.refresh()

    # -- refresh (worker) ----------------------------------------------------------------------

    def refresh(self, *_args) -> None:
        """Re-read stats and the gallery rows in the background."""
        if self.project is None or self._shut:
            return
        if self.refresh_task is not None:
            self._refresh_again = True
            return
        project, query, ws = self.project, self.query(), self.ws

        def work(_state):
            stats = ws.stats(project)
            models = ws.list_models(project)
            query.model_id = models[-1]["id"] if models else None
            rows = ws.gallery_rows(project, label=query.label, unlabeled=query.unlabeled, split=query.split,
                                   wrong_only=query.wrong_only, model_id=query.model_id)
            return project, stats, query.model_id, GalleryRows.from_dict(rows)

        self.refresh_task = run_task(work, pool=self.pool, parent=self)
        self.refresh_task.finished.connect(self._refreshed)
        self.refresh_task.failed.connect(lambda message, details: log.error("refresh failed: %s", message))
        self.refresh_task.ended.connect(self._refresh_ended)

    def _refresh_ended(self) -> None:
        self.refresh_task = None
        if self._refresh_again:
            self._refresh_again = False
            self.refresh()

    def _refreshed(self, result) -> None:
        project, stats, model_id, rows = result
        if project != self.project:
            return
        self._set_label_filter_items(list(stats["labels"]))
        self.model.set_rows(rows)
        n_labels = len([c for c in stats["labels"].values() if c])
        sound = stats.get("kind") == "audio"
        text = stats.get("kind") == "text"
        self._show_recorder(sound, list(stats["labels"]))
        self._show_text_adder(text, list(stats["labels"]))
        self.subtitle.setText(f"{stats['samples']:,} {'clips' if sound else 'texts' if text else 'images'} · {stats['labeled']:,} labeled · "
                              f"{n_labels} class{'es' if n_labels != 1 else ''}")
        self.count_label.setText(f"Showing {len(rows.ids):,}")
        self.body.setCurrentWidget(self.gallery if stats["samples"] else self.empty)
        self.chart.set_counts(stats["labels"])
        noun = "boxes" if stats.get("task") == "object-detection" else "photos"
        warning = small_class_warning(stats["labels"], noun=noun)
        self.warning.setText(warning)
        self.warning.setVisible(bool(warning))
        self.wrong_filter.setEnabled(model_id is not None)
        self.wrong_filter.setToolTip("" if model_id else "Available after training a model")
        self.label_button.setEnabled(stats["samples"] > 0)

    # -- typing texts (text projects) ----------------------------------------------------------

    def _show_text_adder(self, text: bool, labels: list[str]) -> None:
        from ..widgets.text_adder import TextAdder

        if text and self.text_adder is None:
            self.text_adder = TextAdder()
            self.text_adder.submitted.connect(self.add_text)
            self.recorder_slot.addWidget(self.text_adder)
        if self.text_adder is not None:
            self.text_adder.setVisible(text)
            if text:
                self.text_adder.set_classes(labels)
        if text:
            self.import_button.setText("Add texts")
            self.label_button.setText("Label texts  ›")
            self.wrong_filter.setText("Only texts the model got wrong")
            self.tip.setText("Tip: import CSV, TSV, JSONL or TXT files, or type a text above. "
                             "Double-click a text to label it.")
            if self.show_filter.count():
                self.show_filter.setItemText(0, "All texts")
            self.empty.setText("Drop CSV or TSV files (a text column and a label column) here\n\n"
                               "or use “Add texts”, or type a text above.")

    def add_text(self, text: str, label: str) -> None:
        """Store a typed text (worker thread), then refresh."""
        if self.project is None or self._shut:
            return
        project, ws = self.project, self.ws
        task = run_task(lambda _state: ws.add_text(project, text, label), pool=self.pool, parent=self)
        task.finished.connect(lambda report: (self.refresh(), self.status_changed.emit()))
        task.failed.connect(lambda message, details: show_error(self, "The text was not added", message, details))

    # -- recording (sound projects) -----------------------------------------------------------

    def make_recorder(self):
        """The record bar; tests and previews replace it to record from a generated signal."""
        from ..widgets.recorder import RecorderWidget

        return RecorderWidget()

    def _show_recorder(self, sound: bool, labels: list[str]) -> None:
        if sound and self.recorder is None:
            self.recorder = self.make_recorder()
            self.recorder.recorded.connect(self.add_recording)
            self.recorder_slot.addWidget(self.recorder)
        if self.recorder is not None:
            self.recorder.setVisible(sound)
            if sound:
                self.recorder.set_classes(labels)
        noun = "clips" if sound else "images"
        self.import_button.setText(f"Add {noun}")
        self.label_button.setText(f"Label {noun}  ›")
        self.wrong_filter.setText(f"Only {noun} the model got wrong")
        self.tip.setText(f"Tip: drag more {noun} onto the window at any time. Double-click "
                         f"{'a clip' if sound else 'an image'} to label it.")
        if self.show_filter.count():
            self.show_filter.setItemText(0, f"All {noun}")
        self.empty.setText(f"Drop {'WAV clips' if sound else 'images'}, folders or a zip archive here\n\n"
                           f"or use “Add {noun}”. A folder with one sub-folder per class imports the labels too."
                           + ("\nOr record clips with the button above." if sound and self.recorder
                              and self.recorder.has_microphone else ""))

    def add_recording(self, label: str, wav: bytes) -> None:
        """Store a recorded clip in ``label`` (worker thread), then refresh."""
        if self.project is None or self._shut:
            return
        project, ws = self.project, self.ws
        task = run_task(lambda _state: ws.add_recording(project, label, wav), pool=self.pool, parent=self)
        task.finished.connect(lambda report: (self.refresh(), self.status_changed.emit()))
        task.failed.connect(lambda message, details: show_error(self, "The recording was not saved", message,
                                                                details))

    def _set_label_filter_items(self, labels: list[str]) -> None:
        current = self.show_filter.currentData()
        wanted = ["all", "unlabeled"] + [f"label:{n}" for n in labels]
        have = [self.show_filter.itemData(i) for i in range(self.show_filter.count())]
        if have == wanted:
            return
        self.show_filter.blockSignals(True)
        self.show_filter.clear()
        self.show_filter.addItem("All images", "all")
        self.show_filter.addItem("Unlabeled", "unlabeled")
        for name in labels:
            self.show_filter.addItem(f"Class: {name}", f"label:{name}")
        index = self.show_filter.findData(current) if current else 0
        self.show_filter.setCurrentIndex(max(0, index))
        self.show_filter.blockSignals(False)

    # -- import --------------------------------------------------------------------------------

    def choose_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Add images or zip archives", "", IMAGE_FILTER)
        if files:
            self.import_paths(files)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of images")
        if folder:
            self.import_paths([folder])

    def import_paths(self, paths) -> None:
        """Import files, folders or zip archives in the background (queued after a running import)."""
        paths = [Path(p) for p in paths]
        if not paths or self.project is None or self._shut:
            return
        if self.import_task is not None:
            self._queued.append(paths)
            return
        project, ws = self.project, self.ws
        self.result_line.hide()
        self.import_task = run_task(lambda state: import_many(ws, project, paths, state),
                                    pool=self.pool, parent=self)
        title = f"Adding {paths[0].name}" + (f" and {len(paths) - 1} more" if len(paths) > 1 else "")
        self.progress.attach(self.import_task, title)
        self.import_task.finished.connect(self._imported)
        self.import_task.failed.connect(lambda message, details: show_error(
            self, "The import failed", message, details, ws.paths.log))
        self.import_task.ended.connect(self._import_ended)
        self._timer.start()

    def cancel_import(self) -> None:
        """Stop the running import (what was added so far stays) and drop queued ones."""
        self._queued.clear()
        if self.import_task is not None:
            self.import_task.cancel()

    def _imported(self, report: dict) -> None:
        self.last_report = report
        self.result_line.setText(summary_line(report))
        self.result_line.show()
        if report["failed"] or report["warnings"] or report.get("stopped"):
            self.summary_dialog = ImportSummaryDialog(report, self)
            self.summary_dialog.open()

    def _import_ended(self) -> None:
        self.import_task = None
        self._timer.stop()
        self.refresh()
        self.status_changed.emit()
        if self._queued:
            self.import_paths(self._queued.pop(0))

    def closeEvent(self, event) -> None:  # when shown on its own; the frame calls shutdown()
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        """Stop background work and wait for it, before the window closes and the store with it."""
        self._shut = True
        self.cancel_import()
        self._timer.stop()
        self.model.loader.close()
        self.pool.waitForDone()


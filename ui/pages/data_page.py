"""The Data step: import samples (dialog or drag-and-drop), browse them, see how balanced the classes are."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
)

from ..gallery import GalleryQuery, GalleryRows, GalleryView, SampleIdRole, SampleListModel
from ..kinds import add_files_filter, data_bars, ui_kind
from ..page import Page
from ..widgets.confirm import confirm
from ..widgets.import_summary import ImportSummaryDialog
from ..widgets.label_counts import LabelCountsChart, counts_card
from ..widgets.progress_panel import ProgressPanel
from ..wording import (
    counted_classes,
    few_examples,
    learned_classes,
    merge_reports,
    nouns,
    plural,
    small_class_warning,
    summary_line,
)
from .data_bars import DataBars

log = logging.getLogger(__name__)

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
            reports.append(
                ws.import_data(project, path, progress=progress, should_stop=state.is_interruption_requested)
            )
        except (ValueError, OSError) as exc:
            reports.append({"failed": [{"file": str(path), "reason": str(exc)}]})
    return merge_reports(reports)


class DataPage(DataBars, Page):
    """Import and browse the project's samples."""

    title = "Data"
    empty_text = "Open or create a project first."

    def __init__(self, workspace, parent=None):
        super().__init__(workspace, parent)
        self.import_task = None
        self._queued: list[list[Path]] = []
        self.last_report: dict | None = None
        self.summary_dialog: ImportSummaryDialog | None = None
        self.noun = "photos"
        self.input_kind: str | None = None
        self._build()
        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_DURING_IMPORT_MS)
        self._timer.timeout.connect(self.refresh)
        self._set_label_filter_items([])

    def _build(self) -> None:
        self.import_button = QPushButton("Add photos")
        self.import_button.setObjectName("Primary")
        menu = QMenu(self)
        menu.addAction("Files or zip archives…", self.choose_files)
        menu.addAction("A folder…", self.choose_folder)
        self.import_button.setMenu(menu)
        self.import_button.setProperty("hasMenu", True)
        self.label_button = QPushButton("Label  ›")
        self.label_button.clicked.connect(lambda: self.navigate.emit("label"))
        self.header.add(self.label_button)
        self.header.add(self.import_button)

        self.progress = ProgressPanel()
        self.result_line = QLabel()
        self.result_line.setObjectName("Muted")
        self.result_line.setWordWrap(True)
        self.details_button = QPushButton("Details…")
        self.details_button.setFlat(True)
        self.details_button.clicked.connect(self.show_summary)
        result_row = QHBoxLayout()
        result_row.addWidget(self.result_line, 1)
        result_row.addWidget(self.details_button)
        self.result_line.hide()
        self.details_button.hide()

        self.show_filter = QComboBox()
        self.show_filter.setMinimumContentsLength(12)
        self.split_filter = QComboBox()
        for text, value in (
            ("Any split", None),
            ("Training", "train"),
            ("Validation", "val"),
            ("Test", "test"),
            ("Not assigned", "unassigned"),
        ):
            self.split_filter.addItem(text, value)
        self.split_filter.setToolTip(
            "Training: what the model learns from. Validation and Test: kept aside "
            "to check it on examples it never saw."
        )
        self.wrong_filter = QCheckBox("Only the model's mistakes")
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
            lambda index: self.relabel_requested.emit(int(index.data(SampleIdRole)))
        )
        self.gallery.setContextMenuPolicy(Qt.CustomContextMenu)
        self.gallery.customContextMenuRequested.connect(self._gallery_menu)
        remove = QShortcut(QKeySequence.Delete, self.gallery, self.remove_selected)
        self.undo_token: str | None = None
        QShortcut(QKeySequence.Undo, self, self.undo_removal, context=Qt.WidgetWithChildrenShortcut)
        remove.setContext(Qt.WidgetShortcut)
        self.confirmation = None
        self.drop_hint = QLabel()
        self.drop_hint.setAlignment(Qt.AlignCenter)
        self.drop_hint.setWordWrap(True)
        self.drop_hint.setObjectName("Muted")
        self.drop_hint.setStyleSheet("border: 2px dashed palette(mid); border-radius: 12px; font-size: 15px;")
        self.gallery_stack = QStackedWidget()
        self.gallery_stack.addWidget(self.gallery)
        self.gallery_stack.addWidget(self.drop_hint)

        self.chart = LabelCountsChart()
        self.warning = QLabel()
        self.warning.setObjectName("Warning")
        self.warning.setWordWrap(True)
        self.warning.hide()
        self.tip = QLabel()
        self.tip.setObjectName("Muted")
        self.tip.setWordWrap(True)
        self.side = side = counts_card("Examples per class", [self.chart, self.warning], self.tip)
        side.setMinimumWidth(190)
        side.setMaximumWidth(280)

        content = QHBoxLayout()
        content.setSpacing(14)
        content.addWidget(self.gallery_stack, 1)
        content.addWidget(side)
        layout = QVBoxLayout(self.body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(10)
        self.recorder_slot = QVBoxLayout()  # a sound project's record bar (ui/widgets/recorder.py)
        self.recorder = None
        self.text_adder = None  # a text project's "type a text" box (ui/widgets/text_adder.py)
        self.capture = None  # an image project's webcam bar (ui/widgets/camera_capture.py)
        layout.addLayout(self.recorder_slot)
        layout.addWidget(self.progress)
        layout.addLayout(result_row)
        layout.addLayout(filters)
        layout.addLayout(content, 1)
        self._set_noun("photos")

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        self._fit_width()

    def _fit_width(self) -> None:
        """A narrow page keeps two columns of photos: the counts card goes (unless it warns), labels shorten."""
        narrow = self.width() < 760
        self.side.setVisible((not narrow or not self.warning.isHidden()) and not self.values_only)
        self.side.setMaximumWidth(200 if narrow else 280)  # a warning shows, the photos keep two columns
        self.wrong_filter.setText("Mistakes only" if narrow else "Only the model's mistakes")

    def _set_noun(self, noun: str) -> None:
        self.noun = noun
        self.import_button.setText(f"Add {noun}")
        self._fit_width()
        self.wrong_filter.setToolTip(f"Only the {noun} the model gets wrong")
        if noun == "texts":
            self.tip.setText(
                "Tip: import CSV, TSV, JSONL or TXT files, or type a text above. "
                "Double-click a text to label it."
            )
            self.drop_hint.setText(
                "Drop CSV, TSV or JSONL files (a text and a label column), TXT files (one "
                "text a line), or a folder with one sub-folder of .txt files per class here"
                "\n\nor use “Add texts”, or type a text above."
            )
            return
        record = (
            "\nOr record clips with the button above."
            if self.recorder is not None and self.recorder.isVisibleTo(self) and self.recorder.has_microphone
            else ""
        )
        self.drop_hint.setText(
            f"Drop {'WAV clips' if noun == 'clips' else noun}, folders or a zip archive "
            f"here\n\nor use “Add {noun}”. A folder with one sub-folder per class imports "
            f"the labels too.{record}"
        )
        self.tip.setText(f"Tip: drag more {noun} onto the window at any time. Double-click one to label it.")

    # -- project ----------------------------------------------------------------------------

    def project_changed(self) -> None:
        self.undo_token = None  # Ctrl+Z never brings photos back into another project
        self.model.set_rows(GalleryRows())
        self.model.forget()
        self.result_line.hide()
        self.details_button.hide()
        self.show_filter.blockSignals(True)
        self._set_label_filter_items([])
        self.show_filter.blockSignals(False)

    def query(self) -> GalleryQuery:
        """The filters as chosen in the bar."""
        kind, _, value = (self.show_filter.currentData() or "all").partition(":")
        return GalleryQuery(
            label=value if kind == "label" else None,
            unlabeled=kind == "unlabeled",
            split=self.split_filter.currentData(),
            wrong_only=self.wrong_filter.isChecked(),
        )

    def set_filter(
        self,
        *,
        label: str | None = None,
        unlabeled: bool = False,
        split: str | None = None,
        wrong_only: bool = False,
    ) -> None:
        """Choose filters programmatically (same effect as using the bar)."""
        wanted = f"label:{label}" if label else "unlabeled" if unlabeled else "all"
        for widget in (self.show_filter, self.split_filter, self.wrong_filter):
            widget.blockSignals(True)
        self.show_filter.setCurrentIndex(max(0, self.show_filter.findData(wanted)))
        self.split_filter.setCurrentIndex(max(0, self.split_filter.findData(split)))
        self.wrong_filter.setChecked(wrong_only)
        for widget in (self.show_filter, self.split_filter, self.wrong_filter):
            widget.blockSignals(False)
        self.refresh()

    # -- refresh (worker) ----------------------------------------------------------------------

    def load_request(self) -> dict:
        return {"query": self.query()}

    def load(self, project: str, query: GalleryQuery) -> dict:
        ws = self.ws
        models = ws.list_models(project)
        query.model_id = models[-1]["id"] if models else None
        rows = ws.gallery_rows(
            project,
            label=query.label,
            unlabeled=query.unlabeled,
            split=query.split,
            wrong_only=query.wrong_only,
            model_id=query.model_id,
        )
        return {
            "info": ws.project_info(project),
            "stats": ws.stats(project),
            "model_id": query.model_id,
            "rows": GalleryRows.from_dict(rows),
        }

    def show_data(self, data: dict) -> None:
        self.show_empty(False)
        info, stats, rows, model_id = data["info"], data["stats"], data["rows"], data["model_id"]
        bar = ui_kind(info.get("input_kind")).data_bar
        for method in sorted(data_bars()):  # the kind's own bar shows, the others hide
            getattr(self, method)(method == bar, list(stats["labels"]))
        self.input_kind = info.get("input_kind")
        self._set_noun(nouns(info.get("input_kind"))[1])
        self._set_label_filter_items(list(stats["labels"]))
        self.model.set_rows(rows)
        n_labels = len([c for c in stats["labels"].values() if c])
        one, many = nouns(info.get("input_kind"))
        self.header.set_subtitle(
            f"{plural(stats['samples'], one, many)} · {stats['labeled']:,} labeled · "
            f"{plural(n_labels, 'class', 'classes')}"
        )
        self.count_label.setText(f"Showing {len(rows.ids):,}")
        shown = self._show_sample_table(info, stats, rows.ids)  # the kind's table or the gallery
        self.gallery_stack.setCurrentWidget(shown if stats["samples"] else self.drop_hint)
        few = few_examples(info)
        self.chart.minimum = few
        self.chart.set_counts(counted_classes(info, stats["labels"]))
        noun = "boxes" if info.get("target") == "boxes" else many
        warning = small_class_warning(learned_classes(info, stats["labels"]), minimum=few, noun=noun)
        self.warning.setText(warning)
        self.warning.setVisible(bool(warning))
        self._fit_width()
        self.wrong_filter.setEnabled(model_id is not None)
        self.wrong_filter.setToolTip("" if model_id else "Available after training a model")
        self.label_button.setEnabled(stats["samples"] > 0)

    # -- removing samples -----------------------------------------------------------------------

    def selected_ids(self) -> list[int]:
        return [int(index.data(SampleIdRole)) for index in self.gallery.selectionModel().selectedIndexes()]

    def _gallery_menu(self, pos) -> None:
        ids = self.selected_ids()
        if ids:
            menu = QMenu(self.gallery)
            menu.addAction(
                f"Remove {plural(len(ids), self.noun[:-1], self.noun)} from the project…",
                self.remove_selected,
            )
            menu.popup(self.gallery.viewport().mapToGlobal(pos))

    def remove_selected(self):
        """Ask, then remove the selected samples with their labels (Delete key or the menu)."""
        ids = self.selected_ids()
        if not ids or self.project is None:
            return None
        project, ws, what = self.project, self.ws, plural(len(ids), self.noun[:-1], self.noun)

        def remove():
            self.run(
                lambda state: ws.remove_samples(project, ids),
                lambda result: self._removed(result, what),
                title="Could not remove them",
            )

        self.confirmation = confirm(
            self,
            "Remove from the project",
            f"Remove {what} from '{project}'? Their "
            "labels go with them; the files on your disk stay where they are.",
            f"Remove {what}",
            remove,
        )
        return self.confirmation

    def _removed(self, result: dict, what: str) -> None:
        """Say what went, with the way back; the import's line ("N photos added") is no longer true."""
        self.undo_token = result["undo"]
        self.result_line.setText(f"Removed {what}. Ctrl+Z brings them back.")
        self.result_line.show()
        self.details_button.hide()
        self.refresh()
        self.status_changed.emit()

    def undo_removal(self) -> None:
        """Bring back what the last removal took (Ctrl+Z)."""
        token, self.undo_token = self.undo_token, None
        if token is None or self.project is None:
            return
        ws = self.ws

        def restored(count: int) -> None:
            self.result_line.setText(f"Brought back {plural(count, self.noun[:-1], self.noun)}.")
            self.refresh()
            self.status_changed.emit()

        self.run(lambda state: ws.restore_samples(token), restored, title="Could not bring them back")

    def _set_label_filter_items(self, labels: list[str]) -> None:
        current = self.show_filter.currentData()
        wanted = ["all", "unlabeled"] + [f"label:{n}" for n in labels]
        if [self.show_filter.itemData(i) for i in range(self.show_filter.count())] == wanted:
            return
        self.show_filter.blockSignals(True)
        self.show_filter.clear()
        self.show_filter.addItem("All", "all")
        self.show_filter.addItem("Unlabeled", "unlabeled")
        for name in labels:
            self.show_filter.addItem(f"Class: {name}", f"label:{name}")
        self.show_filter.setCurrentIndex(max(0, self.show_filter.findData(current) if current else 0))
        self.show_filter.blockSignals(False)

    # -- import --------------------------------------------------------------------------------

    def choose_files(self) -> None:
        title, filters = f"Add {self.noun} or zip archives", add_files_filter(self.input_kind)
        files, _ = QFileDialog.getOpenFileNames(self, title, "", filters)
        if files:
            self.import_paths(files)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, f"Add a folder of {self.noun}")
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
        self.details_button.hide()
        title = f"Adding {paths[0].name}" + (f" and {len(paths) - 1} more" if len(paths) > 1 else "")
        self.import_task = self.run(
            lambda state: import_many(ws, project, paths, state),
            self._imported,
            title="The import failed",
            panel=self.progress,
            panel_title=title,
        )
        self.import_task.ended.connect(self._import_ended)
        self._timer.start()

    def cancel_import(self) -> None:
        """Stop the running import (what was added so far stays) and drop queued ones."""
        self._queued.clear()
        if self.import_task is not None:
            self.import_task.cancel()

    def _imported(self, report: dict) -> None:
        """Say what the import did in the summary line; the refused files and notes are one click away."""
        self.last_report = report
        line = summary_line(report, self.noun[:-1])
        if report["warnings"]:
            line += " " + " ".join(report["warnings"][:2])
        self.result_line.setText(line)
        self.result_line.show()
        self.details_button.setVisible(bool(report["failed"] or report["warnings"]))

    def show_summary(self) -> ImportSummaryDialog | None:
        """Open the list of refused files and notes of the last import (not modal)."""
        if self.last_report is None:
            return None
        self.summary_dialog = ImportSummaryDialog(self.last_report, self)
        self.summary_dialog.show()
        return self.summary_dialog

    def _import_ended(self) -> None:
        self.import_task = None
        self._timer.stop()
        self.refresh()
        self.status_changed.emit()
        if self._queued:
            self.import_paths(self._queued.pop(0))

    def shutdown(self) -> None:
        """Stop background work and wait for it, before the window closes and the store with it."""
        self.cancel_import()
        self._timer.stop()
        self.model.loader.close()
        super().shutdown()

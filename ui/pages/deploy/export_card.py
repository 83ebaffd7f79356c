"""The "Export" card: save the model, make a smaller and faster copy, or build a deploy bundle."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QColor, QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
)

from ... import theme
from ...page import card
from ...settings import settings
from ...widgets import ProgressPanel
from ...wording import explain, human_size, verdict, why_words
from ...workers import TaskCancelled


def export_folder(project: str) -> str:
    """Where ``project`` exports to: the folder last chosen for it, else ``~/ModelDesk exports/PROJECT``."""
    chosen = settings().value(f"deploy/export_folder/{project}", "")
    return str(chosen) if chosen else str(Path.home() / "ModelDesk exports" / project)


def cancellable_progress(state, describe=str):
    """A ``progress(done, total, message, eta_s)`` callback that also stops the call when the user
    cancels; ``describe`` turns the message into words."""

    def progress(done, total=0, message="", eta_s=None):
        if state.is_interruption_requested():
            raise TaskCancelled()
        state.set_progress(int(done), int(total or 0), describe(message) if message else "", eta_s)

    return progress


class ExportCard(QObject):
    """Export, compress and bundle the current model into a chosen folder.

    Signals
    -------
    exported(dict) : an export, compression or bundle finished (its result).
    """

    exported = Signal(dict)

    def __init__(self, workspace, run, parent=None):
        super().__init__(parent)
        self.ws, self.run = workspace, run
        self.project: str | None = None
        self.model_id: str | None = None
        self.last_export: dict | None = None
        self.frame, layout = card(
            "Export",
            "Save the model as one file you can use elsewhere, make a smaller and faster copy, "
            "or build a bundle that runs on a computer without ModelDesk.",
        )
        self.out_dir = QLineEdit()
        self.out_dir.setPlaceholderText("Choose a folder…")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self.choose_folder)
        self.export_button = QPushButton("Export")
        self.export_button.setToolTip("One ONNX file (a standard model format) with its card, in the folder.")
        self.export_button.clicked.connect(lambda: self.export(compress=False, bundle=False))
        self.compress_button = QPushButton("Make smaller && faster")
        self.compress_tip = (
            "Tries 8-bit and smaller-input versions, each judged on labeled examples it was not "
            "fitted on; keeps the fastest proven to lose at most 1 point (95% sure), or says what "
            "it could prove."
        )
        self.compress_button.setToolTip(self.compress_tip)
        self.compress_button.clicked.connect(lambda: self.export(compress=True, bundle=False))
        self.bundle_button = QPushButton("Build deploy bundle")
        self.bundle_button.setToolTip("A folder with the model, a small server and a README.")
        self.bundle_button.clicked.connect(lambda: self.export(compress=False, bundle=True))
        folder_row = QHBoxLayout()
        folder_row.addWidget(QLabel("Folder"))
        folder_row.addWidget(self.out_dir, 1)
        folder_row.addWidget(browse)
        action_row = QHBoxLayout()
        for button in (self.export_button, self.compress_button, self.bundle_button):
            action_row.addWidget(button)
        action_row.addStretch(1)
        self.progress = ProgressPanel()
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextBrowserInteraction)
        self.result.hide()
        self.result.linkActivated.connect(self.open_link)
        self.candidates = QTableWidget(0, 6)
        self.candidates.setHorizontalHeaderLabels(
            ["Version", "Size", "Time per photo", "Accuracy", "Result", "Why"]
        )
        self.candidates.verticalHeader().hide()
        self.candidates.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.candidates.setSelectionMode(QAbstractItemView.NoSelection)
        self.candidates.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.candidates.horizontalHeader().setSectionResizeMode(5, QHeaderView.Stretch)
        self.candidates.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)  # sized to show every row
        self.candidates.horizontalScrollBar().rangeChanged.connect(self._fit_table)
        # the "Why" column wraps in a narrow window: rows grow to show it whole, once the columns settled
        self._rows_later = QTimer(self.frame, singleShot=True, interval=0, timeout=self._fit_rows)
        self.candidates.horizontalHeader().sectionResized.connect(self._rows_later.start)
        self.candidates.hide()
        self.in_use = QLabel()
        self.in_use.setWordWrap(True)
        self.use_original = QPushButton("Use the original")
        self.use_original.setToolTip(
            "Try, serve and bundle the full-size model again (the smaller copy stays on disk)."
        )
        self.use_original.clicked.connect(lambda: self.choose_copy(None))
        self.details = QPushButton("Show details")
        self.details.setCheckable(True)
        self.details.setFlat(True)
        self.details.toggled.connect(self._toggle_details)
        self.details.hide()
        use_row = QHBoxLayout()
        use_row.addWidget(self.in_use, 1)
        use_row.addWidget(self.use_original)
        use_row.addWidget(self.details)
        layout.addLayout(folder_row)
        layout.addLayout(action_row)
        layout.addWidget(self.progress)
        layout.addWidget(self.result)
        layout.addLayout(use_row)
        layout.addWidget(self.candidates)
        self._show_in_use(None)

    def open_link(self, link: str) -> None:
        """Open the exported folder; say so when no program can (the path stays shown to copy)."""
        page = self.parent()
        if not QDesktopServices.openUrl(QUrl(link)) and hasattr(page, "report_error"):
            page.report_error(
                "Could not open the folder",
                f"No program opened {QUrl(link).toLocalFile() or link}. Open it yourself.",
            )

    def set_model(self, project: str | None, model_id: str | None) -> None:
        changed = model_id != self.model_id
        if project != self.project and project:  # each project exports to its own folder
            self.out_dir.setText(export_folder(project))
        self.project, self.model_id = project, model_id
        if changed:  # the last export or compression was of another model: its result goes
            self.last_export = None
            self.result.hide()
            self.details.setChecked(False)
            self.details.hide()
            self.candidates.hide()
        if changed and model_id:
            ws = self.ws
            self.run(
                lambda state: ws.compression_refusal(model_id),
                lambda why: self._offer_compression(why) if model_id == self.model_id else None,
                title="Could not read the model",
            )
            self.run(
                lambda state: ws.compressed_in_use(model_id),
                lambda path: self._show_in_use(path) if model_id == self.model_id else None,
                title="Could not read which copy is in use",
            )

    def _offer_compression(self, refusal: str) -> None:
        """Offer "Make smaller & faster" only where it can work; say why not otherwise."""
        self.compress_button.setVisible(not refusal)

    # -- which copy is tried, served and bundled ---------------------------------------------------

    def choose_copy(self, path) -> None:
        """Use the compressed copy at ``path`` (None: the original) for trying, serving and bundling."""
        model_id, ws = self.model_id, self.ws
        self.run(
            lambda state: ws.use_compressed(model_id, path),
            lambda _r: self._show_in_use(path),
            title="Could not switch the model in use",
        )

    def _show_in_use(self, path) -> None:
        self.in_use_path = path
        self.use_original.setVisible(bool(path))
        self.in_use.setVisible(bool(path))
        if path:
            self.in_use.setText(
                f"<b>In use:</b> the smaller copy in {path}. Try it, the service and bundles use it. "
                "A service already running keeps its model until you restart it."
            )
        self.changed_copy = path

    def _toggle_details(self, shown: bool) -> None:
        self.candidates.setVisible(shown)
        self.details.setText("Hide details" if shown else "Show details")

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self.frame, "Export to folder", self.out_dir.text() or str(Path.home())
        )
        if folder:
            self.out_dir.setText(folder)
            self.remember_folder()

    def remember_folder(self) -> None:
        """Keep the folder for this project, across restarts too."""
        folder = self.out_dir.text().strip()
        if self.project and folder:
            settings().setValue(f"deploy/export_folder/{self.project}", folder)

    def _set_enabled(self, enabled: bool) -> None:
        for button in (self.export_button, self.compress_button, self.bundle_button):
            button.setEnabled(enabled)

    def export(self, *, compress: bool, bundle: bool) -> None:
        """Export the current model to the chosen folder; ``compress``/``bundle`` as in ``ws.export_model``."""
        if self.model_id is None:
            return
        folder = self.out_dir.text().strip()
        if not folder:
            self.choose_folder()
            folder = self.out_dir.text().strip()
            if not folder:
                return
        self.remember_folder()
        model_id, ws = self.model_id, self.ws
        name = self.project or model_id
        target = str(
            Path(folder)
            / (f"{name}-bundle" if bundle else f"{name}-model-small" if compress else f"{name}-model")
        )
        what = "Building the bundle" if bundle else "Trying smaller versions" if compress else "Exporting"
        self._set_enabled(False)
        self.result.hide()
        if compress:
            self.candidates.hide()
            self.details.hide()

        def describe(message):  # a candidate's name, or a sentence of its own
            return f"tried {message}" if compress and not message[:1].isupper() else str(message)

        def work(state):
            return ws.export_model(
                model_id,
                target,
                compress=compress,
                bundle=bundle,
                progress=cancellable_progress(state, describe),
            )

        def done(result):
            self.last_export = result
            self.show_export(result, compress=compress, bundle=bundle)
            if compress and result.get("path"):  # the kept copy is the one used from now on
                self.choose_copy(result["path"])
            self.exported.emit(result)

        def cancelled():
            self.result.setText("Cancelled.")
            self.result.show()

        handle = self.run(
            work, done, title="Export failed", on_cancelled=cancelled, panel=self.progress, panel_title=what
        )
        if handle is not None:
            handle.ended.connect(lambda: self._set_enabled(True))

    def show_export(self, result: dict, *, compress: bool, bundle: bool) -> None:
        path = result.get("path") or self.out_dir.text()
        folder_link = QUrl.fromLocalFile(
            str(Path(path) if Path(path).is_dir() else Path(path).parent)
        ).toString()
        text = f"Saved to <a href='{folder_link}'>{path}</a> ({human_size(result.get('size_bytes'))})."
        if bundle:
            text = (
                f"Bundle ready in <a href='{folder_link}'>{path}</a>. Copy the folder to another computer; "
                "its README says how to run it."
            )
        if compress and result.get("candidates"):
            text = self._compression_text(result, folder_link, path)
            self.fill_candidates(result["candidates"], result.get("metric", "accuracy"))
            self.candidates.hide()  # the other versions tried, behind "Show details"
            self.details.setChecked(False)
            self.details.show()
        self.result.setText(text)
        self.result.show()

    @staticmethod
    def _compression_text(result: dict, folder_link: str, path: str) -> str:
        """What a compression kept, the loss it proved ("at most 0.8 points less accurate, 95% sure, on
        1,026 photos"), and both accuracies as measured."""
        speedup = result.get("speedup")
        before, after = result.get("accuracy_fp32"), result.get("accuracy_compressed")
        claim = str(result.get("claim") or "")
        saved = f"Saved to <a href='{folder_link}'>{path}</a>."
        if str(result.get("chosen", "")) in ("fp32", "float32"):
            return f"{claim or 'The original is kept.'} {saved}"
        text = (
            f"<b>A smaller, faster copy is ready</b> ({result.get('chosen_words') or result.get('chosen')})"
        )
        if isinstance(speedup, (int, float)):
            text += f": {speedup:.1f}× faster"
        text += f", {human_size(result.get('size_bytes'))}. {claim}"
        if isinstance(before, (int, float)) and isinstance(after, (int, float)):
            if result.get("metric") == "map50":  # a detector: its boxes are scored, not its answers
                text += f" Box score (mAP50) {after:.0%} against {before:.0%} for the original, on the same photos."
            elif result.get("metric") == "auroc":  # an anomaly model: how well its scores rank defects
                text += (
                    f" Defect ranking (AUROC) {after:.3f} against {before:.3f} for the original, on the "
                    "photos that did not teach it what good looks like."
                )
            else:
                text += (
                    f" Right {after:.1%} of the time against {before:.1%} for the original, each photo "
                    "answered by a model that did not learn from it."
                    if result.get("folds")
                    else f" Right {after:.1%} of the time against {before:.1%} for the original, on the same examples."
                )
        return f"{text} {saved}"

    def fill_candidates(self, candidates: list[dict], metric: str = "accuracy") -> None:
        self.candidates.setRowCount(len(candidates))
        score = self.candidates.horizontalHeaderItem(3)
        score.setText(
            {"map50": "Box score (mAP50)", "auroc": "Defect ranking (AUROC)"}.get(metric, "Accuracy")
        )
        score.setToolTip(
            "How well its boxes match yours: 100% finds every object with no false box."
            if metric == "map50"
            else "How often a defect photo scores above a good one: 100% always, 50% chance."
            if metric == "auroc"
            else "How often it gives the right answer, on the same labeled photos for every version; "
            "with a re-fitted head, each photo is answered by a head fitted without it."
        )
        for row, candidate in enumerate(candidates):
            latency, accuracy = candidate.get("latency_ms"), candidate.get("accuracy")
            cells = [
                str(candidate.get("plain_name") or candidate.get("name", "")),
                human_size(candidate.get("size_bytes")),
                f"{latency:.1f} ms" if isinstance(latency, (int, float)) else "–",
                f"{accuracy:.1%}" if isinstance(accuracy, (int, float)) else "–",
                verdict(candidate),
                why_words(candidate),
            ]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip("\n".join(filter(None, (str(candidate.get("reason") or ""), explain(text)))))
                if candidate.get("kept"):
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                    good = QColor(theme.current().good)
                    good.setAlpha(40)
                    item.setBackground(good)
                self.candidates.setItem(row, col, item)
        self._fit_rows()
        self.candidates.show()

    def _fit_rows(self) -> None:
        """Rows tall enough for their wrapped text (never below the usual row), then the table as tall as its rows."""
        table = self.candidates
        usual = table.verticalHeader().defaultSectionSize()
        for row in range(table.rowCount()):
            table.setRowHeight(row, max(usual, table.sizeHintForRow(row) + 8))
        self._fit_table()

    def _fit_table(self, *_range) -> None:
        """Every row shown without a vertical scroll bar, with room for the horizontal one when the
        window is too narrow for all the columns."""
        table = self.candidates
        bar = table.horizontalScrollBar()
        height = (
            table.horizontalHeader().height()
            + sum(table.rowHeight(r) for r in range(table.rowCount()))
            + 2 * table.frameWidth()
            + (bar.sizeHint().height() if bar.maximum() > 0 else 0)
        )
        table.setFixedHeight(height)

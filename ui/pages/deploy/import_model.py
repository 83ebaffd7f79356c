"""Import a model made elsewhere: an ONNX image classifier, its labels, how its pixels were scaled.

The dialog says what the file tells about itself, lets the person pick the pixel scaling (or have it
measured on the project's labeled photos) and shows the model's answers on three of their photos
before anything is imported. Every call runs in the page's pool (``run``), never on the UI thread.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
)

from modeldesk.app.outside_models import normalisation_choices

MEASURE = "auto"


def _file_row(placeholder: str, pick) -> tuple[QHBoxLayout, QLineEdit]:
    layout = QHBoxLayout()
    edit = QLineEdit()
    edit.setPlaceholderText(placeholder)
    button = QPushButton("Choose…")
    button.clicked.connect(pick)
    layout.addWidget(edit, 1)
    layout.addWidget(button)
    return layout, edit


class ImportModelDialog(QDialog):
    """Pick an ONNX file and its labels, check the answers on three photos, import.

    Signals
    -------
    imported(dict) : the import's result (``model``, ``project``, ``normalisation``, ``metrics``...).
    """

    imported = Signal(dict)

    def __init__(self, workspace, project: str, run, report_error, parent=None):
        super().__init__(parent)
        self.ws, self.project, self.run, self.report_error = workspace, project, run, report_error
        self.setWindowTitle("Import a model made elsewhere")
        self.setMinimumWidth(560)
        self.resize(640, 420)  # room for the preview's lines: word-wrapped labels do not grow a dialog
        intro = QLabel(
            "An image classifier or a YOLO detector exported to ONNX from PyTorch, Keras, Ultralytics or "
            "another tool. ModelDesk checks it on your labeled photos, then you can try, compress, serve and "
            "bundle it like your own models."
        )
        intro.setWordWrap(True)
        model_row, self.model_edit = _file_row("model.onnx", self._pick_model)
        labels_row, self.labels_edit = _file_row(
            "labels.txt: one label a line, in the model's order", self._pick_labels
        )
        self.scaling = QComboBox()
        self.scaling.addItem("Measure it on my labeled photos (recommended)", MEASURE)
        for name, words in normalisation_choices():
            self.scaling.addItem(words, name)
        self.about = QLabel("")
        self.about.setWordWrap(True)
        self.preview_button = QPushButton("Preview on 3 photos")
        self.preview_button.clicked.connect(self.preview)
        self.preview_text = QLabel("")
        self.preview_text.setWordWrap(True)
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)  # the import's length is unknown: a moving bar says it is working
        self.busy.setVisible(False)
        form = QFormLayout()
        form.addRow("Model file", model_row)
        form.addRow("Labels file", labels_row)
        form.addRow("Pixel scaling", self.scaling)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Cancel)
        self.import_button = self.buttons.addButton("Import", QDialogButtonBox.AcceptRole)
        self.buttons.rejected.connect(self.reject)
        self.import_button.clicked.connect(self.start_import)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.about)
        preview_row = QHBoxLayout()
        preview_row.addWidget(self.preview_button)
        preview_row.addStretch(1)
        layout.addLayout(preview_row)
        layout.addWidget(self.preview_text)
        layout.addWidget(self.busy)
        layout.addWidget(self.buttons)
        for edit in (self.model_edit, self.labels_edit):
            edit.textChanged.connect(self._update_buttons)
        self.model_edit.editingFinished.connect(self.inspect)
        self._update_buttons()

    # -- choosing -----------------------------------------------------------------------------------

    def _pick_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Model file", "", "ONNX models (*.onnx);;All files (*)")
        if path:
            self.model_edit.setText(path)
            self.inspect()

    def _pick_labels(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Labels file", "", "Text files (*.txt *.json);;All files (*)"
        )
        if path:
            self.labels_edit.setText(path)

    def _update_buttons(self) -> None:
        ready = bool(self.model_edit.text().strip() and self.labels_edit.text().strip())
        self.import_button.setEnabled(ready)
        self.preview_button.setEnabled(ready)

    def _working(self, on: bool) -> None:
        self.busy.setVisible(on)
        for widget in (self.import_button, self.preview_button, self.scaling):
            widget.setEnabled(not on)
        if not on:
            self._update_buttons()

    # -- the work, off the UI thread -------------------------------------------------------------

    def inspect(self) -> None:
        """Say what the file tells about itself (or why it cannot be imported)."""
        path = self.model_edit.text().strip()
        if not path:
            return
        self.run(
            lambda state: self.ws.inspect_outside_model(path), self._show_inspection, on_failed=self._failed
        )

    def _show_inspection(self, graph: dict) -> None:
        size = f"{graph['size']} px" if graph.get("size") else "any size (224 px will be used)"
        if graph.get("kind") == "detector":
            self.about.setText(f"The file is a detector taking {size} images ({graph['layout']}).")
            return
        classes = f"{graph['classes']:,} classes" if graph.get("classes") else "classes not fixed in the file"
        self.about.setText(f"The file takes {size} images ({graph['layout']}) and scores {classes}.")

    def preview(self) -> None:
        """The model's answers on three of the project's photos with the chosen scaling."""
        scaling = self.scaling.currentData()
        model, labels = self.model_edit.text().strip(), self.labels_edit.text().strip()
        self._working(True)
        self.run(
            lambda state: self.ws.preview_outside_model(model, labels, self.project, scaling),
            self._show_preview,
            on_failed=self._failed,
        )

    def _show_preview(self, result: dict) -> None:
        self._working(False)
        rows = result["answers"]
        if not rows:
            self.preview_text.setText("This project has no photos yet to preview the model on.")
            return
        lines = [f"Pixel scaling: {result['words']}."]
        for row in rows:
            truth = f" (labeled {row['truth']})" if row.get("truth") else ""
            if row.get("boxes") == 0:
                lines.append(f"• {row['name']}{truth}: the model finds nothing")
            elif row.get("boxes"):
                lines.append(
                    f"• {row['name']}: the model finds {row['boxes']} (best: {row['label']}, {row['score']:.0%} sure)"
                )
            else:
                lines.append(
                    f"• {row['name']}{truth}: the model says {row['label']}, {row['score']:.0%} sure"
                )
        self.preview_text.setText("\n".join(lines))

    def start_import(self) -> None:
        model, labels = self.model_edit.text().strip(), self.labels_edit.text().strip()
        scaling = self.scaling.currentData()
        self._working(True)
        self.run(
            lambda state: self.ws.import_outside_model(
                model, labels, project=self.project, normalisation=scaling
            ),
            self._imported,
            on_failed=self._failed,
        )

    def _failed(self, message: str, details: str = "") -> None:
        """Say in the dialog why it did not work (the worker logged the details)."""
        self._working(False)
        self.about.setText(message)

    def _imported(self, result: dict) -> None:
        self._working(False)
        self.imported.emit(result)
        self.accept()

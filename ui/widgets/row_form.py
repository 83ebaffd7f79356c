"""Deploy's "Try it" for table models: one field per column the model reads (a number box, a category
as an editable list of the values seen in training, a date, a text) and an Ask button; the row goes
to the model as the service takes it (``{"column": value, ...}``, an empty field is a missing cell)."""

from __future__ import annotations

from PySide6.QtCore import QLocale, Qt, Signal
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

PLACEHOLDERS = {"number": "a number", "date": "a date, e.g. 2024-05-01", "text": "a text"}


class RowForm(QWidget):
    """``set_columns([{"name", "type", "values"}, ...])`` builds the fields; ``submitted(row)`` on Ask."""

    submitted = Signal(dict)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.fields: dict[str, tuple[str, QWidget]] = {}
        self.inner = QWidget()
        self.form = QFormLayout(self.inner)
        self.form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        self.form.setRowWrapPolicy(QFormLayout.WrapLongRows)  # a narrow card: the name above its field
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(self.inner)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.scroll = scroll
        self.note = QLabel("Leave a field empty when the value is not known: the model fills it in.")
        self.note.setObjectName("Muted")
        self.note.setWordWrap(True)
        self.button = QPushButton("Ask the model")
        self.button.setObjectName("Primary")
        self.button.clicked.connect(self.submit)
        self.clear_button = QPushButton("Clear")
        self.clear_button.clicked.connect(self.clear)
        buttons = QHBoxLayout()
        buttons.addWidget(self.clear_button)
        buttons.addStretch(1)
        buttons.addWidget(self.button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.note)
        layout.addLayout(buttons)

    def set_columns(self, columns: list[dict]) -> None:
        """One field per column, in the model's order (the fields of the previous model go)."""
        while self.form.rowCount():
            self.form.removeRow(0)
        self.fields = {}
        for column in columns:
            kind = column["type"]
            if kind == "category":
                field = QComboBox()
                field.setEditable(True)
                field.addItems([""] + [str(v) for v in column.get("values") or []])
                field.lineEdit().setPlaceholderText("choose or type a value")
                field.lineEdit().returnPressed.connect(self.submit)
            else:
                field = QLineEdit()
                field.setPlaceholderText(PLACEHOLDERS.get(kind, "a value"))
                if kind == "number":
                    validator = QDoubleValidator(field)
                    validator.setNotation(QDoubleValidator.StandardNotation)
                    validator.setLocale(QLocale.c())  # 7.25, never 7,25: the service reads JSON numbers
                    field.setValidator(validator)
                field.returnPressed.connect(self.submit)
            self.fields[column["name"]] = (kind, field)
            self.form.addRow(column["name"], field)
        self.button.setEnabled(bool(columns))
        # every field in view up to about ten columns; more scroll
        row_height = max((f.sizeHint().height() for _k, f in self.fields.values()), default=28) + 8
        self.scroll.setMinimumHeight(min(len(self.fields), 10) * row_height + 8)

    def fill(self, row: dict) -> None:
        """Put a row's cells in the fields (what a test, or a row picked elsewhere, asks about)."""
        for name, (_kind, field) in self.fields.items():
            value = row.get(name)
            text = "" if value is None else str(value)
            field.setEditText(text) if isinstance(field, QComboBox) else field.setText(text)

    def row(self) -> dict:
        """The fields as a row: numbers as numbers, empty fields left out (missing cells)."""
        row = {}
        for name, (kind, field) in self.fields.items():
            text = (field.currentText() if isinstance(field, QComboBox) else field.text()).strip()
            if not text:
                continue
            if kind == "number":
                try:
                    row[name] = int(text) if text.lstrip("-").isdigit() else float(text)
                except ValueError:
                    row[name] = text  # read as missing by the model, as the service would
            else:
                row[name] = text
        return row

    def clear(self) -> None:
        self.fill({})

    def submit(self) -> None:
        if self.fields:
            self.submitted.emit(self.row())

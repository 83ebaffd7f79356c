"""Type or paste a text and add it to a text project, with or without a class.

Signals
-------
submitted(text, label)
    The user pressed "Add text" (or Ctrl+Enter) with a non-empty text; ``label`` may be "".
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


class TextAdder(QWidget):
    """A text box, a class chooser (editable: type a new class) and an "Add text" button."""

    submitted = Signal(str, str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.editor = QPlainTextEdit()
        self.editor.setPlaceholderText("Type or paste a text to add it (Ctrl+Enter adds it)")
        self.editor.setFixedHeight(64)
        self.classes = QComboBox()
        self.classes.setEditable(True)
        self.classes.lineEdit().setPlaceholderText("none: label later")  # an empty box said nothing
        self.classes.setMinimumWidth(140)
        self.classes.setToolTip("The class of the text; leave empty to label it later")
        self.add_button = QPushButton("Add text")
        self.add_button.clicked.connect(self.submit)
        QShortcut(QKeySequence("Ctrl+Return"), self.editor, self.submit, context=Qt.WidgetShortcut)
        side = QVBoxLayout()
        side.addWidget(QLabel("Class"))
        side.addWidget(self.classes)
        side.addWidget(self.add_button)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.editor, 1)
        row.addLayout(side)

    def set_classes(self, labels: list[str]) -> None:
        current = self.classes.currentText()
        self.classes.clear()
        self.classes.addItems([""] + list(labels))
        self.classes.setCurrentText(current)

    def submit(self) -> None:
        text = self.editor.toPlainText()
        if not text.strip():
            self.editor.setFocus()
            return
        self.submitted.emit(text, self.classes.currentText().strip())
        self.editor.clear()

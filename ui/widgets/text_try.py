"""The Deploy page's try-it box for text models: type or paste a text, press Classify (Ctrl+Enter).

Signals
-------
submitted(text)
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget


class TextTry(QWidget):
    """A text box in a readable (CJK-capable) font and a Classify button."""

    submitted = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.editor = QPlainTextEdit()
        self.editor.setPlaceholderText("Type or paste a text, then press Classify (Ctrl+Enter)")
        font = QFont()
        font.setFamilies(["Noto Sans CJK SC", "Noto Sans", "Microsoft YaHei", "PingFang SC", "sans-serif"])
        font.setPointSize(13)
        self.editor.setFont(font)
        self.button = QPushButton("Classify")
        self.button.setObjectName("Primary")
        self.button.clicked.connect(self.submit)
        QShortcut(QKeySequence("Ctrl+Return"), self.editor, self.submit, context=Qt.WidgetShortcut)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.editor, 1)
        layout.addLayout(buttons)

    def submit(self) -> None:
        if self.editor.toPlainText().strip():
            self.submitted.emit(self.editor.toPlainText())

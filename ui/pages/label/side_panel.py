"""The card beside the sample on the Label page: the classes, the model's suggestion, Clear and Undo,
and the keys that work here."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout

from .class_panel import ClassPanel


class SidePanel(QScrollArea):
    """Classes with their keys, the suggestion banner with Accept, Clear and Undo, the keys line; it
    scrolls on a small window instead of squeezing the class buttons."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setFixedWidth(300)
        card = QFrame()
        card.setObjectName("Card")
        self.setWidget(card)
        self.classes = ClassPanel()
        self.banner = QFrame()
        self.banner.setObjectName("Banner")
        self.suggestion_label = QLabel()
        self.suggestion_label.setWordWrap(True)
        self.accept_button = QPushButton("Accept  (Enter)")
        self.accept_button.setObjectName("Primary")
        banner_layout = QVBoxLayout(self.banner)
        banner_layout.addWidget(self.suggestion_label)
        banner_layout.addWidget(self.accept_button)
        self.banner.hide()
        self.clear_button = QPushButton("Clear label")
        self.undo_button = QPushButton("Undo  (Ctrl+Z)")
        self.undo_button.setEnabled(False)
        actions = QHBoxLayout()
        actions.addWidget(self.clear_button)
        actions.addWidget(self.undo_button)
        self.keys_help = QLabel()
        self.keys_help.setObjectName("Muted")
        self.keys_help.setWordWrap(True)
        self.tools = None  # the annotator's own tools (masks: brush, polygon...), above the classes
        layout = QVBoxLayout(card)
        layout.setContentsMargins(16, 14, 16, 14)
        layout.setSpacing(8)
        self.tools_slot = QVBoxLayout()
        layout.addLayout(self.tools_slot)
        layout.addWidget(self.classes)
        layout.addSpacing(6)
        layout.addWidget(self.banner)
        layout.addStretch(1)
        layout.addLayout(actions)
        layout.addWidget(self.keys_help)

    def show_suggestion(self, text: str | None) -> None:
        """The sentence about the model's suggestion for an unlabeled sample, or nothing."""
        if text:
            self.suggestion_label.setText(text)
        self.banner.setVisible(bool(text))

    def configure(self, annotator) -> None:
        """Words for the annotator in use (its hint, what Clear does, its keys) and its own tools."""
        if self.tools is not annotator.tools:
            if self.tools is not None:
                self.tools_slot.removeWidget(self.tools)
                self.tools.hide()
            self.tools = annotator.tools
            if self.tools is not None:
                self.tools_slot.addWidget(self.tools)
                self.tools.show()
        self.undo_button.setVisible(not annotator.history)  # its tools have Undo and Redo
        self.classes.hint.setText(annotator.hint)
        self.clear_button.setText(annotator.clear_text)
        enter = " · Enter accepts the model's suggestion" if annotator.takes_suggestions else ""
        self.keys_help.setText(f"Keys: {annotator.keys} · ← → previous / next{enter} · Ctrl+Z undo")

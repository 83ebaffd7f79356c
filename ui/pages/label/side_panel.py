"""The card beside the sample on the Label page: the classes, the model's suggestion, Clear and Undo,
and the keys that work here."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout

from .class_panel import ClassPanel

WIDE, NARROW = 300, 248  # its width; narrower when the page has less than NARROW_BELOW for both
NARROW_BELOW = 900


class SidePanel(QScrollArea):
    """Classes with their keys, the suggestion banner with Accept, Clear and Undo, the keys line; it
    scrolls on a small window instead of squeezing the class buttons."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setFixedWidth(WIDE)
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
        self.undo_button = QPushButton("Undo")  # "Undo  (Ctrl+Z)" cut the narrow card; the keys line says it
        self.undo_button.setToolTip("Undo the last change (Ctrl+Z)")
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

    def showEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().showEvent(event)
        if self.parentWidget() is not None:
            self.parentWidget().removeEventFilter(self)
            self.parentWidget().installEventFilter(self)
            self._fit(self.parentWidget().width())

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt name)
        if event.type() == QEvent.Resize and watched is self.parentWidget():
            self._fit(event.size().width())
        return False

    def _fit(self, room: int) -> None:
        """Give a small window's photo more room: the card gets narrower below :data:`NARROW_BELOW`."""
        width = WIDE if room >= NARROW_BELOW else NARROW
        if width != self.width():
            self.setFixedWidth(width)

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

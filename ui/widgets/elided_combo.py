"""A combo box that shows a current text too long for it cut with "…" instead of clipped mid-letter
("Tile inspectic"); the list it opens and the tooltip still have the whole text."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QStyle, QStyleOptionComboBox, QStylePainter


class ElidedComboBox(QComboBox):
    """A :class:`QComboBox` whose shown text ends in "…" when it does not fit its field."""

    def shown_text(self) -> str:
        """The current text as drawn: whole when it fits the field beside the arrow, else cut with "…"."""
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        field = self.style().subControlRect(QStyle.CC_ComboBox, option, QStyle.SC_ComboBoxEditField, self)
        return self.fontMetrics().elidedText(option.currentText, Qt.ElideRight, max(field.width(), 0))

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt name)
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.CC_ComboBox, option)
        option.currentText = self.shown_text()
        painter.drawControl(QStyle.CE_ComboBoxLabel, option)

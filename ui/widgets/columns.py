"""Cards side by side when the page is wide enough for them, one under the other when it is not
(so a small window never cuts a card or needs a horizontal scroll bar)."""

from __future__ import annotations

from PySide6.QtWidgets import QBoxLayout, QLayout, QWidget


class Columns(QWidget):
    """Holds widgets in a row (with stretch factors) that turns into a column below ``min_width``
    (default: the sum of the widgets' minimum widths)."""

    def __init__(self, parent=None, *, spacing: int = 12, min_width: int | None = None):
        super().__init__(parent)
        self.min_width = min_width
        self.box = QBoxLayout(QBoxLayout.LeftToRight, self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(spacing)
        # the row's own minimum (all cards side by side) must not stop the widget from narrowing
        self.box.setSizeConstraint(QLayout.SetNoConstraint)
        self._widgets: list[QWidget] = []

    def add(self, widget: QWidget, stretch: int = 1) -> QWidget:
        self.box.addWidget(widget, stretch)
        self._widgets.append(widget)
        return widget

    def needed_width(self) -> int:
        """The width below which the widgets are stacked."""
        if self.min_width is not None:
            return self.min_width
        shown = [w for w in self._widgets if not w.isHidden()]
        return sum(w.minimumSizeHint().width() for w in shown) + self.box.spacing() * max(len(shown) - 1, 0)

    def stacked(self) -> bool:
        return self.box.direction() == QBoxLayout.TopToBottom

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        direction = (
            QBoxLayout.TopToBottom if event.size().width() < self.needed_width() else QBoxLayout.LeftToRight
        )
        if self.box.direction() != direction:
            self.box.setDirection(direction)
        super().resizeEvent(event)

    def minimumSizeHint(self):  # noqa: N802 (Qt name): stacked, the row is as narrow as its widest widget
        hint = super().minimumSizeHint()
        widths = [w.minimumSizeHint().width() for w in self._widgets if not w.isHidden()]
        if widths:
            hint.setWidth(max(widths))
        return hint

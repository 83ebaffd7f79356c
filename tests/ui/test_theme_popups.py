"""The sidebar's drop-downs (project, theme) list their items in readable text in both themes."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from modeldesk.ui import theme
from modeldesk.ui.widgets.sidebar import Sidebar


def _darkest_and_lightest(widget, row: int) -> tuple[float, float]:
    """The least and most luminous pixels of a list row's text area."""
    image = widget.grab().toImage()
    rect = widget.visualRect(widget.model().index(row, 0))
    values = [
        image.pixelColor(x, y).lightnessF()
        for x in range(rect.left() + 2, min(rect.right(), rect.left() + 90))
        for y in range(rect.top() + 1, rect.bottom())
    ]
    return min(values), max(values)


@pytest.mark.parametrize("choice", ["light", "dark"])
def test_unselected_items_contrast_with_the_popup(qtbot, choice):
    app = QApplication.instance()
    theme.apply_theme(app, choice)
    try:
        sidebar = Sidebar()
        qtbot.addWidget(sidebar)
        sidebar.show()
        for combo in (sidebar.switcher, sidebar.theme):
            if combo is sidebar.switcher:
                combo.addItems(["Hand signs", "Spoken digits", "Spam"])
            combo.setCurrentIndex(0)
            combo.showPopup()
            qtbot.waitUntil(combo.view().isVisible, timeout=5000)
            darkest, lightest = _darkest_and_lightest(combo.view(), 1)  # an unselected item
            combo.hidePopup()
            assert lightest - darkest > 0.45, (combo.objectName(), choice, darkest, lightest)
    finally:
        theme.apply_theme(app, "system")  # as the app starts by default

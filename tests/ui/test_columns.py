"""Cards side by side on a wide page, one under the other on a small window (Evaluate's matrix and
per-class cards were cut at 760 x 540 behind a horizontal scroll bar)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

from modeldesk.ui.widgets.columns import Columns


def test_columns_stack_when_too_narrow_for_their_cards(qtbot):
    columns = Columns()
    qtbot.addWidget(columns)
    for text in ("matrix", "per class"):
        card = QLabel(text)
        card.setMinimumWidth(300)
        columns.add(card)
    columns.resize(800, 200)
    columns.show()
    qtbot.waitUntil(lambda: not columns.stacked(), timeout=2000)
    columns.resize(500, 400)
    qtbot.waitUntil(columns.stacked, timeout=2000)
    assert columns.minimumSizeHint().width() <= 320  # stacked, it asks only for its widest card
    columns.resize(900, 200)
    qtbot.waitUntil(lambda: not columns.stacked(), timeout=2000)


def test_the_evaluate_page_fits_a_small_window_without_sideways_scrolling(qtbot, ws):
    from modeldesk.ui.pages.evaluate_page import EvaluatePage

    page = EvaluatePage(ws)
    qtbot.addWidget(page)
    page.resize(560, 460)  # the page's share of a 760 x 540 window
    page.show()
    page.show_empty(False)  # the report's cards, as with a model
    qtbot.waitUntil(page.middle.stacked, timeout=2000)
    assert page.middle.minimumSizeHint().width() < 520

"""The Label page shows a text sample large and readable, cut when huge."""

from __future__ import annotations

from types import SimpleNamespace

from modeldesk.ui.kinds import label_view


def test_text_view_shows_the_text_and_notes_a_cut(qtbot):
    view = label_view("text")()
    qtbot.addWidget(view.widget)
    sample = SimpleNamespace(text="送餐很快，味道很好 — fast and tasty")
    view.show(sample, view.load(sample))
    assert view.widget.toPlainText() == sample.text
    assert view.widget.font().pointSize() >= 16
    huge = SimpleNamespace(text="字" * 50_000)
    shown = view.load(huge)
    assert len(shown) < 21_000 and "more characters not shown" in shown
    view.clear()
    assert view.widget.toPlainText() == ""


def test_a_narrow_window_gets_a_smaller_text_that_still_reads(qtbot):
    view = label_view("text")()
    qtbot.addWidget(view.widget)
    view.widget.resize(900, 400)
    view.widget.show()
    qtbot.waitUntil(lambda: view.widget.width() == 900)
    roomy = view.widget.font().pointSize()
    view.widget.resize(240, 400)
    qtbot.waitUntil(lambda: view.widget.font().pointSize() < roomy)
    assert view.widget.font().pointSize() >= 12  # smaller, not tiny
    view.widget.resize(900, 400)
    qtbot.waitUntil(lambda: view.widget.font().pointSize() == roomy)  # and back when there is room

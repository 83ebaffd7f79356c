"""A text project on the Data page: texts as cards, a box to type a text in, texts wording."""

from __future__ import annotations

import pytest

from modeldesk.app.sample_data import make_text_table


@pytest.fixture
def text_page(qtbot, tmp_path):
    from modeldesk.app.workspace import Workspace
    from modeldesk.ui.pages.data_page import DataPage

    ws = Workspace(tmp_path / "ws")
    ws.create_project("reviews", "text-classification")
    ws.import_data("reviews", make_text_table(tmp_path / "t.csv", per_class=3, seed=0))
    page = DataPage(ws)
    qtbot.addWidget(page)
    page.set_project("reviews")
    yield page, ws
    page.shutdown()
    ws.close()


def test_typed_text_is_added_with_its_class_and_empty_text_is_refused(qtbot, text_page):
    page, ws = text_page
    qtbot.waitUntil(lambda: page.text_adder is not None and not page.text_adder.isHidden(), timeout=10_000)
    assert page.import_button.text() == "Add texts"
    page.text_adder.editor.setPlainText("外卖到得很快  fast and warm")
    page.text_adder.classes.setCurrentText("praise")
    page.text_adder.submit()
    qtbot.waitUntil(lambda: ws.stats("reviews")["samples"] == 10, timeout=10_000)
    assert ws.stats("reviews")["labels"]["praise"] == 4
    with pytest.raises(ValueError, match="empty"):
        ws.add_text("reviews", "   ")


def test_the_empty_class_box_says_the_text_is_labeled_later(qtbot, text_page):
    """An empty class box beside "Add text" said nothing about what leaving it empty does."""
    page, _ws = text_page
    qtbot.waitUntil(lambda: page.text_adder is not None and not page.text_adder.isHidden(), timeout=10_000)
    box = page.text_adder.classes
    assert box.currentText() == "" and "label later" in box.lineEdit().placeholderText()

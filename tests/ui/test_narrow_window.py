"""A 760x540 window: the Data page keeps several columns of photos and says its filter whole, the Label
page's position line is not squeezed to "…", the model picker shows a whole title, a detector's try-it
picture has room."""

from __future__ import annotations

from PySide6.QtGui import QFontMetrics, QPixmap
from PySide6.QtWidgets import QApplication

from modeldesk.ui.pages.data_page import DataPage
from modeldesk.ui.pages.deploy.try_it import DropArea
from modeldesk.ui.pages.label import LabelPage
from modeldesk.ui.widgets.model_picker import ModelPicker


def _shown(qtbot, page, project, width):
    page.resize(width, 540)
    page.show()
    page.set_project(project)
    qtbot.waitUntil(lambda: page.loaded and page.is_idle(), timeout=20_000)
    QApplication.processEvents()
    return page


def _fits(label) -> bool:
    return QFontMetrics(label.font()).horizontalAdvance(label.text()) <= label.width() + 30  # checkbox box


def test_the_data_page_gives_a_narrow_window_to_the_photos(qtbot, ws, tmp_path, make_images, open_page):
    ws.create_project("even", "image-classification")
    ws.import_data("even", make_images(tmp_path / "even", {"red": 10, "green": 10}))
    page = _shown(qtbot, open_page(DataPage, ws), "even", 570)  # the page of a 760 px window
    assert page.side.isHidden(), "the counts card gives its room to the photos"
    assert page.wrong_filter.text() == "Mistakes only" and _fits(page.wrong_filter)
    page.resize(1360, 900)
    QApplication.processEvents()
    assert page.side.isVisible() and page.wrong_filter.text() == "Only the model's mistakes"


def test_a_narrow_data_page_keeps_a_warning_in_view(qtbot, ws, classification_project, open_page):
    page = _shown(qtbot, open_page(DataPage, ws), classification_project, 570)
    assert "too few" in page.warning.text() and page.side.isVisible()


def test_the_label_position_line_has_the_width_of_the_picture(qtbot, ws, classification_project, open_page):
    page = _shown(qtbot, open_page(LabelPage, ws), classification_project, 570)
    qtbot.waitUntil(lambda: page.sample is not None, timeout=10_000)
    QApplication.processEvents()
    assert page.position.width() > page.prev_button.width() + page.next_button.width()
    assert page.position.text().startswith("1 of ")


def test_the_model_picker_shows_a_whole_title(qtbot):
    picker = ModelPicker()
    qtbot.addWidget(picker)
    model = {"id": "m1", "template": "image-classification/accurate", "created": 1_700_000_000.0}
    model["metrics"] = {"accuracy": 0.93}
    picker.set_models([model], None)
    picker.show()
    title = picker.itemText(0)
    assert QFontMetrics(picker.font()).horizontalAdvance(title) < picker.sizeHint().width() - 20, title


def test_a_detectors_photo_gets_room_for_its_boxes(qtbot, tmp_path):
    drop = DropArea()
    qtbot.addWidget(drop)
    photo = QPixmap(64, 48)
    photo.fill()
    photo.save(str(tmp_path / "p.png"))
    drop.show_image(str(tmp_path / "p.png"))
    assert drop.minimumHeight() == 160
    drop.show_image(str(tmp_path / "p.png"), [{"label": "cat", "score": 0.9, "box": [4, 4, 30, 30]}])
    assert drop.minimumHeight() >= 320


def test_the_label_card_s_buttons_fit_its_narrow_width(qtbot):
    """At 760x540 a text project's Label card was cut at the right: "Clear label" beside
    "Undo  (Ctrl+Z)" needed more than the 248 px the card has on a narrow window."""
    from modeldesk.ui.pages.label.annotators import ANNOTATORS
    from modeldesk.ui.pages.label.side_panel import NARROW, SidePanel

    panel = SidePanel()
    qtbot.addWidget(panel)
    panel.setFixedWidth(NARROW)
    panel.show()
    for annotator in ANNOTATORS.values():
        panel.clear_button.setText(annotator.clear_text)
        QApplication.processEvents()
        assert panel.widget().minimumSizeHint().width() <= panel.viewport().width(), annotator.clear_text


def test_a_new_project_s_try_it_starts_empty_at_its_first_size(qtbot, tmp_path):
    """After a segmentation or anomaly project, the next project's try-it kept the photo and the
    320 px room its mask needed."""
    drop = DropArea()
    qtbot.addWidget(drop)
    photo = QPixmap(64, 48)
    photo.fill()
    photo.save(str(tmp_path / "p.png"))
    drop.show_image(str(tmp_path / "p.png"), roomy=True)
    assert drop.minimumHeight() >= 320 and drop.pixmap() is not None and not drop.pixmap().isNull()
    drop.reset()
    assert drop.minimumHeight() == 160 and drop.text() == "Drop a photo here"
    assert drop.pixmap() is None or drop.pixmap().isNull()

"""Help menu: the About dialog lists bundled components and the Qt licence note; "Report a problem"
writes its zip off the UI thread to the file the user picked."""

from __future__ import annotations

import zipfile

import pytest
from PySide6.QtWidgets import QApplication, QFileDialog, QLabel, QMessageBox

from modeldesk.ui.main_window import MainWindow
from modeldesk.ui.widgets.about_dialog import AboutDialog


@pytest.fixture
def window(show_widget, ws):
    return show_widget(MainWindow(ws))


def test_help_menu_has_report_and_about(window):
    titles = [a.text() for a in window.menuBar().actions()]
    assert "&Help" in titles
    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    labels = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert labels == ["Guide to this page", "Keyboard shortcuts", "Report a problem…", "About ModelDesk"]


def test_the_guide_opens_on_the_current_page_and_lists_every_shortcut(qtbot, window):
    from modeldesk.ui.widgets.guide import PAGES, SHORTCUTS

    assert window.help_menu.guide_action.shortcut().toString() == "F1"
    window.current_page = "evaluate"
    window.help_menu.guide_action.trigger()
    dialog = window.help_menu.guide_dialog
    assert dialog.isVisible() and dialog.tabs.tabText(dialog.tabs.currentIndex()) == "Evaluate"
    assert set(PAGES) == {"data", "label", "train", "evaluate", "deploy"}  # every step has its guide
    window.help_menu.shortcuts_action.trigger()
    assert dialog.tabs.tabText(dialog.tabs.currentIndex()) == "Keyboard shortcuts"
    sheet = dialog.tabs.currentWidget().widget().text()
    qtbot.waitUntil(lambda: dialog.tabs.currentWidget().viewport().height() > 100)
    assert dialog.tabs.currentWidget().verticalScrollBar().maximum() == 0  # the whole sheet, unscrolled
    assert all(keys in sheet for _where, keys, _what in SHORTCUTS)
    from modeldesk.ui.pages.label.mask_editor import TOOLS

    painting = {k.strip() for where, keys, _what in SHORTCUTS if "masks" in where for k in keys.split(",")}
    assert {key for _name, key in TOOLS.values()} <= painting  # every painting tool's key is on the sheet
    dialog.close()


def test_about_dialog_lists_components_and_the_qt_note(qtbot, window):
    window.help_menu.about_action.trigger()
    dialog = window.help_menu.about_dialog
    assert isinstance(dialog, AboutDialog) and dialog.isVisible()
    names = [dialog.table.item(row, 0).text() for row in range(dialog.table.rowCount())]
    assert names[0] == "Python" and any("Qt" in n for n in names)
    qt_row = names.index(next(n for n in names if "Qt" in n))
    assert "LGPL" in dialog.table.item(qt_row, 2).text()
    assert "(Qt 6." in dialog.table.item(qt_row, 1).text()
    assert "replace" in dialog.qt_notice.text()
    dialog.copy_details()
    assert "ModelDesk" in QApplication.clipboard().text() and "NumPy" in QApplication.clipboard().text()


def test_report_a_problem_asks_for_a_file_then_writes_the_zip(qtbot, window, tmp_path):
    window.help_menu.report_action.trigger()
    picker = window.help_menu.file_dialog
    assert isinstance(picker, QFileDialog) and picker.acceptMode() == QFileDialog.AcceptSave
    picker.reject()
    target = tmp_path / "problem.zip"
    window.help_menu.write_report(str(target))
    assert not window.help_menu.report_action.isEnabled(), "one report at a time"
    qtbot.waitUntil(lambda: window.help_menu.task is None, timeout=60_000)
    assert window.help_menu.last_report == target
    assert "environment.json" in zipfile.ZipFile(target).namelist()
    assert window.help_menu.report_action.isEnabled()
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
    assert boxes and str(target) in boxes[-1].text() and "What to do with it" in boxes[-1].text()
    for box in boxes:
        box.close()


def test_report_failure_is_shown_not_raised(qtbot, window, tmp_path):
    window.help_menu.write_report(str(tmp_path / "missing-folder" / "r.zip"))
    qtbot.waitUntil(lambda: window.help_menu.task is None, timeout=60_000)
    dialogs = [
        w for w in QApplication.topLevelWidgets() if type(w).__name__ == "ErrorDialog" and w.isVisible()
    ]
    assert dialogs, "the failure is shown in an error dialog"
    text = " ".join(label.text() for label in dialogs[-1].findChildren(QLabel))
    assert "missing-folder" in text and "pick an existing folder" in text
    for dialog in dialogs:
        dialog.close()


def test_the_browser_console_wears_the_apps_blue():
    """The console, its docs and sign-in page use the app's accent colour, not another brand's purple."""
    from pathlib import Path

    from modeldesk.ui import theme

    static = Path(theme.__file__).resolve().parents[1] / "deploy" / "static"
    css = (static / "base.css").read_text(encoding="utf-8")  # the palette console.css builds on
    assert f"--brand: {theme.LIGHT.accent};" in css
    for page in ("index.html", "docs.html", "login.html", "base.css", "console.css", "console.js"):
        text = (static / page).read_text(encoding="utf-8").lower()
        assert "4f46e5" not in text and "a5b4fc" not in text and "818cf8" not in text, page

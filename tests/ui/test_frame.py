"""The main window frame: first run, new project dialog, project switcher, sidebar state, settings."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QDialog

from modeldesk.ui.application import create_application
from modeldesk.ui.main_window import MainWindow
from modeldesk.ui.settings import settings
from modeldesk.ui.widgets.error_dialog import ErrorDialog, show_error


@pytest.fixture
def make_window(show_widget, ws):
    return lambda: show_widget(MainWindow(ws))


def test_first_run_shows_welcome_and_makes_the_sample_project(qtbot, ws, make_window):
    window = make_window()
    assert window.stack.currentWidget() is window.welcome
    assert not window.sidebar.steps.isEnabled()
    with qtbot.waitSignal(window.welcome.project_created, timeout=30_000) as blocker:
        window.welcome.sample_button.click()
    name = blocker.args[0]
    assert window.project == name
    stats = ws.stats(name)
    assert stats["samples"] == 60 and set(stats["labels"]) == {"circle", "square", "triangle"}
    assert stats["labeled"] == 48  # a few come in unlabeled, to try the Label step on
    assert window.current_page == "data"
    qtbot.waitUntil(lambda: window.sidebar.step_state("data")[0] == "done", timeout=10_000)
    assert "60" in window.sidebar.step_state("data")[1]
    assert window.sidebar.step_state("label") == ("active", "48 of 60 labeled")


def test_new_project_dialog_creates_and_imports(qtbot, ws, make_window, image_folder):
    window = make_window()
    dialog = window.new_project()
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    assert not ok.isEnabled()  # no name yet
    qtbot.keyClicks(dialog.name_edit, "Fruit")
    dialog.set_task("image-classification")
    dialog.source_folder.setChecked(True)
    assert not ok.isEnabled()  # no folder yet
    dialog.set_paths([image_folder])
    assert ok.isEnabled()
    qtbot.mouseClick(ok, Qt.LeftButton)  # what a person does: the button, not dialog.accept()
    assert dialog.result() == QDialog.DialogCode.Accepted and not dialog.isVisible()
    assert window.project == "Fruit"
    assert [p["name"] for p in ws.list_projects()] == ["Fruit"]
    assert window.sidebar.switcher.currentText() == "Fruit"
    data = window.page("data")
    qtbot.waitUntil(lambda: data.last_report is not None, timeout=20_000)
    assert data.last_report["added"] == 34
    assert ws.stats("Fruit")["labels"] == {"red": 12, "green": 12, "blue": 4}


def test_new_project_dialog_refuses_a_taken_name(qtbot, ws, make_window):
    ws.create_project("Fruit", "image-classification")
    window = make_window()
    dialog = window.new_project()
    qtbot.keyClicks(dialog.name_edit, "fruit")
    assert not dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()
    assert "already" in dialog.name_error.text()
    dialog.reject()


def test_switcher_changes_project_and_pages_follow(qtbot, ws, make_window, classification_project):
    ws.create_project("empty one", "object-detection")
    window = make_window()
    assert window.project in ("fruit", "empty one")
    window.set_project("fruit")
    window.show_page("label")
    label = window.page("label")
    assert label.project == "fruit"
    index = window.sidebar.switcher.findText("empty one")
    window.sidebar.switcher.setCurrentIndex(index)
    assert window.project == "empty one"
    assert label.project == "empty one" and window.page("data").project == "empty one"
    window.set_project("fruit")  # as the app's own code does (a finished run, a drop, a script)
    assert window.sidebar.switcher.currentText() == "fruit" and window.page("data").project == "fruit"


def test_a_project_name_too_long_for_the_sidebar_is_shown_whole_on_hover(qtbot, ws, make_window):
    from PySide6.QtCore import Qt

    name = "Raccoons in the garden, second summer, night camera"
    ws.create_project(name, "object-detection")
    window = make_window()
    window.resize(760, 540)
    window.set_project(name)
    switcher = window.sidebar.switcher
    assert switcher.fontMetrics().horizontalAdvance(name) > switcher.width()  # it is cut
    assert switcher.toolTip() == name
    assert switcher.itemData(switcher.findText(name), Qt.ToolTipRole) == name
    theme = window.sidebar.theme  # the theme chooser's words fit whole beside its arrow
    widest = max(theme.fontMetrics().horizontalAdvance(theme.itemText(i)) for i in range(theme.count()))
    assert widest + 40 < theme.width()


def test_geometry_and_last_project_are_remembered(qtbot, ws, make_window, classification_project):
    ws.create_project("other", "image-classification")
    window = make_window()
    window.set_project("other")
    window.show_page("label")
    window.resize(781, 633)  # inside the offscreen screen (800x800), above the minimum size
    qtbot.waitUntil(lambda: window.width() == 781)
    window.close()
    assert settings().value("ui/last_project") == "other"
    again = make_window()
    assert again.project == "other"
    assert again.current_page == "label"
    assert (again.width(), again.height()) == (781, 633)


def test_relabel_request_opens_the_label_page_on_that_sample(qtbot, ws, make_window, classification_project):
    window = make_window()
    window.set_project("fruit")
    target = ws.store.sample_ids("fruit", label="green")[3]
    window.relabel(target)
    label = window.page("label")
    assert window.current_page == "label"
    qtbot.waitUntil(lambda: label.sample is not None and label.sample.id == target, timeout=10_000)


def test_dropping_a_folder_imports_it(qtbot, ws, make_window, image_folder):
    ws.create_project("fruit", "image-classification")
    window = make_window()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(image_folder / "red"))])
    enter = QDragEnterEvent(QPoint(300, 300), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(300, 300), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(window, drop)
    assert drop.isAccepted()
    data = window.page("data")
    assert window.current_page == "data"
    qtbot.waitUntil(lambda: data.last_report is not None, timeout=20_000)
    assert data.last_report["added"] == 12
    assert ws.stats("fruit")["samples"] == 12


def test_error_dialog_names_the_problem_and_offers_the_log(qtbot, ws):
    dialog = show_error(None, "Import failed", "photo.jpg is not an image", "Traceback ...", ws.paths.log)
    qtbot.addWidget(dialog)
    assert isinstance(dialog, ErrorDialog)
    assert dialog.log_button.isEnabled()
    assert not dialog.details.isVisible()
    dialog.details_button.click()
    assert dialog.details.isVisible() and "Traceback" in dialog.details.toPlainText()
    dialog.done(QDialog.Rejected)


def test_application_setup_applies_a_theme():
    from modeldesk.ui import theme

    app = create_application()
    assert "QWidget#Sidebar" in app.styleSheet()
    colors = theme.apply_theme(app, "dark")
    assert colors.dark and app.palette().window().color().name() == theme.DARK.window
    assert not theme.apply_theme(app, "light").dark
    theme.apply_theme(app, "system")


def test_many_qt_calls_do_not_exhaust_none_and_true(qtbot):
    """PySide6 6.12 on Python < 3.12 drops a reference to None per void call and to True per signal
    emission; pyproject.toml excludes that release there, else this loop ends in "deallocating None"."""
    import sys

    from PySide6.QtCore import QObject, Signal
    from PySide6.QtWidgets import QLabel

    class Emitter(QObject):
        fired = Signal(int)

    label, emitter, seen = QLabel(), Emitter(), []
    emitter.fired.connect(seen.append)
    before = sys.getrefcount(None)
    calls = 200_000  # several times the ~50,000 references None has in a test process
    for i in range(calls):
        label.setText("x")
        emitter.fired.emit(i)
    assert len(seen) == calls and label.text() == "x"
    assert sys.getrefcount(None) >= before - 1000  # a leak would have taken ~200,000


def test_a_mistake_clicked_after_visiting_label_opens_that_sample(
    qtbot, ws, make_window, classification_project
):
    window = make_window()
    window.set_project("fruit")
    window.show_page("label")
    label = window.page("label")
    qtbot.waitUntil(lambda: label.sample is not None and label.is_idle(), timeout=10_000)
    first = label.sample.id
    window.show_page("data")
    target = next(s for s in ws.store.sample_ids("fruit", label="green") if s != first)
    window.relabel(target)  # what a click on Evaluate's mistake does: the page refresh must not win
    qtbot.waitUntil(lambda: label.is_idle() and not label.latest.running, timeout=10_000)
    assert label.sample.id == target


def test_a_finished_run_selects_its_model_everywhere_unless_the_user_picked_one(
    qtbot, ws, make_window, classification_project
):
    store = ws.store
    for name in ("old", "new", "newer"):
        store.add_model("fruit", name, ws.paths.models / name, "image-classification/fast", {"accuracy": 0.5})
    window = make_window()
    window.set_project("fruit")
    evaluate, deploy = window.page("evaluate"), window.page("deploy")
    qtbot.waitUntil(lambda: evaluate.loaded and deploy.loaded, timeout=10_000)
    train = window.page("train")
    train.run_started.emit()
    train.model_trained.emit("old")  # a run finished: every page shows its model
    qtbot.waitUntil(lambda: evaluate.model_id == "old" and deploy.model_id == "old", timeout=10_000)
    assert window.model_id == "old"

    train.run_started.emit()
    deploy.pick_model("new")  # the user picks a model during the next run
    assert evaluate.model_id == "new"
    train.model_trained.emit("newer")  # ... so that run's model does not take over
    assert evaluate.model_id == deploy.model_id == window.model_id == "new"


def test_the_theme_switch_applies_and_remembers_the_choice(qtbot, ws, make_window):
    from modeldesk.ui import theme

    create_application()
    window = make_window()
    switch = window.sidebar.theme
    switch.activated.emit(switch.findData("dark"))
    assert theme.current().dark and settings().value("ui/theme") == "dark"
    assert QApplication.instance().palette().window().color().name() == theme.DARK.window
    switch.activated.emit(switch.findData("light"))
    assert not theme.current().dark and settings().value("ui/theme") == "light"
    again = make_window()
    assert again.sidebar.theme.currentData() == "light"
    theme.apply_theme(QApplication.instance(), "system")


def test_deploy_shows_done_once_a_model_is_exported(qtbot, ws, make_window, classification_project, tmp_path):
    from modeldesk.ui.status import mark_deployed, project_status

    ws.store.add_model("fruit", "m1", ws.paths.models / "m1", "image-classification/fast", {"accuracy": 0.9})
    assert project_status(ws, "fruit")["deploy"][0] == "active"
    mark_deployed("fruit")  # what the Deploy page does after serving or exporting
    window = make_window()
    window.set_project("fruit")
    qtbot.waitUntil(lambda: window.sidebar.step_state("deploy")[0] == "done", timeout=10_000)
    ws.create_project("other", "image-classification")
    assert project_status(ws, "other")["train"][:2] == ("todo", "Not ready yet")


def test_rename_and_delete_a_project_from_the_sidebar(qtbot, ws, make_window, classification_project):
    from modeldesk.app.keep_up import KeepUp
    from modeldesk.ui.status import mark_deployed, was_deployed

    ws.create_project("spare", "image-classification")
    KeepUp(ws).set_enabled("fruit", True)
    mark_deployed("fruit")
    window = make_window()
    window.set_project("fruit")
    window.ask_rename_project()
    window.question.setTextValue("orchard")
    window.question.accept()
    assert window.project == "orchard" and "orchard" in [p["name"] for p in ws.list_projects()]
    assert ws.stats("orchard")["samples"] == 34
    # what was kept by the project's name goes with it: the switch and the Deploy step's state
    assert KeepUp(ws).enabled("orchard") and was_deployed("orchard") and not was_deployed("fruit")
    window.ask_delete_project()
    qtbot.waitUntil(
        lambda: (
            window.question is not None
            and window.question.isVisible()
            and "Delete project" in window.question.windowTitle()
        ),
        timeout=10_000,
    )
    assert "34 samples" in window.question.text()  # it says what will be lost
    window.question.button(window.question.StandardButton.Cancel).click()
    assert "orchard" in [p["name"] for p in ws.list_projects()]
    window.ask_delete_project()
    qtbot.waitUntil(
        lambda: "34 samples" in window.question.text() and window.question.isVisible(), timeout=10_000
    )
    delete = next(b for b in window.question.buttons() if b.text() == "Delete project")
    delete.click()
    qtbot.waitUntil(lambda: [p["name"] for p in ws.list_projects()] == ["spare"], timeout=10_000)
    assert window.project == "spare"


def test_when_no_program_opens_the_log_the_dialog_says_where_it_is(qtbot, ws, monkeypatch):
    from PySide6.QtGui import QDesktopServices

    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: False)
    dialog = show_error(None, "Import failed", "photo.jpg is not an image", None, ws.paths.log)
    qtbot.addWidget(dialog)
    assert not dialog.open_log()
    assert dialog.log_note.isVisible() and str(ws.paths.log) in dialog.log_note.text()
    dialog.done(QDialog.Rejected)


def test_the_welcome_screen_shows_no_step_of_the_last_project(qtbot, ws, make_window, classification_project):
    window = make_window()
    window.set_project("fruit")
    qtbot.waitUntil(lambda: window.sidebar.step_state("data")[0] == "done", timeout=10_000)
    window.set_project(None)  # e.g. the last project was deleted
    assert all(window.sidebar.step_state(key) == ("todo", "") for key in ("data", "label", "train"))


def test_a_cut_project_name_ends_in_an_ellipsis(qtbot, ws, make_window):
    """At 760x540 the switcher showed "Tile inspectic", cut mid-letter."""
    name = "Tile inspection, second line"
    ws.create_project(name, "anomaly-detection")
    window = make_window()
    window.resize(760, 540)
    window.set_project(name)
    switcher = window.sidebar.switcher
    qtbot.waitUntil(lambda: switcher.currentText() == name)
    shown = switcher.shown_text()
    assert shown.endswith("…") and name.startswith(shown[:-1])
    window.resize(1600, 1000)
    switcher.setMinimumWidth(switcher.fontMetrics().horizontalAdvance(name) + 80)
    qtbot.waitUntil(lambda: switcher.shown_text() == name)


def test_no_task_sentence_in_the_new_project_dialog_is_clipped(qtbot, ws, make_window):
    """The nine tasks' sentences need more than the two thirds of the screen a dialog gets by default:
    each was squeezed to one line, its second line cut through the middle."""
    from PySide6.QtWidgets import QLabel

    window = make_window()
    dialog = window.new_project()
    qtbot.waitUntil(dialog.isVisible)
    sentences = [
        label
        for label in dialog.findChildren(QLabel)
        if label.objectName() == "Muted" and label.wordWrap() and label.text()
    ]
    assert len(sentences) >= 9
    for label in sentences:
        assert label.height() >= label.heightForWidth(label.width()), label.text()
    dialog.reject()

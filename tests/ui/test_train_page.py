"""The Train page: recipe cards with estimates, hardware line, training through the real job queue."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from modeldesk.app.workspace import Workspace
from modeldesk.ui.pages.train import TrainPage
from modeldesk.ui.wording import describe_duration, describe_hardware, template_title

FAST = "image-classification/fast"


@pytest.fixture
def ws(tmp_path, make_images):
    workspace = Workspace(tmp_path / "ws")
    workspace.create_project("colors", "image-classification")
    workspace.import_data(
        "colors", make_images(tmp_path / "data", {"red": 8, "green": 8, "blue": 8}, size=64)
    )
    yield workspace
    workspace.jobs.close(cancel_running=True, timeout=20)
    workspace.close()


@pytest.fixture
def open_page(ws, open_page):
    """The shared fixture, set up after ``ws`` so pages close before the workspace does."""
    return open_page


def test_plain_words_for_hardware_and_time(ws):
    resources = {
        "cpu": {"model": "Intel(R) Xeon(R) Processor", "physical_cores": 2},
        "memory": {"total_bytes": 23e9},
        "gpus": [],
        "providers": {"CPUExecutionProvider": True, "CUDAExecutionProvider": False},
    }
    assert describe_hardware(resources) == "Intel Xeon, 2 cores, 23 GB memory, no GPU found"
    assert [d for d, _ in ws.device_choices(resources)] == ["auto", "cpu"]
    resources["gpus"] = [{"name": "NVIDIA H200", "memory_total_bytes": 141e9}]
    resources["providers"]["CUDAExecutionProvider"] = True
    assert "NVIDIA H200 (141 GB)" in describe_hardware(resources)
    assert [d for d, _ in ws.device_choices(resources)] == ["auto", "cpu", "cuda"]
    assert describe_duration(3) == "about 5 s"
    assert describe_duration(75) == "about 1 min"
    assert describe_duration(5400) == "about 1.5 h"
    assert template_title({"name": "image-classification/fast"}) == "Fast"


def test_cards_show_each_recipe_with_its_estimate_and_the_hardware(qtbot, ws, open_page):
    page = open_page(TrainPage, ws)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.loaded, timeout=20000)
    names = {t["name"] for t in ws.templates("image-classification")}
    assert set(page.cards) == names
    assert page.selected_template() == FAST
    qtbot.waitUntil(lambda: "cores" in page.hardware.text(), timeout=20000)
    qtbot.waitUntil(lambda: all("Time:" in c.eta.text() for c in page.cards.values()), timeout=20000)
    assert "24 labeled of 24 in 3 classes" in page.data_summary.text()
    assert page.start_button.isEnabled()
    page.select_template("image-classification/accurate")
    assert page.selected_template() == "image-classification/accurate"


def test_one_class_cannot_train_and_points_to_labeling(qtbot, ws, open_page, tmp_path, make_images):
    ws.create_project("one", "image-classification")
    ws.import_data("one", make_images(tmp_path / "one", {"red": 8}, size=64))
    page = open_page(TrainPage, ws)
    page.set_project("one")
    qtbot.waitUntil(lambda: page.loaded, timeout=20000)
    assert not page.start_button.isEnabled()
    assert "at least 2 classes" in page.start_hint.text()
    with qtbot.waitSignal(page.navigate) as blocker:
        qtbot.mouseClick(page.go_label, Qt.LeftButton)
    assert blocker.args == ["label"]


def test_training_runs_in_the_queue_and_reports_its_model(qtbot, ws, open_page):
    page = open_page(TrainPage, ws)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.loaded, timeout=20000)
    progress = []
    page.watcher.progress.connect(progress.append)
    with qtbot.waitSignal(page.model_trained, timeout=120000) as blocker:
        qtbot.mouseClick(page.start_button, Qt.LeftButton)
        qtbot.waitUntil(lambda: page.progress.isVisible(), timeout=5000)
    model_id = blocker.args[0]
    assert [m["id"] for m in ws.list_models("colors")] == [model_id]
    assert not page.progress.isVisible()
    assert page.result_banner.isVisible()
    assert "Right 3 times out of 3 on photos it never saw" in page.result_text.text()
    assert any(e.get("fraction") for e in progress)
    assert page.chart.series, "the final accuracy reaches the chart"
    assert page.chart_card.isVisible() == page.chart.moves  # a single dot is not shown as a chart
    assert "Extracting features" in page.run_view.stage_names
    qtbot.waitUntil(
        lambda: page.jobs_table.rowCount() == 1 and page.jobs_table.item(0, 2).text().startswith("Finished"),
        timeout=10000,
    )
    assert page.start_button.isEnabled()
    with qtbot.waitSignal(page.navigate) as nav:
        qtbot.mouseClick(page.result_button, Qt.LeftButton)
    assert nav.args == ["evaluate"]


def test_cancel_then_resume_from_the_runs_table(qtbot, ws, open_page):
    page = open_page(TrainPage, ws)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.loaded, timeout=20000)
    with qtbot.waitSignal(page.watcher.cancelled, timeout=60000):
        qtbot.mouseClick(page.start_button, Qt.LeftButton)
        qtbot.waitUntil(lambda: page.job_id is not None, timeout=10000)
        qtbot.mouseClick(page.progress.cancel_button, Qt.LeftButton)
    assert ws.jobs.get(page.job_id)["state"] == "cancelled"
    qtbot.waitUntil(lambda: page.jobs_table.cellWidget(0, 4) is not None, timeout=10000)
    assert page.jobs_table.item(0, 2).text() == "Cancelled"
    resume = page.jobs_table.cellWidget(0, 4)
    assert resume is not None and resume.text() == "Resume"
    with qtbot.waitSignal(page.model_trained, timeout=120000):
        qtbot.mouseClick(resume, Qt.LeftButton)
    assert ws.jobs.get(page.job_id)["state"] == "done"
    assert len(ws.list_models("colors")) == 1


def test_a_page_opened_during_a_run_follows_it(qtbot, ws, open_page):
    job_id = ws.submit_training("colors", FAST)  # e.g. started before the app was reopened
    page = open_page(TrainPage, ws)
    with qtbot.waitSignal(page.model_trained, timeout=120000):
        page.set_project("colors")
        qtbot.waitUntil(lambda: page.job_id == job_id, timeout=20000)
        assert not page.start_button.isEnabled(), "one run at a time from this page"
    assert ws.jobs.get(job_id)["state"] == "done"


def test_a_page_reopened_during_a_run_shows_the_running_recipe(qtbot, ws, open_page):
    """After closing the app mid-run and opening it again, the card said 'Fast' while the running job
    was 'Accurate'."""
    accurate = "image-classification/accurate"
    job_id = ws.submit_training("colors", accurate)
    page = open_page(TrainPage, ws)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.job_id == job_id, timeout=20000)
    assert page.selected_template() == accurate
    page.cancel()


def test_a_failed_run_shows_why_with_the_run_log(qtbot, ws, open_page):
    from PySide6.QtWidgets import QApplication

    from modeldesk.ui.widgets import ErrorDialog

    for sample in ws.store.samples(ws.project("colors")):
        sample.path.write_bytes(b"not an image any more")  # the files went bad after the import
    page = open_page(TrainPage, ws)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.loaded, timeout=20000)
    with qtbot.waitSignal(page.watcher.failed, timeout=120000):
        qtbot.mouseClick(page.start_button, Qt.LeftButton)
    dialog = next(w for w in QApplication.topLevelWidgets() if isinstance(w, ErrorDialog) and w.isVisible())
    assert dialog.windowTitle() == "Training failed"
    text = dialog.findChild(type(page.hardware), "ErrorMessage").text()
    assert text.startswith("none of the 24 images could be read")
    assert dialog.log_file == Path(ws.jobs.get(page.job_id)["log_path"])
    assert dialog.log_file.is_file()
    qtbot.waitUntil(lambda: page.jobs_table.cellWidget(0, 4) is not None, timeout=10000)  # resumable
    assert page.start_button.isEnabled()
    dialog.close()


def test_a_tags_project_counts_labeled_photos_not_tags(qtbot):
    """Three tags on one photo make one labeled photo: the banner said '56 labeled of 42'."""
    from modeldesk.ui.pages.train.facts import FactsBanner

    banner = FactsBanner()
    qtbot.addWidget(banner)
    banner.show_data({"target": "tags"}, {"samples": 42, "labeled": 40, "labels": {"sky": 30, "sea": 26}}, "")
    assert banner.data_summary.text().startswith("40 labeled of 42 in 2 tags")


def test_a_runs_notes_and_warnings_show_as_plain_text(qtbot, ws, open_page):
    page = open_page(TrainPage, ws)
    page.set_project("colors")
    qtbot.waitUntil(lambda: page.loaded, timeout=20000)
    note = "Some objects are small at 320 px: <b>cell</b> (about 9 px)."
    page._on_finished(
        {"result": {"metrics": {"accuracy": 0.9, "n": 10}, "notes": [note], "warnings": ["a & b"]}}
    )
    text = page.result_text.text()
    assert "Some objects are small at 320 px: &lt;b&gt;cell&lt;/b&gt; (about 9 px)." in text
    assert "a &amp; b" in text


def test_a_recipe_title_wraps_instead_of_being_cut_off_in_a_narrow_window(qtbot):
    from modeldesk.trainers.templates import list_templates
    from modeldesk.ui.pages.train.template_card import TemplateCards

    cards = TemplateCards()
    qtbot.addWidget(cards)
    cards.set_templates([t.to_dict() for t in list_templates("object-detection")])
    cards.resize(480, 400)  # three cards of about 150 px, as at 760 px with a scroll bar
    cards.show()
    qtbot.waitExposed(cards)
    assert cards.title("object-detection/small-objects") == "Small objects"  # the runs table's recipe
    title = cards.cards["object-detection/small-objects"].title
    one_line = title.fontMetrics().horizontalAdvance(title.text())
    assert title.width() < one_line  # the narrow case: it cannot stand on one line
    for card in cards.cards.values():
        assert card.title.height() >= card.title.heightForWidth(card.title.width())  # all of it shows

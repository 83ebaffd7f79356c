"""The Data step: import with a summary, gallery filters and thumbnails, class-size warnings,
and an event loop that keeps running while thousands of images come in."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmap

from modeldesk.ui.gallery import PixmapCache, SampleIdRole
from modeldesk.ui.pages.data_page import DataPage


@pytest.fixture
def make_page(qtbot, ws, show_widget):
    def make(project) -> DataPage:
        page = DataPage(ws)
        page.resize(1000, 700)
        show_widget(page)
        page.set_project(project)
        qtbot.waitUntil(lambda: page.loaded and page.is_idle(), timeout=10_000)
        return page

    return make


def shown_ids(page: DataPage) -> list[int]:
    model = page.gallery.model()
    return [model.index(row).data(SampleIdRole) for row in range(model.rowCount())]


def test_import_folder_reports_added_duplicates_and_refused(qtbot, ws, image_folder, make_page):
    ws.create_project("fruit", "image-classification")
    (image_folder / "red" / "broken.jpg").write_bytes(b"this is not a jpeg")
    page = make_page("fruit")
    assert page.gallery_stack.currentWidget() is page.drop_hint
    with qtbot.waitSignal(page.status_changed, timeout=20_000):
        page.import_paths([image_folder])
    report = page.last_report
    assert report["added"] == 34 and report["duplicates"] == 0
    assert [f["file"].endswith("broken.jpg") for f in report["failed"]] == [True]
    assert page.summary_dialog is None, "the import never interrupts with a dialog"
    assert "34 photos added" in page.result_line.text() and "1 refused" in page.result_line.text()
    assert page.details_button.isVisible()
    qtbot.mouseClick(page.details_button, Qt.LeftButton)
    tree = page.summary_dialog.problems
    assert page.summary_dialog.isVisible() and not page.summary_dialog.isModal()
    assert tree.topLevelItem(0).text(0) == "broken.jpg" and tree.topLevelItem(0).text(1)
    page.summary_dialog.accept()
    qtbot.waitUntil(lambda: page.gallery.model().rowCount() == 34, timeout=10_000)
    assert page.gallery_stack.currentWidget() is page.gallery
    assert page.chart.counts == {"red": 12, "green": 12, "blue": 4}
    assert page.warning.isVisible()
    assert "Add more photos of blue: 4 are too few to learn from" in page.warning.text()

    with qtbot.waitSignal(page.status_changed, timeout=20_000):
        page.import_paths([image_folder / "green"])  # the same files again: merged, not added
    assert page.last_report["added"] == 0 and page.last_report["duplicates"] == 12
    assert "12 already in the project" in page.result_line.text()


def test_a_path_refused_as_a_whole_is_listed_not_raised(qtbot, ws, tmp_path, make_page):
    ws.create_project("fruit", "image-classification")
    empty = tmp_path / "nothing here"
    empty.mkdir()
    (empty / "notes.txt").write_text("no images")
    page = make_page("fruit")
    with qtbot.waitSignal(page.status_changed, timeout=20_000):
        page.import_paths([empty])
    assert page.last_report["added"] == 0
    assert page.last_report["failed"][0]["file"] == str(empty)
    assert page.show_summary().problems.topLevelItemCount() >= 1
    page.summary_dialog.accept()


def test_gallery_filters(qtbot, ws, classification_project, make_page):
    store = ws.store
    page = make_page(classification_project)
    everything = shown_ids(page)
    assert len(everything) == 34

    page.set_filter(label="green")
    qtbot.waitUntil(lambda: len(shown_ids(page)) == 12, timeout=10_000)
    assert set(shown_ids(page)) == set(store.sample_ids("fruit", label="green"))

    page.set_filter(unlabeled=True)
    qtbot.waitUntil(lambda: len(shown_ids(page)) == 6, timeout=10_000)
    assert all(page.gallery.model().captions[s] == "unlabeled" for s in shown_ids(page))

    page.set_filter(split="train")
    train = store.sample_ids("fruit", split="train")
    qtbot.waitUntil(lambda: set(shown_ids(page)) == set(train), timeout=10_000)
    assert 0 < len(train) < 28

    # "predicted wrong" needs a model: record one with predictions, two of them wrong
    reds = store.sample_ids("fruit", label="red")
    store.add_model("fruit", "m1", ws.paths.models / "m1", "image-classification/fast", {"accuracy": 0.9})
    store.save_predictions("m1", [(reds[0], "green", 0.8), (reds[1], "blue", 0.6), (reds[2], "red", 0.9)])
    page.set_filter()
    qtbot.waitUntil(lambda: page.wrong_filter.isEnabled(), timeout=10_000)
    page.set_filter(wrong_only=True)
    qtbot.waitUntil(lambda: set(shown_ids(page)) == {reds[0], reds[1]}, timeout=10_000)
    assert page.gallery.model().captions[reds[0]] == "red ≠ green"


def test_thumbnails_load_lazily_off_the_ui_thread(qtbot, ws, classification_project, make_page):
    page = make_page(classification_project)
    model = page.gallery.model()
    qtbot.waitUntil(lambda: len(model.cache) > 0, timeout=10_000)  # the visible ones were asked for
    sid = model.ids[0]
    qtbot.waitUntil(lambda: sid in model.cache, timeout=10_000)
    pixmap = model.index(0).data(1)  # DecorationRole
    assert isinstance(pixmap, QPixmap) and not pixmap.isNull()
    assert max(pixmap.width(), pixmap.height()) <= 160


def test_pixmap_cache_evicts_least_recently_used():
    cache = PixmapCache(capacity=2)
    cache.put(1, QPixmap(1, 1))
    cache.put(2, QPixmap(1, 1))
    assert cache.get(1) is not None  # 1 is now the most recent
    cache.put(3, QPixmap(1, 1))
    assert 2 not in cache and 1 in cache and 3 in cache


def test_import_can_be_cancelled(qtbot, ws, tmp_path, make_images, make_page):
    folder = make_images(tmp_path / "many", {"red": 300}, size=16)
    ws.create_project("fruit", "image-classification")
    page = make_page("fruit")
    page.import_paths([folder])
    assert page.progress.isVisible()
    page.progress.cancel_button.click()
    qtbot.waitUntil(lambda: page.import_task is None, timeout=20_000)
    assert not page.progress.isVisible()
    assert ws.stats("fruit")["samples"] < 300


def test_event_loop_stays_responsive_while_importing_2000_images(
    qtbot, ws, tmp_path, make_images, latency_probe, ui_thread_calls, make_page
):
    folder = make_images(tmp_path / "big", {"red": 700, "green": 700, "blue": 600}, size=12)
    ws.create_project("big", "image-classification")
    page = make_page("big")
    with latency_probe as probe, ui_thread_calls(ws) as calls:
        page.import_paths([folder])
        qtbot.waitUntil(lambda: page.last_report is not None, timeout=120_000)
        qtbot.waitUntil(lambda: page.gallery.model().rowCount() == 2000, timeout=20_000)
    assert page.last_report["added"] == 2000
    assert probe.ticks > 20
    # Measures a loaded machine cannot fail: no Workspace call (where waiting happens) on the UI
    # thread, and never 100 ms of UI-thread CPU between two event-loop turns.
    assert calls.calls == [], f"Workspace calls on the UI thread: {calls.calls}"
    assert probe.max_cpu_ms < 100, f"the UI thread computed {probe.max_cpu_ms:.0f} ms in one go"


def test_ui_thread_calls_are_recorded_and_worker_calls_are_not(ws, ui_thread_calls):
    import threading

    ws.create_project("p", "image-classification")
    with ui_thread_calls(ws) as calls:
        worker = threading.Thread(target=lambda: ws.stats("p"))
        worker.start()
        worker.join()
        assert calls.calls == []
        ws.stats("p")
    assert calls.calls == ["stats"]
    ws.stats("p")  # no longer recorded once the block ends
    assert calls.calls == ["stats"]


def test_latency_probe_notices_a_stalled_ui_thread(qtbot, latency_probe):
    import time

    from PySide6.QtCore import QTimer

    def stall():  # what a synchronous import on the UI thread would do
        end = time.monotonic() + 0.15
        while time.monotonic() < end:
            pass

    with latency_probe as probe:
        QTimer.singleShot(30, stall)
        qtbot.waitUntil(lambda: probe.ticks > 10 and probe.max_gap_ms > 0, timeout=5_000)
    assert probe.max_gap_ms >= 150
    assert len(probe.blocked(100)) == 1  # a busy UI thread is ours, whatever the machine's load


def test_latency_probe_blames_a_waiting_ui_thread_too(qtbot, latency_probe):
    import threading

    from PySide6.QtCore import QTimer

    lock = threading.Lock()

    def wait_on_a_lock():  # a UI thread blocked on I/O or a lock freezes the window just the same
        lock.acquire()
        lock.acquire(timeout=0.15)
        lock.release()

    with latency_probe as probe:
        QTimer.singleShot(30, wait_on_a_lock)
        qtbot.waitUntil(lambda: probe.ticks > 10 and probe.max_gap_ms >= 150, timeout=5_000)
    assert len(probe.blocked(100)) == 1


def test_remove_photos_after_a_confirmation(qtbot, ws, classification_project, make_page):
    from PySide6.QtCore import QItemSelectionModel

    page = make_page(classification_project)
    model = page.gallery.model()
    for row in (0, 1):
        page.gallery.selectionModel().select(model.index(row), QItemSelectionModel.Select)
    chosen = page.selected_ids()
    original = {s.content_hash: (s.labels, s.split) for s in ws.store.samples(ws.project("fruit"))}
    box = page.remove_selected()
    assert "Remove 2 photos" in box.text() and "files on your disk stay" in box.text()
    next(b for b in box.buttons() if b.text() == "Remove 2 photos").click()
    qtbot.waitUntil(lambda: ws.stats("fruit")["samples"] == 32, timeout=10_000)
    qtbot.waitUntil(lambda: page.is_idle() and page.gallery.model().rowCount() == 32, timeout=10_000)
    assert not set(chosen) & set(ws.sample_ids("fruit"))
    # the import's "added" line gave way to what was removed, and Ctrl+Z brings them back as they were
    assert page.result_line.text().startswith("Removed 2 photos")
    from PySide6.QtWidgets import QApplication

    page.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is page)  # shortcuts go to the active window
    page.gallery.setFocus()
    qtbot.keyClick(page.gallery, Qt.Key_Z, Qt.ControlModifier)
    qtbot.waitUntil(lambda: ws.stats("fruit")["samples"] == 34 and page.is_idle(), timeout=10_000)
    back = {s.content_hash: (s.labels, s.split) for s in ws.store.samples(ws.project("fruit"))}
    assert back == original  # the same photos, labels and splits
    assert all(s.path.is_file() for s in ws.store.samples(ws.project("fruit")))
    assert page.result_line.text() == "Brought back 2 photos."


def test_webcam_photos_go_into_the_chosen_class(qtbot, ws, classification_project, show_widget):
    from modeldesk.ui.widgets.camera_capture import CaptureWidget, GeneratedFrames

    page = DataPage(ws)
    page.make_capture = lambda: CaptureWidget(GeneratedFrames(), every_s=0.1, max_frames=5)
    page.resize(1000, 700)
    show_widget(page)
    page.set_project(classification_project)
    qtbot.waitUntil(
        lambda: page.capture is not None and page.capture.isVisible() and page.is_idle(), timeout=10_000
    )
    capture = page.capture
    qtbot.waitUntil(
        lambda: capture.preview.pixmap() is not None and not capture.preview.pixmap().isNull(), timeout=10_000
    )  # the live preview runs
    capture.classes.setCurrentText("green")
    before = ws.stats("fruit")["labels"]["green"]
    capture.button.pressed.emit()  # hold ...
    qtbot.waitUntil(lambda: capture.burst is None, timeout=10_000)  # ... until the burst is full
    qtbot.waitUntil(lambda: ws.stats("fruit")["labels"]["green"] == before + 5, timeout=10_000)
    assert "5 photos added" in capture.status.text()


def test_without_a_camera_there_is_no_capture_button(qtbot, ws, classification_project, show_widget):
    from modeldesk.ui.widgets.camera_capture import CaptureWidget

    class NoCamera:
        def available(self):
            return False

    page = DataPage(ws)
    page.make_capture = lambda: CaptureWidget(NoCamera())
    show_widget(page)
    page.set_project(classification_project)
    qtbot.waitUntil(lambda: page.loaded and page.capture is not None, timeout=10_000)
    assert not page.capture.isVisible() and page.capture.parent() is page  # owned, never in the bar
    assert page.recorder_slot.indexOf(page.capture) == -1


def test_a_burst_keeps_one_frame_per_interval_and_stops_when_full():
    import numpy as np

    from modeldesk.app.capture import Burst

    burst = Burst(every_s=0.2, max_frames=3)
    kept = [burst.feed(np.zeros((4, 4, 3), np.uint8), t=i * 0.1) for i in range(10)]
    assert kept == [True, False, True, False, True, False, False, False, False, False]
    photos = burst.photos()
    assert len(photos) == 3 and all(p[:2] == b"\xff\xd8" for p in photos)  # JPEG files


@pytest.mark.parametrize(
    "task, shown, hidden",
    [
        ("image-multilabel", ["labels.csv", "photo.jpg"], []),  # a tags CSV beside the photos
        ("object-detection", ["instances.json", "photo.xml", "data.yaml"], []),
        ("text-classification", ["data.csv", "reviews.jsonl"], ["photo.jpg"]),
        ("sound-classification", ["clip.wav", "labels.csv"], ["photo.jpg"]),
    ],
)
def test_the_add_files_dialog_offers_what_the_project_reads(ws, make_page, monkeypatch, task, shown, hidden):
    """A tags or text project's CSV, a detector's annotation files and a sound project's clips are
    listed by the file dialog's filter, not hidden behind "Images and zip archives"."""
    import fnmatch

    from PySide6.QtWidgets import QFileDialog

    ws.create_project("p", task)
    page = make_page("p")
    asked = {}
    monkeypatch.setattr(
        QFileDialog,
        "getOpenFileNames",
        lambda parent, title, folder, filters: asked.update(f=filters) or ([], ""),
    )
    page.choose_files()
    patterns = asked["f"].split(";;")[0].split("(")[1].rstrip(")").split()

    def listed(name):
        return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)

    assert all(listed(name) for name in shown), (patterns, shown)
    assert not any(listed(name) for name in hidden), (patterns, hidden)


def test_many_small_classes_make_one_short_sentence():
    from modeldesk.ui.wording import small_class_warning

    labels = {str(d): 6 for d in range(10)} | {"ok": 12}
    text = small_class_warning(labels, 10)
    # one sentence for ten small classes, not one a class (it filled the 760 px card)
    assert (
        text
        == "Add more photos of 0, 1, 2 and 7 more classes: 6 each are too few to learn from. Aim for at least 10 each."
    )
    assert "2 to 6 each" in small_class_warning({"a": 2, "b": 6}, 10)

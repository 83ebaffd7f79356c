"""The whole flow through the widgets of the main window, and the UI thread's responsiveness.

New project -> import a folder -> label the rest with the keyboard -> train (the real trainer, in the
job queue's worker process) -> read the evaluation -> export -> serve -> predict over HTTP -> stop.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt

from modeldesk.ui.main_window import MainWindow
from modeldesk.ui.pages.data_page import DataPage

COLORS = {"red": (200, 40, 40), "green": (40, 170, 60), "blue": (40, 60, 200)}


def write_photos(
    folder: Path, per_class: int, unlabeled_per_class: int = 0, size: int = 64, seed: int = 0
) -> Path:
    """``folder/<colour>/*.png`` plus ``folder/loose_<colour>_<i>.png`` files without a class folder."""
    rng = np.random.default_rng(seed)
    for label, rgb in COLORS.items():
        (folder / label).mkdir(parents=True, exist_ok=True)
        for i in range(per_class + unlabeled_per_class):
            pixels = np.clip(np.array(rgb) + rng.normal(0, 25, (size, size, 3)), 0, 255).astype(np.uint8)
            target = (
                folder / label / f"{label}_{i}.png" if i < per_class else folder / f"loose_{label}_{i}.png"
            )
            Image.fromarray(pixels).save(target)
    return folder


def make_window(show_widget, ws) -> MainWindow:
    return show_widget(MainWindow(ws))


def new_project_with_folder(qtbot, window, name: str, folder: Path) -> None:
    dialog = window.new_project()
    qtbot.keyClicks(dialog.name_edit, name)
    dialog.set_task("image-classification")
    dialog.source_folder.setChecked(True)
    dialog.set_paths([folder])
    dialog.accept()
    data = window.page("data")
    qtbot.waitUntil(lambda: data.last_report is not None, timeout=60_000)


@pytest.fixture
def cleanup_jobs(ws):
    yield
    ws.jobs.close(cancel_running=True, timeout=30)


def test_whole_flow_through_the_window(qtbot, ws, show_widget, tmp_path, cleanup_jobs):
    window = make_window(show_widget, ws)
    new_project_with_folder(
        qtbot, window, "Colours", write_photos(tmp_path / "photos", 6, unlabeled_per_class=2)
    )
    assert ws.stats("Colours")["labeled"] == 18 and ws.stats("Colours")["samples"] == 24

    # Label the 6 loose photos with the number keys, unlabeled first.
    window.show_page("label")
    label = window.page("label")
    label.order_box.setCurrentIndex(label.order_box.findData("unlabeled"))
    window.activateWindow()
    for _ in range(6):
        qtbot.waitUntil(lambda: label.sample is not None and not label.sample.labels, timeout=10_000)
        colour = Path(label.sample.source).name.split("_")[1]
        label.setFocus()
        qtbot.keyClick(label, str(label.labels.index(colour) + 1))
    qtbot.waitUntil(lambda: ws.stats("Colours")["labeled"] == 24, timeout=10_000)
    assert ws.stats("Colours")["labels"] == {"blue": 8, "green": 8, "red": 8}

    # Train with the fast recipe.
    window.show_page("train")
    train = window.page("train")
    qtbot.waitUntil(lambda: train.loaded, timeout=20_000)
    train.select_template("image-classification/fast")
    with qtbot.waitSignal(train.model_trained, timeout=120_000) as trained:
        qtbot.mouseClick(train.start_button, Qt.LeftButton)
    model_id = trained.args[0]
    qtbot.waitUntil(lambda: window.sidebar.step_state("train")[0] == "done", timeout=10_000)

    # The evaluation, reached from the result banner.
    qtbot.mouseClick(train.result_button, Qt.LeftButton)
    assert window.current_page == "evaluate"
    evaluate = window.page("evaluate")
    qtbot.waitUntil(lambda: evaluate.report is not None, timeout=10_000)
    assert evaluate.model_id == model_id
    assert evaluate.hero.text().startswith("Right ")
    assert evaluate.matrix.labels == ["blue", "green", "red"]

    # Export, then serve and predict over HTTP.
    window.show_page("deploy")
    deploy = window.page("deploy")
    qtbot.waitUntil(lambda: deploy.loaded and deploy.model_id == model_id, timeout=10_000)
    deploy.out_dir.setText(str(tmp_path / "exports"))
    qtbot.mouseClick(deploy.export_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: deploy.last_export is not None, timeout=60_000)
    assert (tmp_path / "exports" / "Colours-model" / "model.onnx").is_file()
    with qtbot.waitSignal(deploy.status_changed, timeout=30_000):
        qtbot.mouseClick(deploy.service_button, Qt.LeftButton)
    photo = next((tmp_path / "photos" / "red").glob("*.png"))
    with open(photo, "rb") as stream:
        answer = httpx.post(
            deploy.service.url + "v1/predict", files={"file": (photo.name, stream, "image/png")}, timeout=30
        )
    assert answer.status_code == 200, answer.text
    assert "red" in answer.text
    url = deploy.service.url
    with qtbot.waitSignal(deploy.status_changed, timeout=30_000):
        qtbot.mouseClick(deploy.service_button, Qt.LeftButton)
    with pytest.raises(httpx.TransportError):
        httpx.get(url + "healthz", timeout=2)


@pytest.mark.slow
def test_ui_thread_stays_responsive_while_training_and_importing(
    qtbot, ws, show_widget, tmp_path, latency_probe, ui_thread_calls, cleanup_jobs
):
    window = make_window(show_widget, ws)
    new_project_with_folder(qtbot, window, "Colours", write_photos(tmp_path / "photos", 8))
    big = tmp_path / "big"
    big.mkdir()
    rng = np.random.default_rng(1)
    for i in range(2000):
        Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)).save(big / f"img_{i:04d}.png")

    # The 2,000 images go to another project (in a second Data page of the same UI thread), so
    # the training job does not also score them all at its end.
    ws.create_project("Big", "image-classification")
    data = show_widget(DataPage(ws))
    data.set_project("Big")
    window.show_page("train")
    train = window.page("train")
    qtbot.waitUntil(lambda: train.loaded, timeout=20_000)
    with latency_probe, ui_thread_calls(ws) as calls:
        with qtbot.waitSignal(train.model_trained, timeout=300_000):
            qtbot.mouseClick(train.start_button, Qt.LeftButton)
            qtbot.waitUntil(lambda: train.job_id is not None, timeout=10_000)
            data.import_paths([big])
            qtbot.waitUntil(lambda: data.last_report is not None, timeout=180_000)
        qtbot.waitUntil(lambda: not train.tasks.busy and data.import_task is None, timeout=30_000)
    assert ws.job(train.job_id)["state"] == "done"
    assert data.last_report["added"] == 2000
    assert latency_probe.ticks > 50
    print(
        f"longest event-loop gaps (ms wall): {sorted(round(g) for g in latency_probe.gaps_ms)[-5:]}, "
        f"most UI-thread CPU in one gap: {latency_probe.max_cpu_ms:.0f} ms"
    )
    # Measures a busy machine cannot fail: the UI thread never waited on the workspace (every
    # Workspace call ran in a worker thread), and never computed for long between two event-loop turns
    # (CPU time of the UI thread, which other processes do not stretch).
    assert calls.calls == [], f"Workspace calls on the UI thread: {calls.calls}"
    assert latency_probe.max_cpu_ms < 100, (
        f"the UI thread computed {latency_probe.max_cpu_ms:.0f} ms in one go"
    )

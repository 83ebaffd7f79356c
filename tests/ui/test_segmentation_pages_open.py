"""A segmentation project opens on every page without an error."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PAGES = ("data", "label", "train", "evaluate", "deploy")


def _data():
    spec = importlib.util.spec_from_file_location(
        "segmentation_data", Path(__file__).parents[1] / "trainers" / "segmentation_data.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def segmentation_project(ws, tmp_path):
    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.trainers.segmentation.features import SegNeck
    from modeldesk.trainers.segmentation.templates import SegmentationTemplate
    from modeldesk.trainers.tasks import get_trainer

    ws.create_project("streets", "segmentation")
    ws.import_data("streets", _data().write_mask_folder(tmp_path / "data", n=6))
    template = SegmentationTemplate(
        name="segmentation/fast",
        task="segmentation",
        description="",
        backbone="efficientnet-lite0",
        neck=SegNeck(size=64, pyramid=(1,)),
        hidden=8,
        rows=500,
        epochs=2,
    )
    samples = labeled_samples(ws.store, ws.project("streets"))
    result = get_trainer("segmentation").train(
        samples, template, tmp_path / "model", ws.paths.cache / "features"
    )
    ws.store.add_model(ws.project("streets"), "m1", result.artifact_dir, template.name, result.metrics)
    return "streets"


def test_every_page_opens_a_segmentation_project(qtbot, ws, show_widget, segmentation_project):
    from PySide6.QtWidgets import QApplication

    from modeldesk.ui.main_window import MainWindow

    window = show_widget(MainWindow(ws))
    window.set_project(segmentation_project)
    for key in PAGES:
        window.show_page(key)
        page = window.page(key)
        for _ in range(20):
            QApplication.processEvents()
        qtbot.waitUntil(
            lambda page=page: not getattr(page, "tasks", None) or not page.tasks.busy, timeout=60000
        )
        assert page.isVisible()

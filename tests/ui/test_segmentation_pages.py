"""A segmentation model's pages: every page opens a segmentation project; Label offers the model's mask for a new photo (Enter takes it); Evaluate shows IoU per class and the test photos' true and predicted
masks side by side, worst first, a click opening the photo on the Label step; Deploy's try-it draws
the mask over the photo and says how much each class covers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from modeldesk.app.mask_views import prediction_mask
from modeldesk.app.workspace import Workspace
from modeldesk.ui.pages.deploy import DeployPage
from modeldesk.ui.pages.deploy.try_it import area_words
from modeldesk.ui.pages.evaluate_page import EvaluatePage
from modeldesk.ui.pages.segmentation_evaluation import most_mixed, segmentation_words

CLASSES = ("background", "disk")


def _scenes(root, n=10, seed=0):
    """Photos of a yellow disk on a grey ground, with their masks (0 ground, 1 disk), as a mask folder."""
    rng = np.random.default_rng(seed)
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    for i in range(n):
        photo = rng.normal(110, 12, (72, 96, 3)).clip(0, 255)
        yy, xx = np.mgrid[:72, :96]
        disk = np.hypot(yy - rng.integers(20, 52), xx - rng.integers(20, 76)) <= rng.integers(9, 16)
        photo[disk] = (235, 220, 60)
        Image.fromarray(photo.astype(np.uint8)).save(root / "images" / f"scene_{i:02d}.png")
        Image.fromarray(disk.astype(np.uint8), mode="L").save(root / "masks" / f"scene_{i:02d}.png")
    (root / "classes.txt").write_text("0 background\n1 disk\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(workspace, model id, a probe photo) of a tiny segmentation model trained on ten scenes."""
    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.trainers.segmentation.features import SegNeck
    from modeldesk.trainers.segmentation.templates import SegmentationTemplate
    from modeldesk.trainers.tasks import get_trainer

    tiny = SegmentationTemplate(
        name="segmentation/tiny",
        task="segmentation",
        description="test",
        backbone="efficientnet-lite0",
        neck=SegNeck(size=128, stride=8, pyramid=(1,)),
        hidden=16,
        rows=3000,
        epochs=8,
        time_budget_s=60,
    )
    root = tmp_path_factory.mktemp("segpages")
    ws = Workspace(root / "ws", cleanup=False)
    ws.create_project("scenes", "segmentation")
    ws.import_data("scenes", _scenes(root / "data"))
    samples = labeled_samples(ws.store, ws.project("scenes"))
    result = get_trainer("segmentation").train(samples, tiny, root / "model", ws.paths.cache / "features")
    ws.store.add_model(ws.project("scenes"), "tiny", result.artifact_dir, tiny.name, result.metrics)
    probe = next((root / "data" / "images").glob("*.png"))
    yield ws, "tiny", probe
    ws.close()


def _open(qtbot, cls, ws):
    page = cls(ws)
    page.resize(1200, 900)
    page.show()
    page.set_project("scenes")
    return page


def _close(qtbot, page):
    qtbot.waitUntil(lambda: not page.tasks.busy, timeout=60_000)
    page.shutdown()
    page.close()
    page.deleteLater()


def test_words_for_a_segmentation_report():
    report = {
        "miou": 0.62,
        "pixel_accuracy": 0.91,
        "miou_interval": [0.55, 0.7],
        "n": 12,
        "labels": ["road", "sign"],
        "per_class": {"road": 0.9, "sign": 0.34},
        "confusion": [[900, 20], [30, 50]],
    }
    hero, detail, advice = segmentation_words(report)
    assert "62%" in hero and "mean IoU" in hero
    assert "91%" in detail and "55% to 70%" in detail and "12 photos" in detail
    assert "<b>sign</b> least well (IoU 34%)" in advice
    assert most_mixed(report) == ("sign", "road", 30 / 80)
    assert area_words({"road": 0.7, "sign": 0.25, "sky": 0.005}).startswith("road 70%, sign 25%")


def test_evaluate_shows_masks_side_by_side_worst_first_and_a_click_opens_the_photo(qtbot, trained):
    ws, model_id, _ = trained
    page = _open(qtbot, EvaluatePage, ws)
    try:
        card = page.segmentation
        qtbot.waitUntil(lambda: page.report is not None and card.frame.isVisible(), timeout=30_000)
        assert not page.middle.isVisible() and not page.mistakes_card.frame.isVisible()
        assert "mean IoU" in page.hero.text()
        photos = page.report["photos"]
        assert card.photos.count() == len(photos) > 0
        assert [p["miou"] for p in photos] == sorted(p["miou"] for p in photos)  # worst first
        qtbot.waitUntil(
            lambda: all(card.photos.item(i).data(Qt.UserRole) for i in range(card.photos.count()))
        )
        first = card.photos.item(0)
        assert not first.icon().isNull()
        assert first.text().startswith("IoU ") and "scene_" in first.text()  # the photo's own name
        icon = first.icon().pixmap(card.photos.iconSize()).toImage()
        assert icon.width() > 1.8 * icon.height()  # two pictures side by side
        expected = ws.sample_ids_for_keys("scenes", [photos[0]["key"]])[photos[0]["key"]]
        with qtbot.waitSignal(page.relabel_requested) as opened:
            card._clicked(first)
        assert opened.args == [expected]
    finally:
        _close(qtbot, page)


def test_try_it_draws_the_mask_over_the_photo(qtbot, trained):
    ws, model_id, probe = trained
    page = _open(qtbot, DeployPage, ws)
    try:
        qtbot.waitUntil(lambda: page.loaded, timeout=10_000)
        page.try_file(str(probe))
        qtbot.waitUntil(lambda: page.last_prediction is not None, timeout=30_000)
        prediction = page.last_prediction
        overlay = QImage(prediction["overlay"])
        assert (overlay.width(), overlay.height()) == (96, 72)
        assert "of the photo" in page.answer.text()
        top = max(prediction["areas"], key=prediction["areas"].get)
        assert page.answer.text().startswith(top)
        disk = prediction_mask(prediction) == CLASSES.index("disk")
        photo = QImage(str(probe))
        y, x = np.argwhere(disk)[len(np.argwhere(disk)) // 2]
        assert overlay.pixelColor(int(x), int(y)) != photo.pixelColor(int(x), int(y))  # drawn over the disk
        # the bars are the overlay's legend: each class's bar in its colour on the photo
        from modeldesk.app.mask_views import model_colors

        expected = dict(zip(CLASSES, model_colors(list(CLASSES))))
        assert {k: v.name() for k, v in page.scores.row_colors.items()} == expected
    finally:
        _close(qtbot, page)


def test_put_to_work_asks_how_much_of_the_picture_a_class_covers(qtbot, trained):
    from modeldesk.app.edge_launch import model_facts

    ws, model_id, _probe = trained
    assert model_facts(ws, model_id)["area"] is True  # the edge rule's kind "area", not "label"
    page = _open(qtbot, DeployPage, ws)
    try:
        card = page.put_to_work
        qtbot.waitUntil(lambda: card.label.count() == len(CLASSES), timeout=10_000)
        assert card.area and card.at_least.text() == "covers at least"
        assert card.score_text.text() == f"{card.score.value()}%" and card.score.value() < 50
    finally:
        _close(qtbot, page)


def test_the_label_page_offers_the_models_mask_and_enter_takes_it(qtbot, trained, tmp_path):
    from modeldesk.ui.pages.label import LabelPage

    ws, model_id, probe = trained
    new = tmp_path / "new"
    new.mkdir()
    Image.open(probe).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(new / "fresh.png")
    ws.import_data("scenes", new, format="flat")
    (sample_id,) = ws.sample_ids("scenes", unlabeled=True)
    page = _open(qtbot, LabelPage, ws)
    try:
        qtbot.waitUntil(lambda: page.sample is not None and page.sample.id == sample_id, timeout=10_000)
        annotator = page.annotator
        qtbot.waitUntil(lambda: annotator._proposed is not None and page.is_idle(), timeout=30_000)
        assert page.banner.isVisible() and "Press Enter" in page.suggestion_label.text()
        proposed = annotator._proposed[1]
        assert annotator.proposal.isVisible() and annotator.proposal.mask is proposed
        assert ws.labels("scenes") == list(CLASSES) and (proposed == 1).sum() > 50  # it sees the disk
        assert (annotator.editor.mask == 255).all()  # only offered, nothing painted yet
        page.accept_suggestion()
        qtbot.waitUntil(page.is_idle, timeout=10_000)
        assert np.array_equal(ws.sample_mask(sample_id), proposed)
        assert np.array_equal(annotator.editor.mask, proposed) and not page.banner.isVisible()
        assert annotator.undo() and (annotator.editor.mask == 255).all()  # taking it can be undone
    finally:
        _close(qtbot, page)


# -- every page opens (from the segment branch) -----------------------------------------------------

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


def test_one_test_photo_gets_no_interval_and_is_said_to_be_rough():
    """ "on 1 photos … (95% interval 51% to 51%)" read as a precise figure."""
    _, detail, _ = segmentation_words(
        {"miou": 0.51, "pixel_accuracy": 0.91, "miou_interval": [0.51, 0.51], "n": 1, "per_class": {}}
    )
    assert "on 1 photo it never saw" in detail and "interval" not in detail
    assert "rough" in detail

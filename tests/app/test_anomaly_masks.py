"""Pixel AUROC of an anomaly model from the defect masks stored in its project equals the figure
``modeldesk evaluate`` gives on the same inspection folder."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from modeldesk.app.workspace import Workspace


def _folder(root, n_good=14, n_defect=5, seed=2):
    """Striped grey photos in good/; the same with a dark blob in defect/blob/, its mask in masks/."""
    rng = np.random.default_rng(seed)
    for sub in ("good", "defect/blob", "masks"):
        (root / sub).mkdir(parents=True)

    def texture():
        width = int(rng.integers(80, 110))
        x = np.mgrid[0:72, 0:width][1]
        base = 128 + 40 * np.sin(x / 3.0 + rng.uniform(0, 6)) + rng.normal(0, 6, (72, width))
        return np.clip(base, 0, 255).astype(np.uint8)

    for i in range(n_good):
        Image.fromarray(texture(), "L").save(root / "good" / f"good_{i}.png")
    for i in range(n_defect):
        pixels = texture()
        h, w = pixels.shape
        cy, cx = rng.integers(10, h - 10), rng.integers(10, w - 10)
        y, x = np.mgrid[0:h, 0:w]
        mask = (y - cy) ** 2 + (x - cx) ** 2 <= 81
        pixels[mask] = 20
        Image.fromarray(pixels, "L").save(root / "defect" / "blob" / f"blob_{i}.png")
        Image.fromarray(mask.astype(np.uint8) * 255, "L").save(root / "masks" / f"blob_{i}.png")
    return root


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("anomaly-masks")
    ws = Workspace(tmp / "ws", cleanup=False)
    root = _folder(tmp / "parts")
    ws.store.create_project("tiles", "anomaly-detection", kind="image", target="label")
    ws.import_data("tiles", root)
    model = ws.train("tiles", "anomaly-detection/fast")["model"]
    yield ws, model, root
    ws.close()


def test_pixel_auroc_from_stored_masks_equals_the_folder_evaluate(trained):
    ws, model, root = trained
    in_app = ws.stored_pixel_auroc(model)
    outside = ws.evaluate(model, root)
    assert in_app is not None and in_app["masks"] == 5 and in_app["photos"] == 19
    assert outside["pixel_auroc"] is not None
    assert in_app["pixel_auroc"] == pytest.approx(outside["pixel_auroc"], abs=1e-9)


def test_training_saves_the_pixel_auroc_of_its_test_photos(trained):
    """The report the Evaluate page reads carries the figure, so the page need not work it out again."""
    ws, model, _ = trained
    report = ws.model_report(model)
    keys = [m["key"] for m in report["images"]]
    again = ws.stored_pixel_auroc(model, keys)
    assert report["pixel_auroc"] is not None and report["masks"] == 5
    assert report["pixel_auroc"] == pytest.approx(again["pixel_auroc"], abs=1e-9)


def test_a_painted_mask_changes_the_figure_and_without_masks_there_is_none(trained):
    ws, model, _ = trained
    ids = ws.sample_ids("tiles")
    blobs = [i for i in ids if ws.sample(i).labels == ["blob"]]
    before = ws.stored_pixel_auroc(model)["pixel_auroc"]
    first = ws.sample(blobs[0])
    wrong = np.zeros((first.height, first.width), bool)
    wrong[:5, :5] = True  # a corner with no blob: the heatmap does not point there
    originals = {i: ws.defect_mask(i) for i in blobs}
    ws.set_defect_mask(first.id, wrong)
    try:
        assert ws.stored_pixel_auroc(model)["pixel_auroc"] < before
        for sample_id in blobs:
            ws.set_defect_mask(sample_id, None)
        assert ws.stored_pixel_auroc(model) is None  # no mask: no pixel figure at all
    finally:
        for sample_id, mask in originals.items():
            ws.set_defect_mask(sample_id, mask)

"""Defect masks of an anomaly project: imported from masks/, stored, exported back exactly."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from modeldesk.datasets import Store, export_project, import_path
from modeldesk.datasets.defect_masks import attach_defect_masks, read_defect_mask, write_defect_mask
from modeldesk.datasets.items import ImportReport
from modeldesk.datasets.masks import MaskError


def _inspection(root, *, mask_size=None):
    """good/g0..g2, defect/crack/c0 + c1, defect/d0 (plain defect) and masks for c0, d0 (and g0, all black)."""
    rng = np.random.default_rng(3)
    shapes = {"good/g0.png": (40, 30), "good/g1.png": (44, 30), "good/g2.png": (40, 32)}
    shapes |= {"defect/crack/c0.png": (50, 36), "defect/crack/c1.png": (40, 30), "defect/d0.png": (38, 38)}
    masks = {}
    for rel, (w, h) in shapes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (h, w), dtype=np.uint8), "L").save(root / rel)
    (root / "masks").mkdir()
    for stem, (w, h), box in (("c0", (50, 36), (5, 3, 20, 9)), ("d0", (38, 38), (30, 30, 38, 38))):
        mask = np.zeros((h, w), bool)
        mask[box[1] : box[3], box[0] : box[2]] = True
        masks[stem] = mask
        size = mask_size or (w, h)
        Image.fromarray(mask.astype(np.uint8) * 255, "L").resize(size, Image.NEAREST).save(
            root / "masks" / f"{stem}.png"
        )
    Image.new("L", (40, 30), 0).save(root / "masks" / "g0.png")
    return root, masks


def _project(tmp_path, name="parts"):
    store = Store(tmp_path / f"ws-{name}")
    return store, store.create_project(name, "anomaly-detection", kind="image", target="label")


def _by_stem(store, project):
    return {s.source.rsplit("/", 1)[-1].split(".")[0]: s for s in store.samples(project)}


def test_import_stores_each_defect_mask_and_keeps_the_labels(tmp_path):
    root, masks = _inspection(tmp_path / "in")
    store, project = _project(tmp_path)
    report = import_path(store, project, root)
    assert report.added == 6 and not report.failed
    samples = _by_stem(store, project)
    for stem, mask in masks.items():
        stored = read_defect_mask(store, samples[stem])
        assert stored is not None and stored.dtype == bool
        assert np.array_equal(stored, mask), stem
    assert read_defect_mask(store, samples["c1"]) is None  # no mask file: none stored
    assert read_defect_mask(store, samples["g0"]) is None  # all black: nothing to store
    assert samples["c0"].labels == ["crack"] and samples["d0"].labels == ["defect"]  # labels untouched
    assert report.labels == {"good": 3, "crack": 2, "defect": 1}


def test_a_mask_of_another_size_fails_by_name_and_its_photo_still_imports(tmp_path):
    root, _ = _inspection(tmp_path / "in", mask_size=(20, 20))
    store, project = _project(tmp_path)
    report = import_path(store, project, root)
    assert report.added == 6
    failed = {entry["file"].rsplit("/", 1)[-1]: entry["reason"] for entry in report.failed}
    assert set(failed) == {"c0.png", "d0.png"}
    assert "c0.png is 20x20 pixels but its photo is 50x36" in failed["c0.png"]
    assert "defect/crack/c0.png" in failed["c0.png"]
    assert all(read_defect_mask(store, s) is None for s in store.samples(project))


def test_stopping_the_mask_step_stores_no_further_mask(tmp_path):
    root, _ = _inspection(tmp_path / "in")
    store, project = _project(tmp_path)
    import_path(store, project, root / "good")  # photos in, no masks/ beside them
    import_path(store, project, root / "defect")
    report = ImportReport(format="inspection")
    assert attach_defect_masks(store, project, root, report, should_stop=lambda: True) == 0
    assert all(read_defect_mask(store, s) is None for s in store.samples(project))


def test_inspection_export_writes_masks_back_and_reimports_exactly(tmp_path):
    root, masks = _inspection(tmp_path / "in")
    store, project = _project(tmp_path)
    import_path(store, project, root)
    painted = _by_stem(store, project)["c1"]
    brush = np.zeros((30, 40), bool)
    brush[10:20, 3:7] = True
    write_defect_mask(store, painted.id, brush)  # painted in the app, not imported
    result = export_project(store, project, tmp_path / "out", "inspection")
    out = tmp_path / "out"
    assert result["samples"] == 6 and result["files"] == 9
    assert sorted(p.name for p in (out / "masks").iterdir()) == ["c0.png", "c1.png", "d0.png"]
    assert (out / "defect" / "crack" / "c0.png").is_file() and (out / "defect" / "d0.png").is_file()
    assert len(list((out / "good").iterdir())) == 3
    again_store, again = _project(tmp_path, "again")
    assert import_path(again_store, again, out).labels == {"good": 3, "crack": 2, "defect": 1}
    back = _by_stem(again_store, again)
    for stem, mask in {**masks, "c1": brush}.items():
        assert np.array_equal(read_defect_mask(again_store, back[stem]), mask), stem
    for stem in ("g0", "g1", "g2"):
        assert read_defect_mask(again_store, back[stem]) is None


def test_inspection_export_is_refused_for_a_project_without_single_labels(tmp_path):
    store = Store(tmp_path / "ws")
    project = store.create_project("tags", "image-multilabel", kind="image", target="tags")
    with pytest.raises(ValueError, match="inspection export"):
        export_project(store, project, tmp_path / "out", "inspection")


def test_a_defect_mask_of_the_wrong_shape_is_refused(tmp_path):
    root, _ = _inspection(tmp_path / "in")
    store, project = _project(tmp_path)
    import_path(store, project, root)
    sample = _by_stem(store, project)["c1"]
    with pytest.raises(MaskError, match="the photo defect/crack/c1.png is 40x30"):
        write_defect_mask(store, sample.id, np.ones((10, 10), bool))
    assert write_defect_mask(store, sample.id, np.zeros((30, 40), bool)) is False
    assert read_defect_mask(store, sample) is None

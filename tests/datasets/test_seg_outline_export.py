"""Segmentation projects exported as LabelMe and YOLO-seg polygons import back to the same masks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from modeldesk.app.workspace import Workspace
from modeldesk.datasets.masks import VOID

CLASSES = ("background", "leaf", "rust", "vein")


def _masks() -> list[np.ndarray]:
    """Masks with what outlines make hard: holes, a region inside a hole, regions touching at a corner,
    regions on the photo's edge, one-pixel regions and not labeled pixels (a ring and a hole's inside)."""
    rng = np.random.default_rng(3)
    first = np.zeros((30, 40), np.uint8)
    first[5:25, 5:35] = 1  # a leaf with a rust hole, and a leaf again inside the rust
    first[10:20, 10:30] = 2
    first[13:17, 15:20] = 1
    first[14, 17] = 0  # background inside all of it
    first[0:3, 0:3] = 3  # a vein on the corner, touching a second one at a corner only
    first[3:5, 3:5] = 3
    first[26, 36] = 2
    first[22:24, 30:33] = VOID
    second = rng.integers(0, 4, (17, 23)).astype(np.uint8)  # noise: every kind of pinch
    second[rng.random(second.shape) < 0.08] = VOID
    third = np.ones((8, 8), np.uint8)  # its mask is removed: a photo without one
    return [first, second, third]


def _project(tmp_path):
    root = tmp_path / "data"
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    for i, mask in enumerate(_masks()):
        rgb = np.stack([mask * 40] * 3, axis=-1).astype(np.uint8)
        Image.fromarray(rgb).save(root / "images" / f"p{i}.png")
        Image.fromarray(mask, mode="L").save(root / "masks" / f"p{i}.png")
    (root / "classes.txt").write_text("".join(f"{i} {n}\n" for i, n in enumerate(CLASSES)), encoding="utf-8")
    ws = Workspace(tmp_path / "ws", cleanup=False)
    ws.create_project("leaves", "segmentation")
    assert ws.import_data("leaves", root)["added"] == 3
    return ws


@pytest.mark.parametrize("format", ["labelme", "yolo"])
def test_polygon_exports_import_back_to_the_same_masks(tmp_path, format):
    """Tolerance: 0 labeled pixels differ; not labeled pixels come back as background (neither format
    has a way to say "not labeled"), and a photo without a mask comes back without one."""
    ws = _project(tmp_path)
    try:
        (third,) = [i for i in ws.sample_ids("leaves") if "p2" in ws.sample(i).source]
        unlabeled = ws.sample(third).content_hash
        ws.set_sample_mask(third, None)
        want = {ws.sample(i).content_hash: ws.sample_mask(i) for i in ws.sample_ids("leaves")}
        exported = ws.export_data("leaves", tmp_path / "out", format)
        assert exported["samples"] == 3 and not exported["skipped"]
        ws.create_project("back", "segmentation")
        report = ws.import_data("back", tmp_path / "out")
        assert report["format"] == format and report["added"] == 3 and not report["failed"], report
        assert set(ws.labels("back")) <= set(CLASSES)
        back = ws.labels("back")
        compared = 0
        for sample_id in ws.sample_ids("back"):
            content = ws.sample(sample_id).content_hash
            got = ws.sample_mask(sample_id)
            if content == unlabeled:
                assert got is None
                continue
            names = np.array([*back, *["?"] * (256 - len(back))], object)
            expected = np.array([*CLASSES, *["?"] * (256 - len(CLASSES))], object)[want[content]]
            expected[want[content] == VOID] = "background"
            assert (names[got] == expected).all(), f"{(names[got] != expected).sum()} pixels differ"
            compared += 1
        assert compared == 2
    finally:
        ws.close()


def test_yolo_seg_lines_are_normalised_polygons(tmp_path):
    ws = _project(tmp_path)
    try:
        ws.export_data("leaves", tmp_path / "out", "yolo")
        names = (tmp_path / "out" / "classes.txt").read_text(encoding="utf-8").split()
        assert names == list(CLASSES)
        files = sorted((tmp_path / "out" / "labels").rglob("p0.txt"))
        lines = [line.split() for line in files[0].read_text(encoding="utf-8").splitlines()]
        values = [float(v) for line in lines for v in line[1:]]
        assert all(len(line) >= 7 and len(line) % 2 == 1 for line in lines)
        assert min(values) >= 0 and max(values) <= 1
        # the rust ring and the leaf inside it: the leaf comes after the rust that surrounds it
        labels = [names[int(line[0])] for line in lines]
        assert labels.index("leaf") < labels.index("rust") < len(labels) - 1 - labels[::-1].index("leaf")
    finally:
        ws.close()


def test_labelme_export_writes_polygons_beside_each_photo(tmp_path):
    ws = _project(tmp_path)
    try:
        ws.export_data("leaves", tmp_path / "out", "labelme")
        document = json.loads(next((tmp_path / "out").rglob("p0.json")).read_text(encoding="utf-8"))
        assert {s["shape_type"] for s in document["shapes"]} == {"polygon"}
        assert document["imageWidth"] == 40 and document["imageHeight"] == 30
        # the outer leaf is the 20 x 30 rectangle: its 4 corners, nothing more
        leaf = document["shapes"][0]
        assert leaf["label"] == "leaf" and sorted(map(tuple, leaf["points"])) == [
            (5.0, 5.0),
            (5.0, 25.0),
            (35.0, 5.0),
            (35.0, 25.0),
        ]
    finally:
        ws.close()

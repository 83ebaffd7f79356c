"""Label files with NaN, infinite or absurdly large coordinates: the file with the bad box fails alone
(its media file is not kept), every valid file of the same import is added and reported.

(A finite but huge number, such as 300 nines in a YOLO file, lies outside the image: its box is dropped
with a warning, as before.)"""

from __future__ import annotations

import json

import pytest

from modeldesk.datasets import import_path


def _yolo(root, gen, bad_line):
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    (root / "classes.txt").write_text("cat\ndog\n")
    for i in range(4):
        (root / "images" / f"ok{i}.jpg").write_bytes(gen(i))
        (root / "labels" / f"ok{i}.txt").write_text("0 0.5 0.5 0.4 0.4\n1 0.3 0.3 0.2 0.2\n")
    (root / "images" / "bad.jpg").write_bytes(gen(99))
    (root / "labels" / "bad.txt").write_text(f"0 0.5 0.5 0.4 0.4\n{bad_line}\n")


@pytest.mark.parametrize(
    "bad_line", ["0 nan 0.5 0.2 0.2", "1 0.5 inf 0.2 0.2", "0 0.5 0.5 -inf 0.2", "1 0.5 0.5 0.2 1e999"]
)
def test_yolo_non_finite_box_fails_its_file_only(bad_line, tmp_path, gen, store, project, no_orphans):
    _yolo(tmp_path / "yolo", gen, bad_line)
    report = import_path(store, project("det", "object-detection"), tmp_path / "yolo")
    assert report.added == 4 and report.boxes == 8
    (failure,) = report.failed
    assert failure["file"] == "images/bad.jpg" and "not a finite number" in failure["reason"]
    assert store.stats("det")["samples"] == 4
    no_orphans()


@pytest.mark.parametrize(
    "bbox",
    [
        "[NaN, 1, 5, 5]",
        "[1, 1, Infinity, 5]",
        "[1, 1, 5, " + "9" * 400 + "]",
        "[-" + "9" * 320 + ", 1, 5, 5]",
    ],
)
def test_coco_non_finite_bbox_fails_its_image_only(bbox, tmp_path, gen, store, project, no_orphans):
    root = tmp_path / "coco"
    (root / "images").mkdir(parents=True)
    images, annotations = [], []
    for i in range(5):
        (root / "images" / f"{i}.jpg").write_bytes(gen(i))
        images.append({"id": i + 1, "file_name": f"{i}.jpg", "width": 40, "height": 30})
        annotations.append(
            {"id": i + 1, "image_id": i + 1, "category_id": 1, "bbox": "BBOX" if i == 2 else [2, 2, 10, 10]}
        )
    text = json.dumps(
        {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "cat"}]}
    ).replace('"BBOX"', bbox)
    (root / "annotations.json").write_text(text)
    report = import_path(store, project("det", "object-detection"), root)
    assert report.added == 4 and report.boxes == 4
    (failure,) = report.failed
    assert failure["file"].endswith("2.jpg") and "not a finite number" in failure["reason"]
    no_orphans()


def test_voc_nan_box_fails_its_file_only(tmp_path, gen, store, project, no_orphans):
    root = tmp_path / "voc"
    root.mkdir()
    for i, xmin in enumerate(["1", "2", "nan", "3"]):
        (root / f"{i}.jpg").write_bytes(gen(i))
        (root / f"{i}.xml").write_text(
            f"<annotation><filename>{i}.jpg</filename><object><name>cat</name><bndbox><xmin>{xmin}</xmin>"
            "<ymin>1</ymin><xmax>20</xmax><ymax>20</ymax></bndbox></object></annotation>"
        )
    report = import_path(store, project("det", "object-detection"), root)
    assert report.added == 3
    (failure,) = report.failed
    assert failure["file"] == "2.jpg" and "not a finite number" in failure["reason"]
    no_orphans()

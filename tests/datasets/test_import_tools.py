"""Exports of other labeling tools, written here by each tool's documented schema: CVAT for images 1.1,
LabelMe, Label Studio (JSON and JSON-MIN), Create ML, Roboflow multiclass CSV, ImageNet's nested
folders. Each is detected on its own; a file almost in the format gets a message saying what is off."""

import json

import pytest

from modeldesk.datasets import detect_format, import_path


def _project(store, target="boxes", kind="image"):
    task = {"boxes": "object-detection", "tags": "image-multilabel", "label": "image-classification"}[target]
    if kind == "text":
        task = "text-classification"
    return store.create_project(f"p-{target}-{kind}", task, kind=kind, target=target)


CVAT = """<?xml version="1.0" encoding="utf-8"?>
<annotations>
  <version>1.1</version>
  <meta><task><name>t</name></task></meta>
  <image id="0" name="images/a.jpg" width="100" height="80" subset="Train">
    <box label="cat" occluded="0" source="manual" xtl="10.5" ytl="5" xbr="50" ybr="60" z_order="0"></box>
    <polygon label="dog" source="manual" occluded="0" points="60,10;90,10;75,70" z_order="0"></polygon>
    <tag label="indoor" source="manual"></tag>
  </image>
  <image id="1" name="images/b.jpg" width="100" height="80" subset="Validation">
    <tag label="outdoor" source="manual"></tag>
  </image>
</annotations>
"""


def test_cvat_for_images_boxes_tags_and_subsets(store, tmp_path, write, gen):
    root = tmp_path / "cvat"
    write(root / "annotations.xml", CVAT)
    write(root / "images" / "a.jpg", gen.jpeg(100, 80))
    write(root / "images" / "b.jpg", gen.jpeg(100, 80, color=(0, 0, 90)))
    assert detect_format(root) == "cvat"
    boxes = _project(store, "boxes")
    report = import_path(store, boxes, root)
    assert (report.format, report.added, report.boxes) == ("cvat", 2, 2)
    assert any("polygon" in w for w in report.warnings)
    by_source = {s.source: s for s in store.samples(boxes)}
    assert sorted((b.label, b.x0, b.y0, b.x1, b.y1) for b in by_source["images/a.jpg"].boxes) == [
        ("cat", 10.5, 5, 50, 60),
        ("dog", 60, 10, 90, 70),
    ]
    assert {s: x.split for s, x in by_source.items()} == {"images/a.jpg": "train", "images/b.jpg": "val"}
    tags = _project(store, "tags")
    import_path(store, tags, root)
    assert sorted(s.labels for s in store.samples(tags)) == [["indoor"], ["outdoor"]]


def test_cvat_file_with_an_unlabeled_box_or_a_dtd_says_what_is_wrong(store, tmp_path, write, gen):
    root = tmp_path / "cvat"
    write(root / "images" / "a.jpg", gen.jpeg(100, 80))
    write(root / "annotations.xml", CVAT.replace('label="cat" occluded', "occluded"))
    report = import_path(store, _project(store), root)
    assert any(
        "annotations.xml" in f["reason"] and "<box> without a label" in f["reason"] for f in report.failed
    )
    write(root / "annotations.xml", '<!DOCTYPE a [<!ENTITY x "y">]>' + CVAT.split("?>", 1)[1])
    report = import_path(store, _project(store, "tags"), root)
    assert any("DTD or entities" in f["reason"] for f in report.failed)


def _labelme(image_path, shapes, flags=None):
    return json.dumps(
        {
            "version": "5.4.1",
            "flags": flags or {},
            "shapes": shapes,
            "imagePath": image_path,
            "imageData": None,
            "imageHeight": 80,
            "imageWidth": 100,
        }
    )


def _shape(label, points, kind):
    return {
        "label": label,
        "points": points,
        "group_id": None,
        "description": "",
        "shape_type": kind,
        "flags": {},
    }


def test_labelme_rectangles_polygons_and_flags(store, tmp_path, write, gen):
    root = tmp_path / "lm"
    write(root / "a.jpg", gen.jpeg(100, 80))
    write(root / "b.jpg", gen.jpeg(100, 80, color=(0, 90, 0)))
    write(
        root / "a.json",
        _labelme(
            "a.jpg",
            [
                _shape("cat", [[50, 60], [10, 5]], "rectangle"),
                _shape("dog", [[60, 10], [90, 10], [75, 70]], "polygon"),
                _shape("edge", [[0, 0], [5, 5]], "line"),
            ],
            {"night": True, "blurry": False},
        ),
    )
    assert detect_format(root) == "labelme"
    project = _project(store)
    report = import_path(store, project, root)
    assert (report.format, report.added, report.boxes) == ("labelme", 2, 2)
    assert any("polygon" in w for w in report.warnings) and any("line" in w for w in report.warnings)
    a = next(s for s in store.samples(project) if s.source == "a.jpg")
    assert sorted((b.label, b.x0, b.y0, b.x1, b.y1) for b in a.boxes) == [
        ("cat", 10, 5, 50, 60),
        ("dog", 60, 10, 90, 70),
    ]
    tags = _project(store, "tags")
    import_path(store, tags, root)
    assert sorted(s.labels for s in store.samples(tags)) == [[], ["night"]]


def test_labelme_shape_without_points_names_the_file(store, tmp_path, write, gen):
    root = tmp_path / "lm"
    write(root / "a.jpg", gen.jpeg(100, 80))
    write(root / "a.json", _labelme("a.jpg", [{"label": "cat", "shape_type": "rectangle"}]))
    report = import_path(store, _project(store), root)
    (failure,) = report.failed
    assert failure["file"] == "a.json" and "LabelMe" in failure["reason"] and "points" in failure["reason"]


def test_label_studio_json_rectangles_in_percent_and_choices(store, tmp_path, write, gen):
    root = tmp_path / "ls"
    write(root / "8f3a2b1c-a.jpg", gen.jpeg(200, 100))
    task = {
        "id": 1,
        "data": {"image": "/data/upload/1/8f3a2b1c-a.jpg"},
        "annotations": [
            {
                "id": 1,
                "result": [
                    {
                        "id": "r1",
                        "type": "rectanglelabels",
                        "from_name": "label",
                        "to_name": "image",
                        "original_width": 200,
                        "original_height": 100,
                        "value": {
                            "x": 10,
                            "y": 20,
                            "width": 25,
                            "height": 50,
                            "rotation": 0,
                            "rectanglelabels": ["cat"],
                        },
                    },
                    {
                        "id": "r2",
                        "type": "choices",
                        "from_name": "scene",
                        "to_name": "image",
                        "value": {"choices": ["indoor"]},
                    },
                ],
            }
        ],
    }
    write(root / "export.json", json.dumps([task]))
    assert detect_format(root) == "labelstudio"
    project = _project(store)
    report = import_path(store, project, root)
    assert (report.format, report.added, report.boxes) == ("labelstudio", 1, 1)
    (box,) = store.samples(project)[0].boxes
    assert (box.x0, box.y0, box.x1, box.y1) == pytest.approx((20, 20, 70, 70))
    tags = _project(store, "tags")
    import_path(store, tags, root)
    assert store.samples(tags)[0].labels == ["indoor"]


def test_label_studio_json_min_and_text_classification(store, tmp_path, write, gen):
    root = tmp_path / "ls"
    write(root / "b.jpg", gen.jpeg(100, 100))
    rows = [
        {
            "image": "/data/upload/3/b.jpg",
            "id": 3,
            "label": [
                {
                    "x": 50,
                    "y": 50,
                    "width": 10,
                    "height": 20,
                    "rotation": 0,
                    "rectanglelabels": ["dog"],
                    "original_width": 100,
                    "original_height": 100,
                }
            ],
            "annotator": 1,
            "annotation_id": 7,
        }
    ]
    write(root / "min.json", json.dumps(rows))
    project = _project(store)
    report = import_path(store, project, root / "min.json")
    assert (report.added, report.boxes) == (1, 1)
    (box,) = store.samples(project)[0].boxes
    assert (box.label, box.x0, box.y1) == ("dog", pytest.approx(50), pytest.approx(70))
    texts = [
        {
            "id": 1,
            "data": {"text": "great service"},
            "annotations": [
                {
                    "result": [
                        {
                            "type": "choices",
                            "from_name": "sentiment",
                            "to_name": "text",
                            "value": {"choices": ["positive"]},
                        }
                    ]
                }
            ],
        },
        {
            "id": 2,
            "data": {"text": "never again"},
            "annotations": [
                {
                    "result": [
                        {
                            "type": "choices",
                            "from_name": "sentiment",
                            "to_name": "text",
                            "value": {"choices": ["negative"]},
                        }
                    ]
                }
            ],
        },
    ]
    write(tmp_path / "texts.json", json.dumps(texts))
    text_project = _project(store, "label", kind="text")
    report = import_path(store, text_project, tmp_path / "texts.json")
    assert report.added == 2 and report.labels == {"negative": 1, "positive": 1}


def test_create_ml_centre_based_boxes_and_a_malformed_entry(store, tmp_path, write, gen):
    root = tmp_path / "cm"
    write(root / "a.jpg", gen.jpeg(100, 80))
    write(root / "b.jpg", gen.jpeg(100, 80, color=(0, 0, 99)))
    write(
        root / "annotations.json",
        json.dumps(
            [
                {
                    "image": "a.jpg",
                    "annotations": [
                        {"label": "cat", "coordinates": {"x": 30, "y": 40, "width": 20, "height": 10}}
                    ],
                },
                {"image": "b.jpg", "annotations": [{"label": "cat", "coords": {"x": 1}}]},
            ]
        ),
    )
    assert detect_format(root) == "createml"
    project = _project(store)
    report = import_path(store, project, root)
    assert (report.format, report.added) == ("createml", 1)
    (box,) = store.samples(project)[0].boxes
    assert (box.x0, box.y0, box.x1, box.y1) == (20, 35, 40, 45)
    (failure,) = report.failed
    assert (
        failure["file"] == "b.jpg" and "Create ML" in failure["reason"] and "coordinates" in failure["reason"]
    )


def test_roboflow_multiclass_csv_tags_and_splits(store, tmp_path, write, gen):
    root = tmp_path / "rf"
    for k, split in enumerate(["train", "valid"]):
        write(root / split / f"p{k}.jpg", gen.jpeg(40, 40, color=(k * 90, 0, 0)))
        write(root / split / "_classes.csv", f"filename, beach, sunset\np{k}.jpg, 1, {k}\n")
    write(root / "train" / "_classes.csv", "filename, beach, sunset\np0.jpg, 1, 0\nmissing.jpg, 0, 2\n")
    assert detect_format(root) == "multiclass"  # not folder-per-class with train/valid as labels
    project = _project(store, "tags")
    report = import_path(store, project, root)
    assert report.added == 2 and report.labels == {"beach": 2, "sunset": 1}
    assert {s.source: (s.labels, s.split) for s in store.samples(project)} == {
        "train/p0.jpg": (["beach"], "train"),
        "valid/p1.jpg": (["beach", "sunset"], "val"),
    }
    (failure,) = report.failed
    assert "line 3" in failure["reason"] and "0 or 1" in failure["reason"]


def test_imagenet_nested_class_folders_keep_the_split(store, tmp_path, make_images):
    root = tmp_path / "imagenet"
    make_images(root / "train", {"n01440764": 2, "n02102040": 2})
    make_images(root / "val", {"n01440764": 1, "n02102040": 1})
    project = _project(store, "label")
    report = import_path(store, project, root)
    assert report.labels == {"n01440764": 3, "n02102040": 3}
    assert sorted({(s.labels[0], s.split) for s in store.samples(project)}) == [
        ("n01440764", "train"),
        ("n01440764", "val"),
        ("n02102040", "train"),
        ("n02102040", "val"),
    ]

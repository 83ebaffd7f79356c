"""Exports re-import to the same images and the same boxes, to a pixel."""

import shutil

import pytest

from modeldesk.datasets import Box, export_project, import_path

TOLERANCE = {"voc": 0.5, "coco": 1e-9, "yolo": 0.01}  # VOC stores whole pixels


def _snapshot(store, project) -> dict:
    return {
        s.content_hash: (s.width, s.height, sorted((b.label, b.x0, b.y0, b.x1, b.y1) for b in s.boxes))
        for s in store.samples(project)
    }


def _assert_same(before: dict, after: dict, tol: float) -> None:
    assert before.keys() == after.keys()  # byte-identical images
    for key, (width, height, boxes) in before.items():
        w2, h2, boxes2 = after[key]
        assert (width, height) == (w2, h2) and len(boxes) == len(boxes2)
        for a, b in zip(boxes, boxes2):
            assert a[0] == b[0] and max(abs(x - y) for x, y in zip(a[1:], b[1:])) <= tol, (a, b)


@pytest.fixture
def generated(store, tmp_path, write, gen):
    """A detection project made through the store API: float boxes, 3 classes, a PNG, an empty image."""
    project = store.create_project("gen", "object-detection", kind="image", target="boxes")
    write(tmp_path / "src" / "a.jpg", gen.jpeg(120, 90, color=(10, 20, 30)))
    write(tmp_path / "src" / "b.png", gen.png(64, 64, color=(200, 0, 0)))
    write(tmp_path / "src" / "c.jpg", gen.jpeg(50, 70, color=(0, 99, 0)))
    write(tmp_path / "src" / "sub" / "a.jpg", gen.jpeg(120, 90, color=(99, 20, 30)))  # same name
    import_path(store, project, tmp_path / "src")
    by_source = {s.source: s.id for s in store.samples(project)}
    store.set_boxes(by_source["a.jpg"], [Box("cat", 10.25, 5.5, 60.75, 80.0), Box("dog", 0, 0, 120, 90)])
    store.set_boxes(by_source["b.png"], [Box("bird, small", 1, 2, 3, 4)])
    store.set_boxes(by_source["sub/a.jpg"], [Box("cat", 3, 3, 30, 30)])
    return project


@pytest.mark.parametrize("fmt", ["voc", "coco", "yolo"])
def test_generated_round_trip(store, tmp_path, generated, fmt):
    before = _snapshot(store, generated)
    result = export_project(store, generated, tmp_path / "out", fmt)
    assert result["samples"] == 4 and result["format"] == fmt
    again = store.create_project("again", "object-detection", kind="image", target="boxes")
    report = import_path(store, again, tmp_path / "out")
    assert report.format == fmt and report.added == 4 and not report.failed and report.boxes == 4
    assert report.boxes_clipped == 0 and report.boxes_dropped == 0
    _assert_same(before, _snapshot(store, again), TOLERANCE[fmt])
    assert store.labels(again) == ["bird, small", "cat", "dog"]


@pytest.mark.parametrize("fmt", ["voc", "coco", "yolo"])
def test_raccoon_subset_round_trip(store, tmp_path, benchdata, fmt):
    src = tmp_path / "raccoon"
    src.mkdir()
    for xml in sorted((benchdata / "raccoon_voc").glob("*.xml"))[:15]:
        shutil.copy(xml, src)
        shutil.copy(xml.with_suffix(".jpg"), src)
    project = store.create_project("r", "object-detection", kind="image", target="boxes")
    assert import_path(store, project, src).added == 15
    export_project(store, project, tmp_path / "out", fmt)
    again = store.create_project("again", "object-detection", kind="image", target="boxes")
    assert import_path(store, again, tmp_path / "out").added == 15
    _assert_same(_snapshot(store, project), _snapshot(store, again), TOLERANCE[fmt] if fmt == "yolo" else 0)


def test_folder_and_csv_round_trips(store, tmp_path, make_images):
    make_images(tmp_path / "d", {"cat": 3, "dog": 2, "": 1})
    project = store.create_project("p", "image-classification", kind="image", target="label")
    import_path(store, project, tmp_path / "d")
    assert export_project(store, project, tmp_path / "f", "folder")["files"] == 6
    again = store.create_project("again", "image-classification", kind="image", target="label")
    import_path(store, again, tmp_path / "f")
    labels = lambda p: {s.content_hash: s.labels for s in store.samples(p)}  # noqa: E731
    assert labels(project) == labels(again)
    export_project(store, project, tmp_path / "c", "csv")
    text = (tmp_path / "c" / "data.csv").read_text()
    assert text.startswith("path,label") and text.count("\n") == 7


def test_text_export_and_refusals(store, tmp_path, write):
    write(tmp_path / "t.csv", 'text,label\n"a, quoted ""one""",x\nb,y\n')
    project = store.create_project("t", "text-classification", kind="text", target="label")
    import_path(store, project, tmp_path / "t.csv")
    export_project(store, project, tmp_path / "out", "csv")
    again = store.create_project("again", "text-classification", kind="text", target="label")
    import_path(store, again, tmp_path / "out" / "data.csv")
    assert sorted((s.text, s.labels[0]) for s in store.samples(again)) == [
        ('a, quoted "one"', "x"),
        ("b", "y"),
    ]
    with pytest.raises(ValueError, match="projects with boxes"):
        export_project(store, project, tmp_path / "v", "voc")
    with pytest.raises(ValueError, match="not empty"):
        export_project(store, project, tmp_path / "out", "csv")


def test_csv_of_paths_round_trips_for_images_and_boxes(store, tmp_path, generated, make_images):
    export_project(store, generated, tmp_path / "det", "csv")
    again = store.create_project("again", "object-detection", kind="image", target="boxes")
    report = import_path(store, again, tmp_path / "det")
    assert report.format == "csv" and report.added == 4
    _assert_same(_snapshot(store, generated), _snapshot(store, again), 1e-9)
    make_images(tmp_path / "d", {"cat": 2, "dog": 1})
    tags = store.create_project("tags", "image-multilabel", kind="image", target="tags")
    import_path(store, tags, tmp_path / "d")
    store.set_tags(store.sample_ids(tags)[0], ["cat", "indoor"])
    export_project(store, tags, tmp_path / "c", "csv")
    back = store.create_project("back", "image-multilabel", kind="image", target="tags")
    assert import_path(store, back, tmp_path / "c").format == "csv"
    labels = lambda p: {s.content_hash: s.labels for s in store.samples(p)}  # noqa: E731
    assert labels(tags) == labels(back)


def test_raccoon_boxes_csv_matches_its_voc(store, benchdata):
    voc = store.create_project("voc", "object-detection", kind="image", target="boxes")
    import_path(store, voc, benchdata / "raccoon_voc")
    table = store.create_project("table", "object-detection", kind="image", target="boxes")
    report = import_path(store, table, benchdata / "raccoon_voc", format="csv")
    assert (report.added, report.boxes) == (103, 112)
    _assert_same(_snapshot(store, voc), _snapshot(store, table), 0)

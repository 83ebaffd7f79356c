"""Splits travel: every exporter writes the train/val/test split in its format's own way, and the
importer reads it back, so an export re-imports to the same split of every photo."""

import json

import pytest

from modeldesk.datasets import Box, export_project, import_path


@pytest.fixture
def split_project(store, tmp_path, make_images):
    project = store.create_project("gen", "object-detection", kind="image", target="boxes")
    make_images(tmp_path / "src", {"": 13}, size=(60, 40))
    import_path(store, project, tmp_path / "src")
    samples = store.samples(project)
    for k, sample in enumerate(samples[:12]):  # the 13th stays unlabeled: no split
        store.set_boxes(sample.id, [Box("cat" if k % 2 else "dog", 2 + k, 3, 30.5, 20)])
    assert {s.split for s in store.samples(project)} >= {"train", None}
    return project


def _splits(store, project) -> dict:
    return {
        s.content_hash: (s.split, sorted((b.label, round(b.x0, 2), b.y1) for b in s.boxes))
        for s in store.samples(project)
    }


@pytest.mark.parametrize("fmt", ["voc", "coco", "yolo", "cvat", "labelme", "labelstudio", "createml"])
def test_export_keeps_splits_and_reimports_them(store, tmp_path, split_project, fmt):
    before = _splits(store, split_project)
    assert {"train", "val", "test"} <= {s for s, _ in before.values()}
    export_project(store, split_project, tmp_path / "out", fmt)
    again = store.create_project("again", "object-detection", kind="image", target="boxes")
    report = import_path(store, again, tmp_path / "out")
    assert report.format == fmt and not report.failed
    assert _splits(store, again) == before


def test_coco_export_has_one_file_per_split_and_loads_in_pycocotools(store, tmp_path, split_project):
    coco_api = pytest.importorskip("pycocotools.coco")
    export_project(store, split_project, tmp_path / "out", "coco")
    files = sorted(p.name for p in (tmp_path / "out" / "annotations").iterdir())
    assert files == [
        "instances_test.json",
        "instances_train.json",
        "instances_unassigned.json",
        "instances_val.json",
    ]
    total_boxes = 0
    for name in files:
        api = coco_api.COCO(str(tmp_path / "out" / "annotations" / name))
        for image_id in api.getImgIds():
            info = api.loadImgs(image_id)[0]
            split = name[len("instances_") : -len(".json")]
            assert (tmp_path / "out" / "images" / split / info["file_name"]).is_file()
        anns = api.loadAnns(api.getAnnIds())
        assert all(api.loadCats(a["category_id"])[0]["name"] in ("cat", "dog") for a in anns)
        total_boxes += len(anns)
    assert total_boxes == 12


def test_yolo_and_voc_exports_list_the_splits(store, tmp_path, split_project):
    export_project(store, split_project, tmp_path / "y", "yolo")
    yaml = (tmp_path / "y" / "data.yaml").read_text()
    assert "train: images/train\n" in yaml and "val: images/val\n" in yaml and "test: images/test\n" in yaml
    export_project(store, split_project, tmp_path / "v", "voc")
    lists = {p.stem: p.read_text().split() for p in (tmp_path / "v" / "ImageSets" / "Main").iterdir()}
    assert set(lists) == {"train", "val", "test"} and sum(map(len, lists.values())) == 12
    assert json.dumps(sorted(lists)) == '["test", "train", "val"]'


@pytest.mark.parametrize("fmt", ["cvat", "labelme", "labelstudio", "multiclass"])
def test_tag_exports_keep_tags_and_splits(store, tmp_path, make_images, fmt):
    project = store.create_project("tags", "image-multilabel", kind="image", target="tags")
    make_images(tmp_path / "src", {"": 13}, size=(40, 30))
    import_path(store, project, tmp_path / "src")
    for k, sample in enumerate(store.samples(project)[:12]):
        store.set_tags(sample.id, ["beach"] + (["sun, set"] if k % 3 == 0 else []))
    before = {s.content_hash: (s.split, sorted(s.labels)) for s in store.samples(project)}
    assert {"train", "val", "test"} <= {split for split, _ in before.values()}
    export_project(store, project, tmp_path / "out", fmt)
    again = store.create_project("again", "image-multilabel", kind="image", target="tags")
    report = import_path(store, again, tmp_path / "out")
    assert report.format == fmt and not report.failed
    assert {s.content_hash: (s.split, sorted(s.labels)) for s in store.samples(again)} == before

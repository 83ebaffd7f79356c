"""Layouts other tools write, made here from their documented conventions: the official COCO layout,
Roboflow's COCO and YOLO exports, Ultralytics and Darknet YOLO; splits the source states are kept."""

import json

import pytest

from modeldesk.datasets import detect_format, import_path


def _detection(store):
    return store.create_project("det", "object-detection", kind="image", target="boxes")


def _coco(images, annotations, categories=({"id": 1, "name": "cat"},)):
    return json.dumps({"images": images, "annotations": annotations, "categories": list(categories)})


def _image(i, name):
    return {"id": i, "file_name": name, "width": 64, "height": 48}


def _box(i, image_id, bbox, **extra):
    return {"id": i, "image_id": image_id, "category_id": 1, "bbox": bbox, "area": bbox[2] * bbox[3], **extra}


@pytest.mark.parametrize("photos", ["val2017", "images/val2017"])
def test_coco_official_layout(store, tmp_path, write, gen, photos):
    root = tmp_path / "coco"
    write(root / photos / "000000000139.jpg", gen.jpeg(64, 48))
    write(root / photos / "000000000285.jpg", gen.jpeg(64, 48, color=(0, 90, 0)))
    write(
        root / "annotations" / "instances_val2017.json",
        _coco(
            [_image(139, "000000000139.jpg"), _image(285, "000000000285.jpg")],
            [
                _box(1, 139, [1, 2, 10, 10]),
                _box(2, 285, [0, 0, 30, 30], iscrowd=1),
                _box(3, 285, [5, 5, 9, 9]),
            ],
        ),
    )
    write(
        root / "annotations" / "captions_val2017.json",
        json.dumps(
            {"images": [_image(139, "000000000139.jpg")], "annotations": [{"id": 9, "image_id": 139}]}
        ),
    )
    assert detect_format(root) == "coco"
    report = import_path(store, _detection(store), root)
    assert (report.added, report.boxes, report.failed) == (2, 2, [])
    assert any("iscrowd" in w and "1 crowd region" in w for w in report.warnings)
    assert any("captions_val2017.json: skipped" in w for w in report.warnings)
    assert {s.split for s in store.samples(_detection_of(store))} == {"val"}


def _detection_of(store):
    return store.list_projects()[0]


def test_roboflow_coco_export_keeps_its_splits(store, tmp_path, write, gen):
    root = tmp_path / "rf"
    for k, split in enumerate(["train", "valid", "test"]):
        write(root / split / f"p{k}_jpg.rf.abc.jpg", gen.jpeg(64, 48, color=(k * 50, 0, 0)))
        write(
            root / split / "_annotations.coco.json",
            _coco([_image(0, f"p{k}_jpg.rf.abc.jpg")], [_box(0, 0, [2, 2, 20, 20])]),
        )
    write(root / "README.roboflow.txt", "exported from roboflow")
    assert detect_format(root) == "coco"
    report = import_path(store, _detection(store), root)
    assert (report.added, report.boxes) == (3, 3)
    splits = {s.source.split("/")[0]: s.split for s in store.samples(_detection_of(store))}
    assert splits == {"train": "train", "valid": "val", "test": "test"}


def test_ultralytics_data_yaml_splits_and_roboflow_relative_paths(store, tmp_path, write, gen):
    root = tmp_path / "y"
    # Roboflow's YOLOv8 export: paths relative to a folder above the data.yaml
    write(root / "data.yaml", "train: ../train/images\nval: ../valid/images\nnc: 2\nnames: ['cat', 'dog']\n")
    for k, split in enumerate(["train", "valid"]):
        write(root / split / "images" / f"a{k}.jpg", gen.jpeg(100, 50, color=(k * 80, 10, 10)))
        write(root / split / "labels" / f"a{k}.txt", "1 0.5 0.5 0.2 0.4\n")
    report = import_path(store, _detection(store), root)
    assert (report.added, report.boxes, report.labels) == (2, 2, {"dog": 2})
    splits = {s.source.split("/")[0]: s.split for s in store.samples(_detection_of(store))}
    assert splits == {"train": "train", "valid": "val"}


def test_darknet_obj_data_names_and_train_list(store, tmp_path, write, gen):
    root = tmp_path / "darknet"
    write(
        root / "obj.data",
        "classes = 2\ntrain = data/train.txt\nvalid = data/valid.txt\nnames = data/obj.names\n",
    )
    write(root / "obj.names", "person\ncar\n")
    write(root / "train.txt", "data/obj/a.jpg\n")
    write(root / "valid.txt", "data/obj/b.jpg\n")
    write(root / "obj" / "a.jpg", gen.jpeg(40, 40))
    write(root / "obj" / "a.txt", "1 0.5 0.5 0.5 0.5\n")
    write(root / "obj" / "b.jpg", gen.jpeg(40, 40, color=(0, 0, 200)))
    write(root / "obj" / "b.txt", "0 0.25 0.25 0.5 0.5\n")
    assert detect_format(root) == "yolo"
    report = import_path(store, _detection(store), root)
    assert (report.added, report.labels) == (2, {"car": 1, "person": 1})
    splits = {s.source: s.split for s in store.samples(_detection_of(store))}
    assert splits == {"obj/a.jpg": "train", "obj/b.jpg": "val"}


def test_images_and_annotations_folders_with_obj_names_import_their_boxes(store, tmp_path, write, gen):
    root = tmp_path / "y"
    write(root / "obj.names", "ball\n")
    write(root / "Images" / "a.jpg", gen.jpeg(40, 40))
    write(root / "Annotations" / "a.txt", "0 0.5 0.5 0.5 0.5\n")
    report = import_path(store, _detection(store), root)
    assert (report.format, report.added, report.boxes) == ("yolo", 1, 1)


def test_same_photo_under_two_names_merges_its_boxes(store, tmp_path, write, gen):
    root = tmp_path / "c"
    photo = gen.jpeg(64, 48)
    write(root / "images" / "one.jpg", photo)
    write(root / "images" / "two.jpg", photo)
    write(
        root / "instances.json",
        _coco(
            [_image(1, "one.jpg"), _image(2, "two.jpg")],
            [_box(1, 1, [0, 0, 20, 20]), _box(2, 2, [0.1, 0, 20, 20]), _box(3, 2, [30, 20, 10, 10])],
        ),
    )
    report = import_path(store, _detection(store), root)
    assert (report.added, report.duplicates, report.merged, report.boxes) == (1, 1, 1, 2)
    assert any("added beside the old ones" in w for w in report.warnings)
    (sample,) = store.samples(_detection_of(store))
    assert sorted((b.x0, b.y0) for b in sample.boxes) == [(0, 0), (30, 20)]


def test_corrected_voc_file_updates_the_photo_already_imported(store, tmp_path, write, gen):
    root = tmp_path / "voc"
    write(root / "a.jpg", gen.jpeg(100, 80))
    write(root / "a.xml", "<annotation><filename>a.jpg</filename><object><name>cat</name></annotation>")
    project = _detection(store)
    first = import_path(store, project, root)
    assert first.added == 1 and first.failed
    write(
        root / "a.xml",
        "<annotation><filename>a.jpg</filename><object><name>cat</name><bndbox><xmin>1</xmin>"
        "<ymin>2</ymin><xmax>30</xmax><ymax>40</ymax></bndbox></object></annotation>",
    )
    second = import_path(store, project, root)
    assert (second.added, second.updated) == (0, 1)
    assert [(b.label, b.x1) for b in store.samples(project)[0].boxes] == [("cat", 30)]
    third = import_path(store, project, root)  # the same file again changes nothing
    assert (third.updated, third.merged) == (0, 0)


def test_voc_imagesets_give_the_split_and_segmentation_masks_are_not_photos(store, tmp_path, write, gen):
    root = tmp_path / "VOC2012"
    for k, stem in enumerate(["2008_000001", "2008_000002"]):
        write(root / "JPEGImages" / f"{stem}.jpg", gen.jpeg(100, 80, color=(k * 90, 0, 0)))
        write(
            root / "Annotations" / f"{stem}.xml",
            f"<annotation><filename>{stem}.jpg</filename><object><name>cat</name><bndbox><xmin>1</xmin>"
            "<ymin>2</ymin><xmax>30</xmax><ymax>40</ymax></bndbox></object></annotation>",
        )
        write(root / "SegmentationClass" / f"{stem}.png", gen.png(100, 80, color=(k, 0, 0)))
    write(root / "ImageSets" / "Main" / "train.txt", "2008_000001\n")
    write(root / "ImageSets" / "Main" / "val.txt", "2008_000002\n")
    write(root / "ImageSets" / "Main" / "trainval.txt", "2008_000001\n2008_000002\n")
    report = import_path(store, _detection(store), root)
    assert (report.format, report.added, report.boxes, report.splits_kept) == ("voc", 2, 2, 2)
    splits = {s.source: s.split for s in store.samples(_detection_of(store))}
    assert splits == {"JPEGImages/2008_000001.jpg": "train", "JPEGImages/2008_000002.jpg": "val"}


def test_yolo_label_files_that_match_no_image_are_said(store, tmp_path, write, gen):
    root = tmp_path / "y"
    write(root / "obj.names", "ball\n")
    write(root / "images" / "train" / "a.jpg", gen.jpeg(40, 40))
    write(root / "labels" / "train" / "a.txt", "0 0.5 0.5 0.5 0.5\n")
    write(root / "labels" / "train" / "renamed.txt", "0 0.5 0.5 0.5 0.5\n")
    report = import_path(store, _detection(store), root)
    assert report.boxes == 1
    assert any(
        "1 label file(s) match no image" in w and "labels/train/renamed.txt" in w for w in report.warnings
    )


def test_reimport_with_moved_boxes_adds_beside_the_old_ones_and_says_so(store, tmp_path, write, gen):
    root = tmp_path / "voc"
    write(root / "a.jpg", gen.jpeg(100, 80))
    xml = (
        "<annotation><filename>a.jpg</filename><object><name>cat</name><bndbox><xmin>{}</xmin>"
        "<ymin>2</ymin><xmax>30</xmax><ymax>40</ymax></bndbox></object></annotation>"
    )
    write(root / "a.xml", xml.format(1))
    project = _detection(store)
    import_path(store, project, root)
    write(root / "a.xml", xml.format(15))  # a box moved: the one there may be a correction made in the app
    report = import_path(store, project, root)
    assert (report.added, report.merged, report.updated) == (0, 1, 0)
    assert any("check them on the Label page" in w for w in report.warnings)
    assert sorted(b.x0 for b in store.samples(project)[0].boxes) == [1, 15]


def test_yolo_photos_without_any_label_file_are_said(store, tmp_path, write, gen):
    root = tmp_path / "y"
    write(root / "obj.names", "ball\n")
    write(root / "Images" / "a.jpg", gen.jpeg(40, 40))
    write(root / "Labels-elsewhere" / "a.txt", "0 0.5 0.5 0.5 0.5\n")
    report = import_path(store, _detection(store), root)
    assert report.added == 1 and report.boxes == 0
    assert any("none of the 1 photos has a label file" in w for w in report.warnings)


def test_same_photo_under_two_names_in_a_tag_project_merges_and_counts_tags(store, tmp_path, write, gen):
    photo = gen.jpeg(40, 40)
    write(tmp_path / "d" / "beach" / "a.jpg", photo)
    write(tmp_path / "d" / "sunset" / "a_copy.jpg", photo)
    write(tmp_path / "d" / "sunset" / "b.jpg", gen.jpeg(40, 40, color=(1, 2, 3)))
    write(tmp_path / "d" / "sunset" / "b_again.jpg", gen.jpeg(40, 40, color=(1, 2, 3)))  # same tag again
    project = store.create_project("tags", "image-multilabel", kind="image", target="tags")
    report = import_path(store, project, tmp_path / "d")
    assert (report.added, report.duplicates, report.merged) == (2, 2, 1)
    assert sorted(s.labels for s in store.samples(project)) == [["beach", "sunset"], ["sunset"]]

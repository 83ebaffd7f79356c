"""Each importer on small generated data, and format detection."""

import itertools
import json
import zipfile

import pytest

from modeldesk.datasets import detect_format, import_path
from modeldesk.datasets.yolo import parse_yaml_names


def test_folder_per_class_and_duplicates(store, tmp_path, make_images, write):
    root = tmp_path / "data"
    make_images(root, {"cat": 3, "dog": 2})
    write(root / "dog" / "copy.jpg", (root / "cat" / "cat_0.jpg").read_bytes())  # same bytes again
    write(root / "notes.txt", "hello")
    project = store.create_project("pets", "image-classification", kind="image", target="label")
    report = import_path(store, project, root)
    assert (report.format, report.added, report.duplicates) == ("folder", 5, 1)
    assert report.labels == {"cat": 3, "dog": 2}
    assert any("notes.txt" in w for w in report.warnings)
    sample = store.samples(project, label="cat")[0]
    assert sample.path.read_bytes() == (root / "cat" / "cat_0.jpg").read_bytes()
    assert (sample.width, sample.height, sample.kind) == (32, 24, "image")
    again = import_path(store, project, root)  # importing twice adds nothing
    assert again.added == 0 and again.duplicates == 6
    assert len(list((store.root / "media").rglob("*.jpg"))) == 5


def test_multilabel_folder_merges_tags_of_the_same_file(store, tmp_path, write, gen):
    data = gen.jpeg(color=(1, 2, 3))
    write(tmp_path / "d" / "beach" / "a.jpg", data)
    write(tmp_path / "d" / "sunset" / "a.jpg", data)
    write(tmp_path / "d" / "sunset" / "b.jpg", gen.jpeg(color=(9, 9, 9)))
    project = store.create_project("tags", "image-multilabel", kind="image", target="tags")
    import_path(store, project, tmp_path / "d")
    assert sorted(s.labels for s in store.samples(project)) == [["beach", "sunset"], ["sunset"]]


def test_flat_folder_single_file_and_png_named_jpg(store, tmp_path, write, gen):
    write(tmp_path / "flat" / "one.jpg", gen.jpeg())
    write(tmp_path / "flat" / "two.jpg", gen.png())  # really a PNG
    project = store.create_project("p", "object-detection", kind="image", target="boxes")
    assert detect_format(tmp_path / "flat") == "flat"
    report = import_path(store, project, tmp_path / "flat")
    assert report.added == 2 and store.stats(project)["labeled"] == 0
    assert sorted(s.path.suffix for s in store.samples(project)) == [".jpg", ".png"]
    single = write(tmp_path / "single.png", gen.png(5, 6))
    assert import_path(store, project, single).added == 1


def test_voc_annotations_jpegimages_layout(store, tmp_path, write, gen):
    write(tmp_path / "voc" / "JPEGImages" / "a.jpg", gen.jpeg(100, 80))
    write(
        tmp_path / "voc" / "Annotations" / "a.xml",
        "<annotation><filename>a.jpg</filename><size><width>100</width><height>80</height></size>"
        "<object><name>cat</name><bndbox><xmin>10</xmin><ymin>5</ymin><xmax>50</xmax><ymax>60</ymax>"
        "</bndbox></object><object><name>dog</name><bndbox><xmin>1.5</xmin><ymin>2</ymin><xmax>99</xmax>"
        "<ymax>79</ymax></bndbox></object></annotation>",
    )
    assert detect_format(tmp_path / "voc") == "voc"
    project = store.create_project("det", "object-detection", kind="image", target="boxes")
    report = import_path(store, project, tmp_path / "voc")
    assert (report.added, report.boxes, report.labels) == (1, 2, {"cat": 1, "dog": 1})
    boxes = store.samples(project)[0].boxes
    assert [(b.label, b.x0, b.y0, b.x1, b.y1) for b in boxes] == [
        ("cat", 10, 5, 50, 60),
        ("dog", 1.5, 2, 99, 79),
    ]


def test_coco_with_images_folder(store, tmp_path, write, gen):
    write(tmp_path / "c" / "images" / "x.jpg", gen.jpeg(64, 48))
    write(tmp_path / "c" / "images" / "y.jpg", gen.jpeg(64, 48, color=(0, 0, 255)))
    write(
        tmp_path / "c" / "instances.json",
        json.dumps(
            {
                "images": [
                    {"id": 7, "file_name": "x.jpg", "width": 64, "height": 48},
                    {"id": 8, "file_name": "y.jpg", "width": 64, "height": 48},
                ],
                "annotations": [{"id": 1, "image_id": 7, "category_id": 3, "bbox": [4.5, 6, 20, 10]}],
                "categories": [{"id": 3, "name": "bird"}],
            }
        ),
    )
    assert detect_format(tmp_path / "c") == "coco"
    project = store.create_project("det", "object-detection", kind="image", target="boxes")
    report = import_path(store, project, tmp_path / "c")
    assert (report.added, report.boxes) == (2, 1)
    sample = store.samples(project, label="bird")[0]
    assert [(b.x0, b.y0, b.x1, b.y1) for b in sample.boxes] == [(4.5, 6, 24.5, 16)]
    assert store.stats(project)["labeled"] == 1


@pytest.mark.parametrize(
    "names",
    [
        "names: [cat, dog]\n",
        "names:\n  - cat\n  - 'dog'\n",
        'nc: 2\nnames:\n  0: cat\n  1: "dog"\n',
        "names: {0: cat, 1: dog}\n",
    ],
)
def test_yolo_data_yaml_forms(store, tmp_path, write, names, gen):
    root = tmp_path / "y"
    write(root / "data.yaml", "path: .\ntrain: images/train\n" + names)
    write(root / "images" / "train" / "a.jpg", gen.jpeg(100, 50))
    write(root / "labels" / "train" / "a.txt", "1 0.5 0.5 0.2 0.4\n0 0.1 0.1 0.1 0.1\n")
    write(root / "images" / "train" / "b.jpg", gen.jpeg(100, 50, color=(0, 50, 0)))  # no label file
    assert detect_format(root) == "yolo"
    project = store.create_project("det", "object-detection", kind="image", target="boxes")
    report = import_path(store, project, root)
    assert (report.added, report.boxes) == (2, 2)
    boxes = {b.label: b for b in store.samples(project, label="dog")[0].boxes}
    assert boxes["dog"].x0 == pytest.approx(40) and boxes["dog"].y1 == pytest.approx(35)
    assert boxes["cat"].x1 == pytest.approx(15) and boxes["cat"].y0 == pytest.approx(2.5)


def test_yaml_names_parser():
    assert parse_yaml_names("names:\n  0: person # comment\n  2: car\n") == ["person", "car"]
    assert parse_yaml_names("nc: 3\n") == ["0", "1", "2"]
    with pytest.raises(ValueError):
        parse_yaml_names("train: x\n")


def test_yolo_with_classes_txt_beside_images(store, tmp_path, write, gen):
    root = tmp_path / "y"
    write(root / "classes.txt", "person\ncar\n")
    write(root / "p.jpg", gen.jpeg(40, 40))
    write(root / "p.txt", "1 0.5 0.5 0.5 0.5\n")
    project = store.create_project("det", "object-detection", kind="image", target="boxes")
    report = import_path(store, project, root)
    assert report.format == "yolo" and report.labels == {"car": 1}
    box = store.samples(project)[0].boxes[0]
    assert (box.x0, box.y0, box.x1, box.y1) == (10, 10, 30, 30)


def test_csv_semicolon_custom_columns_and_bom(store, tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(
        '\ufeffid;Sentence;Mood\n1;good food;pos\n2;"cold, late";neg\n3;  good   food ;pos\n'.encode("utf-8")
    )
    project = store.create_project("t", "text-classification", kind="text", target="label")
    report = import_path(store, project, path, text_column="sentence", label_column="mood")
    assert (report.added, report.duplicates) == (2, 1)  # whitespace-normalised duplicate merged
    assert sorted(s.text for s in store.samples(project)) == ["cold, late", "good food"]
    assert report.labels == {"neg": 1, "pos": 1}


def test_csv_default_columns_and_folder_of_tables(store, tmp_path, write):
    write(tmp_path / "texts" / "a.csv", "text,label\nhello,greet\n")
    write(tmp_path / "texts" / "b.tsv", "content\tcategory\nbye\tleave\n")
    project = store.create_project("t", "text-classification", kind="text", target="label")
    assert detect_format(tmp_path / "texts") == "csv"
    assert import_path(store, project, tmp_path / "texts").labels == {"greet": 1, "leave": 1}


def test_audio_folder_and_compressed_audio_refused(store, tmp_path, write, gen):
    write(tmp_path / "a" / "yes" / "1.wav", gen.wav(1600))
    write(tmp_path / "a" / "no" / "2.wav", gen.wav(800, rate=16000))
    write(tmp_path / "a" / "no" / "3.mp3", b"ID3\x03fake mp3")
    project = store.create_project("s", "sound-classification", kind="audio", target="label")
    report = import_path(store, project, tmp_path / "a")
    assert report.added == 2
    assert report.failed[0]["file"] == "no/3.mp3" and "convert" in report.failed[0]["reason"]
    assert "WAV" in report.failed[0]["reason"]
    assert sorted(s.duration for s in store.samples(project)) == [0.05, 0.2]


def test_zip_of_a_dataset_folder(store, tmp_path, make_images):
    make_images(tmp_path / "src" / "dataset", {"cat": 2, "dog": 2})
    archive = tmp_path / "pets.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted((tmp_path / "src").rglob("*.jpg")):
            zf.write(path, path.relative_to(tmp_path / "src").as_posix())
    assert detect_format(archive) == "zip"
    project = store.create_project("pets", "image-classification", kind="image", target="label")
    report = import_path(store, project, archive)
    assert report.format == "zip/folder" and report.labels == {"cat": 2, "dog": 2}
    assert not any((store.root / "tmp").iterdir())  # the extraction folder is gone
    explicit = store.create_project("explicit", "image-classification", kind="image", target="label")
    assert import_path(store, explicit, archive, format="folder").format == "zip/folder"
    with pytest.raises(ValueError, match="not a zip archive"):
        import_path(store, explicit, tmp_path / "src" / "dataset", format="zip")


def test_progress_and_stop(store, tmp_path, make_images):
    make_images(tmp_path / "d", {"": 30})
    project = store.create_project("p", "image-classification", kind="image", target="label")
    calls, committed = [], []
    report = import_path(
        store,
        project,
        tmp_path / "d",
        progress=lambda d, t, f: calls.append((d, t)),
        on_commit=lambda r: committed.append(r.added),
    )
    assert calls[-1] == (30, 30) and committed[-1] == 30 == report.added
    make_images(tmp_path / "e", {"x": 30}, size=(20, 20))
    polls = itertools.count()
    report = import_path(store, project, tmp_path / "e", should_stop=lambda: next(polls) >= 5)
    assert report.stopped and report.added == 5 and store.stats(project)["samples"] == 35


def test_thumbnail_is_cached_and_small(store, tmp_path, write, gen):
    write(tmp_path / "big.jpg", gen.jpeg(800, 400))
    project = store.create_project("p", "image-classification", kind="image", target="label")
    import_path(store, project, tmp_path / "big.jpg")
    sid = store.sample_ids(project)[0]
    thumb = store.thumbnail(sid, size=64)
    from PIL import Image

    with Image.open(thumb) as image:
        assert max(image.size) <= 64 and image.size[0] > image.size[1]
    assert store.thumbnail(sid, size=64) == thumb and thumb.is_relative_to(store.root / "cache" / "thumbs")

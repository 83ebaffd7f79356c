"""Bad input gets a clear message naming the file, and the rest of the import goes on."""

import io
import json
import stat
import struct
import zipfile
import zlib

import numpy as np
import pytest
from PIL import Image

from modeldesk.datasets import MAX_IMAGE_PIXELS, archive, import_path


def _png_header_only(width, height) -> bytes:
    """A tiny PNG whose header claims width x height pixels (a decompression bomb)."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def _noisy_jpeg() -> bytes:
    buffer = io.BytesIO()
    pixels = (np.random.default_rng(0).random((64, 80, 3)) * 255).astype("uint8")
    Image.fromarray(pixels).save(buffer, "JPEG")
    return buffer.getvalue()


def _reasons(report) -> dict:
    return {entry["file"]: entry["reason"] for entry in report.failed}


def test_broken_images_are_reported_and_the_rest_imports(store, tmp_path, make_images, write):
    root = tmp_path / "d"
    make_images(root, {"cat": 2})
    write(root / "cat" / "truncated.jpg", _noisy_jpeg()[:1500])
    write(root / "cat" / "notes.jpg", "this is a text file, not a picture")
    bomb = _png_header_only(50_000, 50_000)
    assert len(bomb) < 200
    write(root / "cat" / "bomb.png", bomb)
    write(root / "cat" / "huge.png", _png_header_only(10_000, 9_000))  # over 80 MP, under Pillow's limit
    project = store.create_project("p", "image-classification", kind="image", target="label")
    report = import_path(store, project, root)
    assert report.added == 2
    reasons = _reasons(report)
    assert set(reasons) == {"cat/truncated.jpg", "cat/notes.jpg", "cat/bomb.png", "cat/huge.png"}
    assert "truncated" in reasons["cat/truncated.jpg"]
    assert "not an image" in reasons["cat/notes.jpg"]
    assert "over the limit" in reasons["cat/bomb.png"]
    assert reasons["cat/huge.png"].startswith("10000x9000 pixels is over the limit")
    assert MAX_IMAGE_PIXELS == 80_000_000
    assert len(list((store.root / "media").rglob("*.*"))) == 2  # nothing of the bad files was stored


def test_zip_with_escaping_paths_writes_nothing_outside(store, tmp_path, gen):
    archive_path = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive_path, "w") as zf:
        zf.writestr("../escaped.jpg", gen.jpeg(color=(1, 1, 1)))
        zf.writestr("../../escaped2.jpg", gen.jpeg(color=(2, 2, 2)))
        zf.writestr("/tmp/absolute.jpg", gen.jpeg(color=(3, 3, 3)))
        link = zipfile.ZipInfo("good/link.jpg")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
        zf.writestr("good/a.jpg", gen.jpeg(color=(4, 4, 4)))
        zf.writestr("good/b.jpg", gen.jpeg(color=(5, 5, 5)))
    project = store.create_project("p", "image-classification", kind="image", target="label")
    report = import_path(store, project, archive_path)
    assert report.added == 2 and report.labels == {"good": 2}
    reasons = _reasons(report)
    assert {
        "evil.zip/../escaped.jpg",
        "evil.zip/../../escaped2.jpg",
        "evil.zip//tmp/absolute.jpg",
        "evil.zip/good/link.jpg",
    } == set(reasons)
    assert all(r.startswith("refused") for r in reasons.values())
    written = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert not any(name.startswith(("escaped", "absolute")) for name in written)
    assert not (tmp_path.parent / "escaped2.jpg").exists()
    assert not any((store.root / "tmp").iterdir())


def test_zip_bomb_is_stopped(store, tmp_path, monkeypatch):
    archive_path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a/zeros.jpg", b"\0" * 2_000_000)
    assert archive_path.stat().st_size < 20_000
    monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 1_000_000)
    project = store.create_project("p", "image-classification", kind="image", target="label")
    with pytest.raises(ValueError, match="zip bomb"):
        import_path(store, project, archive_path)
    assert not any((store.root / "tmp").iterdir())


def test_voc_boxes_outside_the_image_are_clipped_or_dropped(store, tmp_path, write, gen):
    write(tmp_path / "v" / "a.jpg", gen.jpeg(100, 80))
    objects = "".join(
        f"<object><name>{name}</name><bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin><xmax>{x1}</xmax>"
        f"<ymax>{y1}</ymax></bndbox></object>"
        for name, x0, y0, x1, y1 in [
            ("ok", 10, 10, 20, 20),
            ("clip", -10, 5, 50, 90),
            ("flat", 20, 20, 20, 40),
            ("away", 150, 10, 200, 20),
        ]
    )
    write(tmp_path / "v" / "a.xml", f"<annotation><filename>a.jpg</filename>{objects}</annotation>")
    write(tmp_path / "v" / "b.xml", "<annotation><object><name>x</name>")  # malformed XML
    project = store.create_project("p", "object-detection", kind="image", target="boxes")
    report = import_path(store, project, tmp_path / "v")
    assert (report.added, report.boxes, report.boxes_clipped, report.boxes_dropped) == (1, 2, 1, 2)
    boxes = {b.label: (b.x0, b.y0, b.x1, b.y1) for b in store.samples(project)[0].boxes}
    assert boxes == {"ok": (10, 10, 20, 20), "clip": (0, 5, 50, 80)}
    assert any("a.jpg" in w and "clipped" in w for w in report.warnings)
    assert "b.xml" in _reasons(report) and "XML" in _reasons(report)["b.xml"]


def test_coco_referencing_missing_images(store, tmp_path, write, gen):
    write(tmp_path / "c" / "here.jpg", gen.jpeg())
    write(
        tmp_path / "c" / "ann.json",
        json.dumps(
            {
                "images": [
                    {"id": 1, "file_name": "here.jpg"},
                    {"id": 2, "file_name": "gone.jpg"},
                    {"id": 3, "file_name": "also/gone.png"},
                ],
                "annotations": [{"id": 1, "image_id": 2, "category_id": 1, "bbox": [0, 0, 5, 5]}],
                "categories": [{"id": 1, "name": "x"}],
            }
        ),
    )
    project = store.create_project("p", "object-detection", kind="image", target="boxes")
    report = import_path(store, project, tmp_path / "c")
    assert report.added == 1
    reasons = _reasons(report)
    assert set(reasons) == {"gone.jpg", "also/gone.png"} and "not found" in reasons["gone.jpg"]
    assert "ann.json" in reasons["gone.jpg"]


def test_csv_without_the_needed_columns_lists_them(store, tmp_path, write):
    path = write(tmp_path / "t.csv", "foo,bar\n1,2\n")
    project = store.create_project("t", "text-classification", kind="text", target="label")
    with pytest.raises(ValueError, match=r"t\.csv.*columns are: 'foo', 'bar'"):
        import_path(store, project, path)
    with pytest.raises(ValueError, match="no column 'kind'"):
        import_path(store, project, write(tmp_path / "u.csv", "text,label\na,b\n"), label_column="kind")


def test_csv_in_gbk_imports_with_a_warning(store, tmp_path):
    path = tmp_path / "gbk.csv"
    path.write_bytes("text,label\n味道很好,1\n送餐太慢了,0\n".encode("gbk"))
    project = store.create_project("t", "text-classification", kind="text", target="label")
    report = import_path(store, project, path)
    assert report.added == 2
    assert sorted(s.text for s in store.samples(project)) == ["味道很好", "送餐太慢了"]
    assert any("gbk.csv" in w and "GB18030/GBK" in w for w in report.warnings)


def test_binary_or_undecodable_csv_is_refused(store, tmp_path):
    project = store.create_project("t", "text-classification", kind="text", target="label")
    binary = tmp_path / "data.csv"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match="data.csv is not a text file"):
        import_path(store, project, binary)
    odd = tmp_path / "odd.csv"
    odd.write_bytes(b"text,label\n\xff\xfe\xff,1\n")
    with pytest.raises(ValueError, match="odd.csv is neither UTF-8 nor GBK"):
        import_path(store, project, odd)


def test_empty_folder_and_missing_path(store, tmp_path, write):
    project = store.create_project("p", "image-classification", kind="image", target="label")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no supported files found in .*empty"):
        import_path(store, project, tmp_path / "empty")
    write(tmp_path / "notes" / "readme.md", "hi")
    with pytest.raises(ValueError, match="no supported files found"):
        import_path(store, project, tmp_path / "notes")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        import_path(store, project, tmp_path / "nowhere")


def test_task_that_does_not_match_the_data(store, tmp_path, write, make_images, gen):
    write(tmp_path / "v" / "a.jpg", gen.jpeg())
    write(tmp_path / "v" / "a.xml", "<annotation><filename>a.jpg</filename></annotation>")
    text = store.create_project("t", "text-classification", kind="text", target="label")
    with pytest.raises(ValueError, match="data with boxes.*text-classification"):
        import_path(store, text, tmp_path / "v")
    make_images(tmp_path / "imgs", {"a": 1})
    with pytest.raises(ValueError, match="CSV"):
        import_path(store, text, tmp_path / "imgs")
    sound = store.create_project("s", "sound-classification", kind="audio", target="label")
    with pytest.raises(ValueError, match="needs audio files"):
        import_path(store, sound, tmp_path / "imgs")
    images = store.create_project("i", "image-classification", kind="image", target="label")
    with pytest.raises(ValueError, match="CSV table of texts.*make a text project"):
        import_path(store, images, write(tmp_path / "t.csv", "text,label\na,b\n"))
    assert store.stats(text)["samples"] == store.stats(images)["samples"] == 0


def test_truncated_and_fake_wav(store, tmp_path, write, gen):
    write(tmp_path / "a" / "x" / "ok.wav", gen.wav())
    write(tmp_path / "a" / "x" / "cut.wav", gen.wav(4000)[:3000])
    write(tmp_path / "a" / "x" / "fake.wav", "not audio")
    project = store.create_project("s", "sound-classification", kind="audio", target="label")
    report = import_path(store, project, tmp_path / "a")
    reasons = _reasons(report)
    assert report.added == 1 and "truncated" in reasons["x/cut.wav"] and "WAV" in reasons["x/fake.wav"]


def test_a_table_of_values_is_not_called_texts(store, tmp_path, write):
    """A table like titanic.csv in an image project: the message says it is a table of values, and does
    not suggest a text project (it holds no texts)."""
    images = store.create_project("i2", "image-classification", kind="image", target="label")
    table = write(
        tmp_path / "titanic.csv", "PassengerId,Survived,Pclass,Name,Sex,Age\n1,0,3,Braund,male,22\n"
    )
    with pytest.raises(ValueError, match="table of values") as error:
        import_path(store, images, table)
    assert "text project" not in str(error.value) and "Survived" in str(error.value)

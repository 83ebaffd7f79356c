"""Imports of the real benchmark sets in /work/shared/benchdata (small; a few seconds in all)."""

import csv
from collections import Counter

from modeldesk.datasets import detect_format, import_path


def test_sign_digits_folder_per_class_with_labels_csv(store, benchdata):
    root = benchdata / "sign_digits"
    assert detect_format(root) == "folder"  # labels.csv beside the class folders does not confuse it
    project = store.create_project("signs", "image-classification", kind="image", target="label")
    report = import_path(store, project, root)
    with open(root / "labels.csv", newline="") as handle:
        expected = Counter(row["label"] for row in csv.DictReader(handle))
    assert report.added == 1026 and not report.failed
    stats = store.stats(project)
    assert stats["samples"] == 1026 and stats["labels"] == dict(expected) and len(expected) == 10
    big = [s for s in store.samples(project) if s.width == 3024]
    assert big and all(s.height == 3024 for s in big)  # the phone photo(s), decoded in draft mode
    assert stats["splits"]["unassigned"] == 0


def test_raccoon_voc(store, benchdata):
    project = store.create_project("raccoons", "object-detection", kind="image", target="boxes")
    report = import_path(store, project, benchdata / "raccoon_voc")
    assert report.format == "voc" and report.added == 103 and report.boxes == 112 and not report.failed
    assert store.stats(project)["boxes"] == 112
    with open(benchdata / "raccoon_voc" / "boxes.csv", newline="") as handle:
        first = next(csv.DictReader(handle))
    sample = next(s for s in store.samples(project) if s.source == first["filename"])
    box = sample.boxes[0]
    assert (sample.width, sample.height) == (int(first["width"]), int(first["height"]))
    assert (box.x0, box.y0, box.x1, box.y1) == tuple(
        float(first[k]) for k in ("xmin", "ymin", "xmax", "ymax")
    )


def test_fsdd_audio(store, benchdata):
    project = store.create_project("digits", "sound-classification", kind="audio", target="label")
    report = import_path(store, project, benchdata / "fsdd_audio")
    assert report.added == 1493 and not report.failed
    stats = store.stats(project)
    assert len(stats["labels"]) == 10 and sum(stats["labels"].values()) == 1493
    durations = [s.duration for s in store.samples(project, limit=50)]
    assert all(0.1 < d < 2.5 for d in durations)


def test_text_sets_merge_duplicate_texts(store, benchdata):
    for name, labels in (("waimai10k_zh", {"0", "1"}), ("sms_spam_en", {"ham", "spam"})):
        project = store.create_project(name, "text-classification", kind="text", target="label")
        report = import_path(store, project, benchdata / name / "data.csv")
        with open(benchdata / name / "data.csv", encoding="utf-8", newline="") as handle:
            rows = sum(1 for _ in csv.DictReader(handle))
        assert report.added + report.duplicates == rows and not report.failed
        assert set(store.labels(project)) == labels
        assert store.stats(project)["samples"] == report.added
    assert report.duplicates > 100  # sms_spam_en repeats messages

"""The SQLite store: projects, labels, samples, annotations, splits, models, threads."""

import sqlite3
import threading
from collections import Counter

import pytest

from modeldesk.datasets import Box, NewSample, Store
from modeldesk.datasets.media import sha256_bytes
from modeldesk.datasets.schema import SCHEMA_VERSION


def _add(store, project, n, labels=None, kind="text"):
    name = getattr(project, "name", project)
    items = [
        NewSample(
            kind=kind,
            content_hash=sha256_bytes(f"{name}-{i}".encode()),
            source=f"s{i}",
            text=f"text {i}",
            labels=[labels[i % len(labels)]] if labels else [],
        )
        for i in range(n)
    ]
    return [sid for sid, _ in store.add_samples(project, items)]


def test_projects_create_list_get_delete(store):
    p = store.create_project(
        "pets", "image-classification", kind="image", target="label", labels=["cat", "dog"]
    )
    assert p.task == "image-classification" and p.kind == "image"
    assert store.get_project("pets") == p == store.get_project(p.id)
    assert [q.name for q in store.list_projects()] == ["pets"]
    assert store.labels("pets") == ["cat", "dog"]
    with pytest.raises(ValueError, match="already exists"):
        store.create_project("pets", "image-classification", kind="image", target="label")
    with pytest.raises(ValueError, match="unknown kind of sample"):
        store.create_project("x", "regression", kind="table", target="label")
    with pytest.raises(ValueError, match="unknown kind of annotation"):
        store.create_project("x", "regression", kind="image", target="number")
    with pytest.raises(KeyError, match="no project named 'nope'"):
        store.get_project("nope")
    store.delete_project("pets")
    assert store.list_projects() == []


def test_schema_version_wal_and_foreign_keys(store):
    conn = sqlite3.connect(store.db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 1
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    assert store._conn().execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.integrity_check() == "ok"


def test_reopen_keeps_data(tmp_path):
    with Store(tmp_path) as s:
        p = s.create_project("t", "text-classification", kind="text", target="label")
        _add(s, p, 3, ["a"])
    with Store(tmp_path) as s:
        assert s.stats("t")["samples"] == 3


def test_newer_schema_is_refused(tmp_path):
    Store(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "workspace.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(RuntimeError, match="newer ModelDesk"):
        Store(tmp_path)


def test_labels_rename_merge_delete(store):
    p = store.create_project("t", "text-classification", kind="text", target="label")
    a, b, c = _add(store, p, 3, ["Dog", "dog", "cat"])
    store.rename_label(p, "Dog", "dog")  # merge into the existing label
    assert store.labels(p) == ["cat", "dog"]
    assert store.get_sample(a).labels == ["dog"]
    store.rename_label(p, "cat", "kitten")
    assert store.get_sample(c).labels == ["kitten"]
    store.delete_label(p, "dog")
    assert store.get_sample(a).labels == [] and store.get_sample(b).labels == []
    assert store.stats(p)["labeled"] == 1
    with pytest.raises(KeyError):
        store.delete_label(p, "dog")


def test_samples_filters_and_paging(store):
    p = store.create_project("t", "text-classification", kind="text", target="label")
    ids = _add(store, p, 10, ["a", "b"])
    store.set_label(ids[0], None)
    assert store.sample_ids(p) == ids
    assert store.sample_ids(p, unlabeled=True) == [ids[0]]
    assert len(store.sample_ids(p, unlabeled=False)) == 9
    assert store.sample_ids(p, label="b") == ids[1::2]
    assert [s.id for s in store.samples(p, offset=2, limit=3)] == ids[2:5]
    assert [s.id for s in store.samples(p, ids=[ids[3], ids[7]])] == [ids[3], ids[7]]
    assert store.samples(p, split="unassigned", ids=[ids[0]])[0].split is None
    with pytest.raises(ValueError, match="unknown split"):
        store.samples(p, split="holdout")
    with pytest.raises(KeyError):
        store.get_sample(10**6)


def test_duplicates_are_not_inserted_twice(store):
    p = store.create_project("t", "text-classification", kind="text", target="label")
    item = NewSample(kind="text", content_hash="h" * 64, source="x", text="x", labels=["a"])
    assert store.add_samples(p, [item, item])[1][1] is False
    assert store.stats(p)["samples"] == 1


def test_set_label_assigns_a_split_and_set_tags_and_boxes(store):
    p = store.create_project("t", "text-classification", kind="text", target="label")
    (sid,) = _add(store, p, 1)
    assert store.get_sample(sid).split is None
    store.set_label(sid, "new-label")
    sample = store.get_sample(sid)
    assert sample.labels == ["new-label"] and sample.split == "train"
    assert "new-label" in store.labels(p)
    store.set_tags(sid, ["x", "y", "x"])
    assert store.get_sample(sid).labels == ["x", "y"]
    d = store.create_project("d", "object-detection", kind="image", target="boxes")
    (bid,) = _add(store, d, 1, kind="image")
    store.set_boxes(bid, [Box("car", 1, 2, 30, 40), Box("person", 5, 5, 6, 9)])
    got = store.get_sample(bid)
    assert got.boxes == [Box("car", 1, 2, 30, 40), Box("person", 5, 5, 6, 9)]
    assert got.labels == ["car", "person"]
    assert store.stats(d)["boxes"] == 2 and store.stats(d)["labels"] == {"car": 1, "person": 1}
    with pytest.raises(ValueError, match="no area"):
        store.set_boxes(bid, [Box("car", 5, 5, 5, 9)])


def test_stats_keys(store):
    p = store.create_project("t", "text-classification", kind="text", target="label", labels=["unused"])
    _add(store, p, 4, ["a"])
    stats = store.stats(p)
    assert {"samples", "labeled", "labels", "boxes", "splits"} <= set(stats)
    assert stats["labels"] == {"a": 4, "unused": 0}
    assert sum(stats["splits"].values()) == 4 and set(stats["splits"]) == {
        "train",
        "val",
        "test",
        "unassigned",
    }


def test_splits_are_stratified_deterministic_and_stable(tmp_path):
    def run(root, n):
        with Store(root) as s:
            p = s.create_project("t", "text-classification", kind="text", target="label")
            _add(s, p, n, ["a", "a", "a", "b"])
            s.assign_splits(p)
            return {x.content_hash: x.split for x in s.samples(p)}, s

    first, _ = run(tmp_path / "one", 400)
    again, _ = run(tmp_path / "two", 400)
    assert first == again  # deterministic
    counts = Counter(first.values())
    assert counts["train"] == 280 and counts["val"] == 60 and counts["test"] == 60
    with Store(tmp_path / "one") as s:
        by_label = Counter((x.labels[0], x.split) for x in s.samples("t"))
        assert by_label[("b", "val")] == 15 and by_label[("b", "test")] == 15  # 100 b: 70/15/15
        more = [
            NewSample(
                kind="text",
                content_hash=sha256_bytes(f"more{i}".encode()),
                source="m",
                text=f"m{i}",
                labels=["b"],
            )
            for i in range(50)
        ]
        s.add_samples("t", more)
        s.assign_splits("t")
        after = {x.content_hash: x.split for x in s.samples("t")}
        assert all(after[h] == split for h, split in first.items())  # nothing moved
        assert Counter(x.split for x in s.samples("t", label="b"))["train"] == 105


def test_first_sample_of_a_class_goes_to_train(store):
    p = store.create_project("t", "text-classification", kind="text", target="label")
    _add(store, p, 3, ["a", "b", "c"])
    store.assign_splits(p)
    assert {s.split for s in store.samples(p)} == {"train"}


def test_models_and_predictions(store):
    p = store.create_project("t", "text-classification", kind="text", target="label")
    ids = _add(store, p, 2, ["a"])
    store.add_model(p, "m1", "/models/m1.onnx", "text-fast", {"accuracy": 0.9})
    assert store.get_model("m1")["metrics"] == {"accuracy": 0.9}
    assert [m["id"] for m in store.list_models(p)] == ["m1"]
    store.save_predictions("m1", [(ids[0], "a", 0.8), (ids[1], "b", 0.6)])
    store.save_predictions("m1", [(ids[1], "a", 0.7)])
    assert store.predictions("m1") == {ids[0]: ("a", 0.8), ids[1]: ("a", 0.7)}
    with pytest.raises(KeyError):
        store.get_model("m2")
    with pytest.raises(KeyError):
        store.save_predictions("m2", [])


def test_reads_from_other_threads_while_writing(store):
    p = store.create_project("t", "text-classification", kind="text", target="label")
    errors, seen = [], []

    def reader():
        try:
            for _ in range(30):
                seen.append(len(store.sample_ids(p)))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for batch in range(10):
        store.add_samples(
            p,
            [
                NewSample(
                    kind="text", content_hash=sha256_bytes(f"{batch}-{i}".encode()), source="x", text="x"
                )
                for i in range(20)
            ],
        )
    for t in threads:
        t.join()
    assert not errors and store.stats(p)["samples"] == 200
    assert seen and all(n % 20 == 0 for n in seen)  # readers only ever see whole batches


def test_cleanup_removes_leftovers_of_killed_work_only_when_old(store):
    p = store.create_project("t", "image-classification", kind="image", target="label")
    kept_hash, kept = store.media.put(b"kept", ".jpg")
    store.add_samples(p, [NewSample(kind="image", content_hash=kept_hash, source="k", ext=".jpg")])
    _, orphan = store.media.put(b"orphan", ".jpg")
    partial = orphan.parent / ".tmp-abc"
    partial.write_bytes(b"half")
    (store.tmp_dir / "unzip-x").mkdir(parents=True)
    assert store.cleanup() == {"temp_files": 0, "unzip_folders": 0, "orphan_media": 0}  # all too new
    assert store.cleanup(max_age_s=-1) == {"temp_files": 1, "unzip_folders": 1, "orphan_media": 1}
    assert kept.exists() and not orphan.exists() and not partial.exists()


def test_datasets_imports_no_qt_and_no_other_modeldesk_package():
    import subprocess
    import sys

    code = (
        "import sys, modeldesk.datasets, modeldesk.datasets.exporting; "
        "bad = [m for m in sys.modules if m.startswith(('PySide', 'PyQt', 'modeldesk.')) "
        "and not m.startswith('modeldesk.datasets') and m not in ('modeldesk.fileio', 'modeldesk.safejson', 'modeldesk.outlines')]; "  # shared root modules
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_labelling_one_by_one_splits_like_a_bulk_assignment(tmp_path):
    results = []
    for one_by_one in (True, False):
        with Store(tmp_path / str(one_by_one)) as s:
            p = s.create_project("t", "text-classification", kind="text", target="label")
            ids = _add(s, p, 60)
            order = sorted(s.samples(p), key=lambda x: x.content_hash)
            for i, sample in enumerate(order):
                label = "a" if i % 3 else "b"
                if one_by_one:
                    s.set_label(sample.id, label)
                else:
                    s.add_samples(
                        p,
                        [
                            NewSample(
                                kind="text",
                                content_hash=sample.content_hash,
                                source="x",
                                text="x",
                                labels=[label],
                            )
                        ],
                        merge_labels=True,
                    )
            if not one_by_one:
                s.assign_splits(p)
            results.append({x.content_hash: (x.labels, x.split) for x in s.samples(p)})
            assert len(ids) == 60
    assert results[0] == results[1]
    assert Counter(split for _, split in results[0].values()) == {"train": 42, "val": 9, "test": 9}


def test_ids_for_hashes_maps_only_the_projects_samples(tmp_path):
    from modeldesk.datasets import NewSample, Store

    store = Store(tmp_path)
    one = store.create_project("one", "text-classification", kind="text", target="label")
    two = store.create_project("two", "text-classification", kind="text", target="label")
    store.add_samples(one, [NewSample(kind="text", content_hash="a" * 64, text="hello", source="x")])
    store.add_samples(two, [NewSample(kind="text", content_hash="b" * 64, text="world", source="y")])
    (sample,) = store.samples(one)
    assert store.ids_for_hashes(one, ["a" * 64, "b" * 64, "c" * 64]) == {"a" * 64: sample.id}
    store.close()


def test_version_1_workspace_migrates_task_data_into_projects(tmp_path):
    """A workspace from before projects recorded kind and target gets both from its task."""
    import sqlite3

    from modeldesk.datasets.schema import MIGRATIONS

    conn = sqlite3.connect(tmp_path / "workspace.db")
    conn.executescript(MIGRATIONS[0])
    conn.executemany(
        "INSERT INTO projects(name, task, created) VALUES (?, ?, 0)",
        [
            ("boxes", "object-detection"),
            ("clips", "sound-classification"),
            ("tags", "image-multilabel"),
            ("texts", "text-classification"),
        ],
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Store(tmp_path) as store:
        found = {p.name: (p.kind, p.target) for p in store.list_projects()}
    assert found == {
        "boxes": ("image", "boxes"),
        "clips": ("audio", "label"),
        "tags": ("image", "tags"),
        "texts": ("text", "label"),
    }


def test_text_samples_get_a_thumbnail_card_with_their_words(store, tmp_path):
    from PIL import Image

    from modeldesk.datasets import import_path

    table = tmp_path / "t.csv"
    table.write_text("text,label\n非常好吃，下次还点 and fast delivery,good\n", encoding="utf-8")
    p = store.create_project("cards", "text-classification", kind="text", target="label")
    import_path(store, p, table)
    (sample,) = store.samples(p)
    with Image.open(store.thumbnail(sample.id, 160)) as image:
        assert image.size == (160, 160)
        assert min(image.convert("L").getdata()) < 100  # some dark text was drawn


def test_rename_a_project(tmp_path):
    store = Store(tmp_path)
    store.create_project("a", "image-classification", kind="image", target="label")
    store.create_project("b", "image-classification", kind="image", target="label")
    renamed = store.rename_project("a", "c")
    assert renamed.name == "c" and [p.name for p in store.list_projects()] == ["c", "b"]
    with pytest.raises(ValueError, match="already exists"):
        store.rename_project("c", "b")
    store.close()

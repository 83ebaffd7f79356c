"""Segmentation masks stored in a project: the Workspace's ``sample_mask``/``set_sample_mask``."""

import sqlite3

import numpy as np
import pytest
from PIL import Image

from modeldesk.app.workspace import Workspace
from modeldesk.datasets import Store
from modeldesk.datasets.masks import VOID, MaskError, mask_path
from modeldesk.datasets.schema import MIGRATIONS, SCHEMA_VERSION, _statements


@pytest.fixture
def ws(tmp_path):
    workspace = Workspace(tmp_path / "ws", cleanup=False)
    yield workspace
    workspace.close()


def _photos(folder, n=2, size=(40, 30)):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.new("RGB", size, (30 * i, 100, 200)).save(folder / f"p{i}.png")
    return folder


def _project(ws, tmp_path, classes=("car", "road", "sky")):
    ws.store.create_project("streets", "segmentation", labels=classes, kind="image", target="mask")
    ws.import_data("streets", _photos(tmp_path / "photos"), format="flat")
    return ws.sample_ids("streets")


def _mask(classes_present=(0, 2)):
    mask = np.full((30, 40), VOID, np.uint8)
    mask[:10] = classes_present[0]
    mask[20:, 5:25] = classes_present[1]
    return mask


def test_a_mask_round_trips_and_labels_its_sample(ws, tmp_path):
    first, second = _project(ws, tmp_path)
    assert ws.sample_mask(first) is None
    ws.set_sample_mask(first, _mask())
    got = ws.sample_mask(first)
    assert got.dtype == np.uint8 and got.shape == (30, 40)
    np.testing.assert_array_equal(got, _mask())
    stats = ws.stats("streets")
    assert stats["labeled"] == 1 and stats["labels"] == {"car": 1, "road": 0, "sky": 1}
    assert ws.sample_ids("streets", unlabeled=True) == [second]
    assert ws.project("streets").target == "mask"


def test_masks_keep_their_classes_when_the_class_list_changes(ws, tmp_path):
    first, _ = _project(ws, tmp_path)
    ws.set_sample_mask(first, _mask((0, 2)))  # car on top, sky below
    ws.add_class("streets", "bicycle")  # sorts first: every index moves up by one
    assert ws.labels("streets") == ["bicycle", "car", "road", "sky"]
    np.testing.assert_array_equal(ws.sample_mask(first), _mask((1, 3)))
    ws.rename_class("streets", "sky", "air")  # sorts first now; the pixels follow the class
    assert ws.labels("streets") == ["air", "bicycle", "car", "road"]
    np.testing.assert_array_equal(ws.sample_mask(first), _mask((2, 0)))
    ws.delete_class("streets", "car")  # its pixels become "not labeled"
    mask = ws.sample_mask(first)
    assert (mask[:10] == VOID).all() and (mask[20:, 5:25] == 0).all()


def test_merging_a_class_into_another_gives_its_pixels_to_that_class(ws, tmp_path):
    first, second = _project(ws, tmp_path)  # car 0, road 1, sky 2
    ws.set_sample_mask(first, _mask((0, 2)))  # car on top, sky below
    ws.set_sample_mask(second, _mask((1, 0)))  # road on top, car below
    ws.rename_class("streets", "car", "road")  # a merge: car's pixels are road's now
    assert ws.labels("streets") == ["road", "sky"]
    np.testing.assert_array_equal(ws.sample_mask(first), _mask((0, 1)))
    np.testing.assert_array_equal(ws.sample_mask(second), _mask((0, 0)))
    ws.rename_class("streets", "road", "sky")  # merged again: the first merge follows
    np.testing.assert_array_equal(ws.sample_mask(second), _mask((0, 0)))
    ws.add_class("streets", "bus")  # a new class never takes a merged class's id (and pixels)
    assert ws.labels("streets") == ["bus", "sky"]
    np.testing.assert_array_equal(ws.sample_mask(first), _mask((1, 1)))
    np.testing.assert_array_equal(ws.sample_mask(second), _mask((1, 1)))
    from modeldesk.app.pipeline import labeled_samples  # what training reads

    targets = [s.target.read() for s in labeled_samples(ws.store, ws.project("streets"))]
    np.testing.assert_array_equal(targets[0], _mask((1, 1)))
    assert ws.stats("streets")["labels"] == {"bus": 0, "sky": 2}


def test_bad_masks_are_refused_with_the_reason(ws, tmp_path):
    first, _ = _project(ws, tmp_path)
    with pytest.raises(MaskError, match="40x30"):
        ws.set_sample_mask(first, np.zeros((40, 30), np.uint8))
    with pytest.raises(MaskError, match="value 7 is not a class"):
        ws.set_sample_mask(first, np.full((30, 40), 7, np.uint8))
    with pytest.raises(MaskError, match="integers"):
        ws.set_sample_mask(first, np.zeros((30, 40), np.float32))
    assert ws.sample_mask(first) is None and ws.stats("streets")["labeled"] == 0


def test_an_empty_mask_clears_the_label(ws, tmp_path):
    first, _ = _project(ws, tmp_path)
    ws.annotate(first, "mask", _mask())
    path = mask_path(ws.store, ws.store.get_sample(first))
    assert path.is_file() and not path.with_suffix(".tmp").exists()
    ws.set_sample_mask(first, np.full((30, 40), VOID, np.uint8))
    assert ws.sample_mask(first) is None and not path.exists()
    assert ws.stats("streets")["labeled"] == 0


def test_a_new_project_never_inherits_a_deleted_projects_masks(ws, tmp_path):
    first, _ = _project(ws, tmp_path)
    ws.set_sample_mask(first, _mask())
    ws.delete_project("streets")  # its id is handed out again to the next project
    again = _project(ws, tmp_path)
    sample = ws.store.get_sample(again[0])
    assert mask_path(ws.store, sample).is_file()  # the old file is still there until cleanup
    assert ws.sample_mask(again[0]) is None


def test_an_older_workspace_is_opened_for_mask_projects(tmp_path):
    root = tmp_path / "old"
    root.mkdir()
    conn = sqlite3.connect(root / "workspace.db", isolation_level=None)
    for script in MIGRATIONS[:2]:
        for statement in _statements(script):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    conn.execute(
        "INSERT INTO projects(name, task, created, target) VALUES ('pets', 'object-detection', 1, 'boxes')"
    )
    conn.execute("INSERT INTO labels(project_id, name) VALUES (1, 'cat')")
    conn.close()
    store = Store(root)
    try:
        assert store.get_project("pets").target == "boxes" and store.labels("pets") == ["cat"]
        store.create_project("streets", "segmentation", kind="image", target="mask")
        assert store.get_project("streets").target == "mask"
        version = store._conn().execute("PRAGMA user_version").fetchone()[0]
        assert version == SCHEMA_VERSION and store.integrity_check() == "ok"
    finally:
        store.close()


def test_a_class_keeps_its_colour_when_classes_are_added_renamed_or_merged(ws, tmp_path):
    from modeldesk.app.mask_views import project_colors

    first, _ = _project(ws, tmp_path)  # car, road, sky
    before = dict(zip(ws.labels("streets"), project_colors(ws, "streets")))
    assert len(set(before.values())) == 3
    ws.add_class("streets", "bicycle")  # sorts first: every index moves, no colour does
    after = dict(zip(ws.labels("streets"), project_colors(ws, "streets")))
    assert {k: after[k] for k in before} == before
    assert after["bicycle"] not in before.values()
    ws.rename_class("streets", "sky", "air")
    renamed = dict(zip(ws.labels("streets"), project_colors(ws, "streets")))
    assert renamed["air"] == before["sky"]
    ws.rename_class("streets", "car", "road")  # a merge: the merged pixels take road's colour
    merged = dict(zip(ws.labels("streets"), project_colors(ws, "streets")))
    assert merged["road"] == before["road"] and "car" not in merged
    ws.add_class("streets", "bus")  # takes the free colour (car's), moves nobody
    final = dict(zip(ws.labels("streets"), project_colors(ws, "streets")))
    assert final["bus"] == before["car"] and final["air"] == before["sky"]

    from modeldesk.app.pipeline import labeled_samples  # training reads the colours with the masks

    ws.set_sample_mask(first, np.zeros((30, 40), np.uint8))
    (sample,) = labeled_samples(ws.store, ws.project("streets"))
    from modeldesk.trainers.segmentation.trainer import class_color_field

    assert class_color_field([sample], sample.target.classes)["colors"] == [
        final[name] for name in sample.target.classes
    ]


def test_a_mask_comparison_half_says_which_it_is():
    """Each half of the Evaluate page's pair carries a dark tag with its name in the top left corner;
    the rest of the picture is left as it was."""
    from PIL import Image

    from modeldesk.app.mask_views import caption

    picture = Image.new("RGBA", (120, 90), (200, 220, 240, 255))
    caption(picture, "labeled")
    pixels = np.asarray(picture)
    assert tuple(pixels[1, 1]) == (32, 32, 32, 255)  # the tag
    assert (pixels[:12, :50, :3] == 255).all(axis=-1).any()  # white letters on it
    assert tuple(pixels[60, 100]) == (200, 220, 240, 255)  # the photo elsewhere

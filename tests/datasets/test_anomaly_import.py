"""The inspection layout: good/ (ok/, normal/), defect/<kind>/ (ng/), masks/ beside them."""

from __future__ import annotations

import pytest
from PIL import Image

from modeldesk.datasets import Store, import_path
from modeldesk.datasets.anomaly_folders import mask_files
from modeldesk.datasets.detect import detect_format

from .conftest import BENCHDATA


def _photo(path, value=120, mode="L"):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, (40 + value % 7, 30), value).save(path)


@pytest.mark.parametrize("good, bad", [("good", "defect"), ("OK", "NG"), ("normal", "defects")])
def test_spellings_import_good_and_defect_kinds(tmp_path, good, bad):
    root = tmp_path / "parts"
    for i in range(3):
        _photo(root / good / f"g{i}.png", 100 + i)
    _photo(root / bad / "crack" / "c0.png", 10)
    _photo(root / bad / "hole" / "h0.png", 20)
    _photo(root / "masks" / "c0.png", 255)
    assert detect_format(root) == "inspection"
    store = Store(tmp_path / "ws")
    project = store.create_project("p", "anomaly-detection", kind="image", target="label")
    report = import_path(store, project, root)
    assert report.format == "inspection" and report.added == 5 and not report.failed
    assert report.labels == {"good": 3, "crack": 1, "hole": 1}  # the mask is not a sample
    sources = [s.source for s in store.samples(project)]
    assert set(mask_files(root, sources)) == {f"{bad}/crack/c0.png"}


def test_a_plain_good_and_bad_folder_stays_a_folder_per_class(tmp_path):
    root = tmp_path / "classes"
    _photo(root / "good" / "a.png", 1)
    _photo(root / "bad" / "b.png", 2)
    assert detect_format(root) == "folder"


def test_a_folder_holding_only_good_photos_imports_them_as_good(tmp_path):
    root = tmp_path / "line"
    for i in range(2):
        _photo(root / "good" / f"g{i}.png", 50 + i)
    store = Store(tmp_path / "ws")
    project = store.create_project("p", "anomaly-detection", kind="image", target="label")
    assert import_path(store, project, root).labels == {"good": 2}


@pytest.mark.skipif(not (BENCHDATA / "magnetic_tile").is_dir(), reason="benchdata not present")
def test_magnetic_tile_is_recognised():
    root = BENCHDATA / "magnetic_tile"
    assert detect_format(root) == "inspection"
    assert mask_files(root, ["defect/crack/" + next((root / "defect" / "crack").iterdir()).name])

"""Large photos are segmented in tiles: small things keep their detail, memory stays bounded."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from modeldesk.app.workspace import Workspace
from modeldesk.deploy import Predictor
from modeldesk.deploy.mask_tiles import MAX_TILES, blend_tiles, grid_shape, grid_to_mask, plan_tiles

from .test_segmentation import TINY

CLASSES = ("background", "spot")
SIZE = (2000, 1500)


def _large_scene(rng) -> tuple[np.ndarray, np.ndarray]:
    """A 2000 x 1500 textured photo with a few small bright spots (radius 25-35 px: under 2 % of the
    side, so a 128 px squash of the whole photo leaves each about 4 px across)."""
    width, height = SIZE
    photo = rng.normal(110, 14, (height, width, 3)).clip(0, 255)
    mask = np.zeros((height, width), np.uint8)
    for _ in range(6):
        cy, cx, r = rng.integers(60, height - 60), rng.integers(60, width - 60), rng.integers(25, 36)
        y0, x0 = cy - r, cx - r
        yy, xx = np.mgrid[y0 : cy + r + 1, x0 : cx + r + 1]
        inside = np.hypot(yy - cy, xx - cx) <= r
        photo[y0 : cy + r + 1, x0 : cx + r + 1][inside] = (235, 215, 60)
        mask[y0 : cy + r + 1, x0 : cx + r + 1][inside] = 1
    return photo.astype(np.uint8), mask


def _write(root: Path, n: int, seed: int) -> Path:
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    rng = np.random.default_rng(seed)
    for i in range(n):
        photo, mask = _large_scene(rng)
        Image.fromarray(photo).save(root / "images" / f"field_{i:02d}.png", compress_level=1)
        Image.fromarray(mask, mode="L").save(root / "masks" / f"field_{i:02d}.png")
    (root / "classes.txt").write_text("".join(f"{i} {c}\n" for i, c in enumerate(CLASSES)), encoding="utf-8")
    return root


def _spot_iou(predicted: np.ndarray, truth: np.ndarray) -> float:
    found, spot = predicted == CLASSES.index("spot"), truth == 1
    return float((found & spot).sum() / max((found | spot).sum(), 1))


def test_a_large_photo_is_cut_into_a_bounded_number_of_overlapping_tiles():
    plan = plan_tiles(*SIZE, 128)
    assert plan is not None and len(plan.boxes) <= MAX_TILES
    covered = np.zeros(SIZE[::-1], bool)
    for left, top, right, bottom in plan.boxes:
        assert 0 <= left < right <= SIZE[0] and 0 <= top < bottom <= SIZE[1]
        covered[top:bottom, left:right] = True
    assert covered.all()
    assert plan.xs[1] - plan.xs[0] < plan.side  # neighbours overlap
    assert grid_shape(plan, 16)[0] * grid_shape(plan, 16)[1] <= MAX_TILES * 16 * 16 * 2  # blended grid
    assert plan_tiles(256, 200, 128) is None  # a photo near the input's size is taken whole


def test_blended_tiles_give_each_pixel_the_class_the_tiles_agree_on():
    plan = plan_tiles(900, 500, 100, factor=2.0)
    grid = 8
    # every tile says "class 1 left of x = 450, class 0 right of it", from its own position
    tiles = []
    for left, _top, right, _bottom in plan.boxes:
        centres = left + (np.arange(grid) + 0.5) * (right - left) / grid
        p1 = (centres < 450).astype(np.float32)
        tiles.append(np.stack([np.tile(1 - p1, (grid, 1)), np.tile(p1, (grid, 1))]))
    blended = blend_tiles(plan, tiles)
    mask = grid_to_mask(blended, plan.width, plan.height, rows=7)
    assert mask.shape == (500, 900)
    assert (mask[:, :430] == 1).all() and (mask[:, 470:] == 0).all()


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    root = tmp_path_factory.mktemp("large")
    return _write(root / "train", n=4, seed=1), _write(root / "probes", n=2, seed=9)


def _train(root: Path, data: Path):
    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.trainers.tasks import get_trainer

    ws = Workspace(root / "ws", cleanup=False)
    try:
        ws.create_project("fields", "segmentation")
        ws.import_data("fields", data)
        samples = labeled_samples(ws.store, ws.project("fields"))
        return get_trainer("segmentation").train(samples, TINY, root / "model", ws.paths.cache / "features")
    finally:
        ws.close()


def test_small_spots_in_large_photos_are_found_in_tiles_and_missed_whole(
    large, tmp_path, monkeypatch, served_bundle
):
    train, probes = large
    tiled = _train(tmp_path / "tiled", train)
    assert tiled.metrics["export_agreement"] >= 0.999, tiled.metrics  # the app's masks are the graph's
    predictor = Predictor(tiled.artifact_dir, device="cpu")
    assert predictor.artifact.card["tiles"]["max_tiles"] == MAX_TILES
    photos = sorted((probes / "images").iterdir())
    truths = [np.asarray(Image.open(probes / "masks" / p.name)) for p in photos]
    answers = predictor.predict([str(p) for p in photos])
    assert all(a["mask"].shape == SIZE[::-1] for a in answers)
    with_tiles = np.mean([_spot_iou(a["mask"], t) for a, t in zip(answers, truths)])
    # the deploy bundle, without ModelDesk, tiles the same way
    from modeldesk.deploy import build_bundle

    server = served_bundle(build_bundle(tiled.artifact_dir, tmp_path / "bundle"))
    answer = server.client(photos[0])
    assert answer.returncode == 0, answer.stderr
    bundled = json.loads(answer.stdout)["predictions"][0]
    shown = np.asarray(Image.open(io.BytesIO(base64.b64decode(bundled["mask_png"]))))
    np.testing.assert_array_equal(shown, answers[0]["mask"])

    from modeldesk.trainers.segmentation import tiles

    monkeypatch.setattr(tiles, "TILES", {**tiles.TILES, "factor": 1e9})  # never tiled: the photo squashed
    whole = _train(tmp_path / "whole", train)
    plain = Predictor(whole.artifact_dir, device="cpu").predict([str(p) for p in photos])
    without = np.mean([_spot_iou(a["mask"], t) for a, t in zip(plain, truths)])
    assert with_tiles > 0.4 and with_tiles > without + 0.2, (with_tiles, without)


def test_the_plan_counts_a_large_photos_tiles(large, tmp_path):
    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.trainers.segmentation.trainer import SegmentationTrainer

    train, _probes = large
    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("fields", "segmentation")
        ws.import_data("fields", train)
        samples = labeled_samples(ws.store, ws.project("fields"))
        plan = SegmentationTrainer().estimate(samples, TINY, ws.paths.cache / "features")["plan"]
    finally:
        ws.close()
    per_photo = len(plan_tiles(*SIZE, TINY.neck.size).boxes)
    assert plan["features_to_compute"] == len(samples) * per_photo > len(samples)

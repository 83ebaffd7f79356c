"""``outlines.mask_polygons``: polygons along the pixels' edges that paint the mask back exactly."""

from __future__ import annotations

import numpy as np

from modeldesk.datasets.seg_coco import polygon_mask
from modeldesk.outlines import VOID, mask_polygons


def _paint(polygons, shape, start: int) -> np.ndarray:
    out = np.full(shape, start, np.uint8)
    for value, points in polygons:
        out[polygon_mask([points], *shape)] = value
    return out


def test_random_masks_are_painted_back_exactly():
    rng = np.random.default_rng(0)
    for _ in range(150):
        height, width = (int(v) for v in rng.integers(1, 25, 2))
        mask = rng.integers(0, int(rng.integers(1, 5)), (height, width)).astype(np.uint8)
        got = _paint(mask_polygons(mask, skip_on_border=(0,)), mask.shape, 0)
        assert np.array_equal(got, mask)


def test_a_rectangle_is_four_corners_and_void_gets_none():
    mask = np.full((10, 12), VOID, np.uint8)
    mask[2:5, 3:9] = 1
    assert mask_polygons(mask) == [(1, [3.0, 2.0, 9.0, 2.0, 9.0, 5.0, 3.0, 5.0])]


def test_a_region_inside_a_hole_comes_after_the_region_around_it():
    mask = np.zeros((9, 9), np.uint8)
    mask[1:8, 1:8] = 1
    mask[3:6, 3:6] = 2
    mask[4, 4] = 1
    values = [value for value, _ in mask_polygons(mask, skip=(0,))]
    assert values == [1, 2, 1]

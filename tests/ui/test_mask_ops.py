"""The mask annotator's edits and assist, without Qt: brush, polygon, fill, undo, and the regions the
assist finds on photos made here."""

from __future__ import annotations

import numpy as np
import pytest

from modeldesk.ui.pages.label.mask_assist import region_at, region_in_box, superpixels
from modeldesk.ui.pages.label.mask_ops import (
    UNLABELED,
    MaskHistory,
    fill_at,
    fill_polygon,
    paint_segment,
    polygon_pixels,
)


def _centres(shape):
    rows, cols = np.mgrid[: shape[0], : shape[1]]
    return cols + 0.5, rows + 0.5


def _near_segment(shape, a, b, radius):
    """Pixels whose centre is within ``radius`` of the segment a-b (the brush's definition, written
    out independently: distance to the nearest point of the segment)."""
    x, y = _centres(shape)
    (ax, ay), (bx, by) = a, b
    length2 = (bx - ax) ** 2 + (by - ay) ** 2
    t = np.clip(((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / length2, 0, 1) if length2 else 0
    return np.hypot(x - (ax + t * (bx - ax)), y - (ay + t * (by - ay))) <= radius


def test_a_brush_stroke_sets_exactly_the_pixels_under_it():
    mask = np.full((40, 60), UNLABELED, np.uint8)
    mask[:, 50:] = 1  # another class that the stroke partly covers
    before = mask.copy()
    rect = paint_segment(mask, (10.3, 12.7), (47.9, 30.2), 7, 3)
    under = _near_segment(mask.shape, (10.3, 12.7), (47.9, 30.2), 3.5)
    assert under.sum() > 150
    assert (mask[under] == 3).all()
    assert np.array_equal(mask[~under], before[~under])  # nothing else changed
    r0, r1, c0, c1 = rect
    outside = np.ones(mask.shape, bool)
    outside[r0:r1, c0:c1] = False
    assert not (under & outside).any()  # the rectangle it reports holds the change


def test_the_eraser_sets_not_labeled_and_a_size_one_brush_still_draws():
    mask = np.full((20, 20), 2, np.uint8)
    paint_segment(mask, (5.0, 5.0), (15.0, 5.0), 3, UNLABELED)
    under = _near_segment(mask.shape, (5.0, 5.0), (15.0, 5.0), 1.5)
    assert (mask[under] == UNLABELED).all() and (mask[~under] == 2).all()
    tiny = np.full((10, 10), UNLABELED, np.uint8)
    paint_segment(tiny, (4.2, 6.9), (4.2, 6.9), 1, 0)
    assert tiny[6, 4] == 0 and (tiny != UNLABELED).sum() == 1


def test_a_rectangle_polygon_fills_exactly_its_pixels():
    mask = np.full((30, 40), UNLABELED, np.uint8)
    fill_polygon(mask, [(10, 5), (30, 5), (30, 20), (10, 20)], 4)
    expected = np.full_like(mask, UNLABELED)
    expected[5:20, 10:30] = 4
    assert np.array_equal(mask, expected)


def test_a_triangle_fills_the_pixels_whose_centres_it_holds():
    """Exact (tolerance 0) against a half-plane test at every pixel centre; the vertices are chosen so
    that no centre lies on an edge, where either answer would be right."""
    points = [(3.1, 2.2), (37.3, 9.6), (12.4, 27.8)]
    x, y = _centres((32, 42))
    inside = np.ones((32, 42), bool)
    for (ax, ay), (bx, by) in zip(points, points[1:] + points[:1]):
        inside &= (bx - ax) * (y - ay) - (by - ay) * (x - ax) > 0  # clockwise on screen: inside on the left
    assert inside.sum() > 200
    assert np.array_equal(polygon_pixels(points, (32, 42)), inside)


def test_a_polygon_of_a_circle_covers_its_area():
    """A 64-gon of radius 20: the filled count is within 2% of its area."""
    angles = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    points = np.stack([50 + 20 * np.cos(angles), 40 + 20 * np.sin(angles)], axis=1)
    area = 0.5 * 64 * 20 * 20 * np.sin(2 * np.pi / 64)
    assert abs(polygon_pixels(points, (80, 100)).sum() - area) / area < 0.02


def test_fill_fills_the_closed_region_only():
    mask = np.full((50, 50), UNLABELED, np.uint8)
    angles = np.linspace(0, 2 * np.pi, 40)
    ring = [(25 + 15 * np.cos(a), 25 + 15 * np.sin(a)) for a in angles]
    for a, b in zip(ring, ring[1:]):
        paint_segment(mask, a, b, 3, 1)  # a closed outline of class 1
    outline = mask == 1
    x, y = _centres(mask.shape)
    inner = (np.hypot(x - 25, y - 25) < 12) & ~outline
    outer = (np.hypot(x - 25, y - 25) > 18) & ~outline
    fill_at(mask, 25.5, 25.5, 2)
    assert (mask[inner] == 2).all()
    assert (mask[outer] == UNLABELED).all()
    assert (mask[outline] == 1).all()
    assert fill_at(mask, 25.5, 25.5, 2) is None  # already that class: nothing to do


def test_undo_and_redo_restore_each_mask_exactly():
    mask = np.full((30, 30), UNLABELED, np.uint8)
    history = MaskHistory()
    states = [mask.copy()]
    for value, (a, b) in enumerate((((2, 2), (20, 20)), ((25, 3), (4, 27)), ((10, 1), (10, 29)))):
        history.begin(mask)
        assert history.commit(mask, paint_segment(mask, a, b, 5, value))
        states.append(mask.copy())
    for expected in reversed(states[:-1]):
        assert history.undo(mask) is not None
        assert np.array_equal(mask, expected)
    assert history.undo(mask) is None and not history.can_undo
    for expected in states[1:]:
        history.redo(mask)
        assert np.array_equal(mask, expected)
    history.undo(mask)
    history.begin(mask)
    history.commit(mask, paint_segment(mask, (0, 0), (5, 5), 3, 7))
    assert not history.can_redo  # a new edit drops what was undone


def test_the_history_keeps_within_its_memory_limit():
    mask = np.zeros((100, 100), np.uint8)
    history = MaskHistory(limit_bytes=100 * 100 * 2 * 3)  # three whole-mask steps
    for value in range(1, 6):
        new = np.full_like(mask, value)
        history.record_replace(mask, new)
        mask = new
    undone = 0
    while history.undo(mask) is not None:
        undone += 1
    assert undone == 3 and (mask == 2).all()


def _photo(seed=0):
    """A textured grey street with a red disc (the object) on it, 240x320."""
    rng = np.random.default_rng(seed)
    photo = np.clip(rng.normal(110, 18, (240, 320, 3)), 0, 255)
    rows, cols = np.mgrid[:240, :320]
    disc = np.hypot(cols + 0.5 - 200, rows + 0.5 - 110) < 40
    photo[disc] = np.clip(rng.normal((200, 50, 45), 15, (disc.sum(), 3)), 0, 255)
    return photo.astype(np.uint8), disc


def _iou(a, b):
    return (a & b).sum() / (a | b).sum()


@pytest.mark.parametrize("margin", [6, 20])
def test_a_rough_box_finds_the_object(margin):
    photo, disc = _photo()
    box = (160 - margin, 70 - margin, 240 + margin, 150 + margin)
    region = region_in_box(photo, box, disc.shape)
    assert _iou(region, disc) > 0.85


def test_a_click_adds_a_region_inside_the_object():
    photo, disc = _photo(1)
    segments = superpixels(photo)
    assert 100 < segments.max() + 1 < 800
    region = region_at(segments, 200, 110, disc.shape)
    assert region.sum() > 50
    assert (region & disc).sum() / region.sum() > 0.9  # the region stays on the object
    assert region_at(segments, -1, 5, disc.shape) is None


def test_regions_scale_to_the_mask_of_a_larger_photo():
    """The assist works on a reduced copy of a large photo; its region comes back at full size."""
    photo, disc = _photo(2)
    big = np.repeat(np.repeat(photo, 3, axis=0), 3, axis=1)  # 720x960: reduced to 240x320
    big_disc = np.repeat(np.repeat(disc, 3, axis=0), 3, axis=1)
    region = region_in_box(big, (450, 180, 750, 480), big_disc.shape)
    assert region.shape == big_disc.shape and _iou(region, big_disc) > 0.85

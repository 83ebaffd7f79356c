"""Edits of a class mask, in numpy and without Qt: brush strokes, polygons, flood fill, undo.

A mask is an ``H x W`` uint8 array: a pixel's value is the index of its class in the project's class
list, :data:`UNLABELED` where nobody said. Pixel ``(row, col)`` covers the square
``[col, col + 1) x [row, row + 1)`` of image coordinates, so a shape covers a pixel when it covers the
pixel's centre ``(col + 0.5, row + 0.5)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The value of a pixel with no class.
UNLABELED = 255

#: A rectangle of pixels: ``(row0, row1, col0, col1)``, ends excluded.
Rect = tuple[int, int, int, int]


def _clip(rect, shape) -> Rect | None:
    r0, r1, c0, c1 = rect
    r0, c0 = max(0, int(r0)), max(0, int(c0))
    r1, c1 = min(shape[0], int(r1)), min(shape[1], int(c1))
    return (r0, r1, c0, c1) if r0 < r1 and c0 < c1 else None


def union(a: Rect | None, b: Rect | None) -> Rect | None:
    """The smallest rectangle holding ``a`` and ``b`` (either may be None)."""
    if a is None or b is None:
        return a or b
    return (min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3]))


def paint_segment(mask: np.ndarray, p0, p1, size: float, value: int) -> Rect | None:
    """Set to ``value`` every pixel whose centre lies within ``size / 2`` of the segment ``p0``-``p1``
    (points ``(x, y)`` in image coordinates); the pixels under the two points are always painted, so
    a size of 1 still draws. Returns the rectangle that may have changed, or None off the image."""
    (x0, y0), (x1, y1) = p0, p1
    radius = max(float(size), 1.0) / 2
    rect = _clip(
        (
            np.floor(min(y0, y1) - radius),
            np.ceil(max(y0, y1) + radius) + 1,
            np.floor(min(x0, x1) - radius),
            np.ceil(max(x0, x1) + radius) + 1,
        ),
        mask.shape,
    )
    if rect is None:
        return None
    r0, r1, c0, c1 = rect
    cy = np.arange(r0, r1)[:, None] + 0.5
    cx = np.arange(c0, c1)[None, :] + 0.5
    dx, dy = x1 - x0, y1 - y0
    length2 = dx * dx + dy * dy
    t = 0.0 if length2 == 0 else np.clip(((cx - x0) * dx + (cy - y0) * dy) / length2, 0.0, 1.0)
    inside = (cx - (x0 + t * dx)) ** 2 + (cy - (y0 + t * dy)) ** 2 <= radius * radius
    mask[r0:r1, c0:c1][inside] = value
    for x, y in (p0, p1):
        if 0 <= x < mask.shape[1] and 0 <= y < mask.shape[0]:
            mask[int(y), int(x)] = value
    return rect


def polygon_pixels(points, shape) -> np.ndarray:
    """A boolean ``shape`` array, True where a pixel's centre is inside the polygon ``points``
    (``(x, y)`` vertices in image coordinates, closed implicitly; even-odd rule)."""
    inside = np.zeros(shape, dtype=bool)
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if len(pts) < 3:
        return inside
    xa, ya = pts[:, 0], pts[:, 1]
    xb, yb = np.roll(xa, -1), np.roll(ya, -1)
    rows = np.arange(max(0, int(np.floor(ya.min()))), min(shape[0], int(np.ceil(ya.max())) + 1))
    for row in rows:
        y = row + 0.5
        crosses = (ya <= y) != (yb <= y)  # each edge counted once, horizontal edges never
        if not crosses.any():
            continue
        xs = np.sort(xa[crosses] + (y - ya[crosses]) * (xb[crosses] - xa[crosses]) / (yb - ya)[crosses])
        for left, right in zip(xs[::2], xs[1::2]):
            # centres c + 0.5 with left <= c + 0.5 < right
            c0 = max(0, int(np.ceil(left - 0.5)))
            c1 = min(shape[1], int(np.ceil(right - 0.5)))
            if c0 < c1:
                inside[row, c0:c1] = True
    return inside


def fill_polygon(mask: np.ndarray, points, value: int) -> Rect | None:
    """Set the pixels inside the polygon ``points`` to ``value``; the rectangle changed, or None."""
    inside = polygon_pixels(points, mask.shape)
    return set_where(mask, inside, value)


def flood_region(mask: np.ndarray, x: float, y: float) -> np.ndarray | None:
    """The pixels connected to ``(x, y)`` (up, down, left, right) that share its value, as a boolean
    array; None off the image. A region closed by a stroke of another class stops there."""
    from skimage.segmentation import flood  # imported on first use: it loads scipy

    col, row = int(np.floor(x)), int(np.floor(y))
    if not (0 <= row < mask.shape[0] and 0 <= col < mask.shape[1]):
        return None
    return flood(mask, (row, col), connectivity=1)


def fill_at(mask: np.ndarray, x: float, y: float, value: int) -> Rect | None:
    """Flood-fill the region at ``(x, y)`` with ``value``; the rectangle changed, or None."""
    region = flood_region(mask, x, y)
    if region is None or mask[int(y), int(x)] == value:
        return None
    return set_where(mask, region, value)


def set_where(mask: np.ndarray, where: np.ndarray, value: int) -> Rect | None:
    """Set the pixels where ``where`` is True to ``value``; the rectangle holding them, or None."""
    rows, cols = np.nonzero(where.any(axis=1))[0], np.nonzero(where.any(axis=0))[0]
    if not len(rows):
        return None
    mask[where] = value
    return (int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1)


@dataclass
class _Step:
    rect: Rect
    before: np.ndarray
    after: np.ndarray


class MaskHistory:
    """Undo and redo for one mask, kept as the changed rectangles (not whole copies), at most
    ``limit_bytes`` of them: the oldest steps go first.

    Usage: :meth:`begin` before an edit, :meth:`commit` with the rectangle it changed after it.
    """

    def __init__(self, limit_bytes: int = 64 * 2**20):
        self.limit_bytes = limit_bytes
        self._undo: list[_Step] = []
        self._redo: list[_Step] = []
        self._before: np.ndarray | None = None

    def clear(self) -> None:
        self._undo.clear()
        self._redo.clear()
        self._before = None

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def begin(self, mask: np.ndarray) -> None:
        """Remember ``mask`` as it is before an edit."""
        if self._before is None or self._before.shape != mask.shape:
            self._before = mask.copy()
        else:
            np.copyto(self._before, mask)

    def commit(self, mask: np.ndarray, rect: Rect | None) -> bool:
        """Record the edit since :meth:`begin` inside ``rect``; False (nothing kept) if no pixel changed."""
        if rect is None or self._before is None:
            return False
        r0, r1, c0, c1 = rect
        before, after = self._before[r0:r1, c0:c1], mask[r0:r1, c0:c1]
        if np.array_equal(before, after):
            return False
        self._push(_Step(rect, before.copy(), after.copy()))
        return True

    def record_replace(self, old: np.ndarray, new: np.ndarray) -> None:
        """Record that the whole mask went from ``old`` to ``new`` (Clear, a loaded suggestion)."""
        if old.shape == new.shape and not np.array_equal(old, new):
            self._push(_Step((0, old.shape[0], 0, old.shape[1]), old.copy(), new.copy()))

    def remap(self, lut: np.ndarray) -> None:
        """Renumber the classes in every kept step (``lut``: old value -> new value, 256 entries)."""
        for step in self._undo + self._redo:
            step.before, step.after = lut[step.before], lut[step.after]

    def _push(self, step: _Step) -> None:
        self._undo.append(step)
        self._redo.clear()
        while len(self._undo) > 1 and sum(s.before.nbytes * 2 for s in self._undo) > self.limit_bytes:
            self._undo.pop(0)

    def undo(self, mask: np.ndarray) -> Rect | None:
        """Put back the last edit in ``mask`` (in place); the rectangle changed, or None."""
        if not self._undo:
            return None
        step = self._undo.pop()
        self._redo.append(step)
        r0, r1, c0, c1 = step.rect
        mask[r0:r1, c0:c1] = step.before
        return step.rect

    def redo(self, mask: np.ndarray) -> Rect | None:
        """Do again the last undone edit; the rectangle changed, or None."""
        if not self._redo:
            return None
        step = self._redo.pop()
        self._undo.append(step)
        r0, r1, c0, c1 = step.rect
        mask[r0:r1, c0:c1] = step.after
        return step.rect

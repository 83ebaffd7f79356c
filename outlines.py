"""Class masks as polygons: the outline of every region along the pixels' own edges.

Each 4-connected region of a class becomes one polygon whose corners are pixel corners (integers, pixel
``(r, c)`` spans ``x`` from ``c`` to ``c + 1``), in the photo's pixel coordinates; collinear corners are
dropped, nothing else is. A polygon covers its region *with its holes filled*; the holes are regions of
other classes, listed after it (``mask_polygons`` orders the shapes by the area they enclose, largest
first). So painting the shapes in their order, a pixel taken when its centre is inside (the rule
LabelMe, YOLO-seg and COCO importers use, ``datasets.seg_coco.polygon_mask``), gives back the mask
exactly. numpy only: the deploy bundle copies this module verbatim.
"""

from __future__ import annotations

import numpy as np

#: the mask value of a pixel nobody labeled
VOID = 255


def _edges(region: np.ndarray) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """The directed boundary edges of ``region`` (x, y corners; the region on the edge's right in image
    coordinates, y down), as start corner -> end corners."""
    padded = np.pad(region, 1)
    inner = padded[1:-1, 1:-1]
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    # (neighbour offset, edge start offset, edge end offset) for top, right, bottom, left edges
    sides = (
        ((-1, 0), (0, 0), (1, 0)),
        ((0, 1), (1, 0), (1, 1)),
        ((1, 0), (1, 1), (0, 1)),
        ((0, -1), (0, 1), (0, 0)),
    )
    for (dr, dc), (sx, sy), (ex, ey) in sides:
        neighbour = padded[1 + dr : padded.shape[0] - 1 + dr, 1 + dc : padded.shape[1] - 1 + dc]
        rows, cols = np.nonzero(inner & ~neighbour)
        for r, c in zip(rows.tolist(), cols.tolist()):
            out.setdefault((c + sx, r + sy), []).append((c + ex, r + ey))
    return out


def _turn(previous: tuple[int, int], corner: tuple[int, int], options: list[tuple[int, int]]) -> int:
    """At a corner two regions touch diagonally, the edge that stays on the region just walked (the right
    turn, the region being on the right): so each loop outlines one 4-connected region."""
    dx, dy = corner[0] - previous[0], corner[1] - previous[1]
    right = (corner[0] - dy, corner[1] + dx)  # y down: turning right from (dx, dy) is (-dy, dx)
    return options.index(right) if right in options else len(options) - 1


def _loops(region: np.ndarray) -> list[list[tuple[int, int]]]:
    """Every boundary loop of ``region`` as its corners, collinear ones dropped."""
    edges = _edges(region)
    loops = []
    for start in list(edges):
        while start in edges:  # twice where two loops touch at the corner
            corners, previous, corner = [start], None, start
            while True:
                options = edges[corner]
                nxt = options.pop(_turn(previous, corner, options) if previous is not None else 0)
                if not options:
                    del edges[corner]
                previous, corner = corner, nxt
                if corner == start:  # closed (a loop touching itself here is left as two loops)
                    break
                corners.append(corner)
            loops.append(_straight(corners))
    return loops


def _straight(corners: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The loop without the corners that lie on a straight line between their neighbours."""
    n = len(corners)
    kept = []
    for i, (x, y) in enumerate(corners):
        (px, py), (nx, ny) = corners[i - 1], corners[(i + 1) % n]
        if (x - px) * (ny - y) - (y - py) * (nx - x) != 0:
            kept.append((x, y))
    return kept


def _signed_area(corners: list[tuple[int, int]]) -> float:
    twice = 0
    for i, (x, y) in enumerate(corners):
        nx, ny = corners[(i + 1) % len(corners)]
        twice += x * ny - nx * y
    return twice / 2


def mask_polygons(mask: np.ndarray, *, skip=(VOID,), skip_on_border=()) -> list[tuple[int, list[float]]]:
    """``(class value, [x1, y1, x2, y2, ...])`` for every region of ``mask`` (H, W), largest enclosed
    area first, so that painting them in order redraws the mask (see the module's docstring).

    Values in ``skip`` get no polygons; those in ``skip_on_border`` only for regions that do not touch
    the photo's edge (the ones inside another region, which an importer's starting fill does not reach).
    """
    mask = np.asarray(mask)
    height, width = mask.shape
    shapes: list[tuple[float, int, list[float]]] = []
    for value in np.unique(mask).tolist():
        if value in skip:
            continue
        for corners in _loops(mask == value):
            area = _signed_area(corners)
            if area <= 0:  # a hole's loop: other classes' regions fill it
                continue
            if value in skip_on_border:
                xs, ys = [c[0] for c in corners], [c[1] for c in corners]
                if min(xs) == 0 or min(ys) == 0 or max(xs) == width or max(ys) == height:
                    continue
            shapes.append((area, int(value), [float(v) for corner in corners for v in corner]))
    shapes.sort(key=lambda shape: -shape[0])
    return [(value, points) for _area, value, points in shapes]


__all__ = ["VOID", "mask_polygons"]

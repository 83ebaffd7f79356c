"""Tiles for segmenting photos much larger than the model's input: detail kept, memory bounded.

A segmentation model squashes the whole photo to its input size S, so in a 4000 x 3000 photo a small
object shrinks to a few grid points. A model whose card has ``tiles`` instead cuts such a photo (longer
side over ``factor`` x S) into overlapping square tiles of about S photo pixels (larger when more than
``max_tiles`` would be needed), runs its graph on each tile as on a photo, and blends the tiles' class
probabilities (``class_scores``) on one grid over the photo, each tile weighted most at its centre.
The blended grid is then brought to the photo's size as the graph's own tail does (bilinear,
half-pixel centres), a strip of rows at a time, and the most likely class of each pixel is its value.

Memory is bounded by one tile's tensors, the blended grid (about the photo's pixels / stride^2 per
class) and one strip. Training cuts its large photos into the same tiles (:func:`plan_tiles`) and
blends its own probabilities with :func:`blend_tiles` and :func:`grid_to_mask`, so the app's masks
and the exported model's come from the same code. numpy and Pillow only: the bundle copies it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image

from .preprocess import ImageSpec, image_to_tensor

#: a photo is tiled when its longer side is over this many input sizes
FACTOR = 2.0
#: share of a tile its neighbour covers too
OVERLAP = 0.25
#: most tiles per photo (past it the tiles grow, so the work per photo stays bounded)
MAX_TILES = 36
#: output rows brought to the photo's size at once
STRIP_ROWS = 64


def tile_settings(card: dict) -> dict | None:
    """The card's tiling (``factor``, ``overlap``, ``max_tiles``), None when the model does not tile."""
    tiles = card.get("tiles")
    if not isinstance(tiles, dict):
        return None
    return {
        "factor": float(tiles.get("factor", FACTOR)),
        "overlap": min(max(float(tiles.get("overlap", OVERLAP)), 0.0), 0.75),
        "max_tiles": max(int(tiles.get("max_tiles", MAX_TILES)), 1),
    }


@dataclass(frozen=True)
class TilePlan:
    """Square tiles of ``side`` photo pixels at the left edges ``xs`` and top edges ``ys`` (every
    pair), covering a ``width`` x ``height`` photo."""

    width: int
    height: int
    side: int
    xs: tuple
    ys: tuple

    @property
    def boxes(self) -> list[tuple[int, int, int, int]]:
        """(left, top, right, bottom) of every tile, row by row."""
        return [(x, y, x + self.side, y + self.side) for y in self.ys for x in self.xs]


def _edges(length: int, side: int, overlap: float) -> tuple:
    if length <= side:
        return (0,)
    n = math.ceil((length - side) / max(side * (1.0 - overlap), 1.0)) + 1
    return tuple(int(round(i * (length - side) / (n - 1))) for i in range(n))


def plan_tiles(
    width: int, height: int, size: int, *, factor=FACTOR, overlap=OVERLAP, max_tiles=MAX_TILES
) -> TilePlan | None:
    """How a ``width`` x ``height`` photo is cut for a model of input size ``size`` (None: it is not,
    its longer side being at most ``factor`` x ``size``)."""
    width, height = int(width), int(height)
    if max(width, height) <= factor * size:
        return None
    side = min(int(size), width, height)
    while True:
        xs, ys = _edges(width, side, overlap), _edges(height, side, overlap)
        if len(xs) * len(ys) <= max_tiles or side >= min(width, height):
            return TilePlan(width, height, side, xs, ys)
        side = min(int(side * 1.25) + 1, width, height)


def tile_tensor(image: Image.Image, box, spec: ImageSpec) -> np.ndarray:
    """One tile of ``image`` as the model's (3, S, S) input, made as every photo is (``preprocess``)."""
    return image_to_tensor(image.crop(box), spec)


def _weights(grid: int) -> np.ndarray:
    """A tile's weight along one side of its grid: highest at the centre, small but not 0 at the edge."""
    centre = (np.arange(grid) + 0.5) / grid
    return (1.0 - np.abs(2.0 * centre - 1.0)) + 0.05


def _placement(offset: float, count: int, grid: int) -> tuple[int, np.ndarray]:
    """The blended grid's cells a tile covers along one axis and their interpolation from the tile's
    grid: (first cell, (cells, grid) matrix). ``offset`` is the tile's edge in blended cells."""
    # one cell past each edge too (the tile's edge values carried on), so that no cell of the photo
    # is left out where the photo's side is not a whole number of cells
    first, last = int(math.floor(offset - 0.5)), int(math.ceil(offset + grid - 0.5))
    first, last = max(first, 0), min(last, count - 1)
    cells = np.arange(first, last + 1)
    u = np.clip(cells - offset, 0.0, grid - 1.0)  # the cell's centre in the tile's grid coordinates
    low = np.floor(u).astype(np.int64)
    high = np.minimum(low + 1, grid - 1)
    frac = (u - low).astype(np.float32)
    matrix = np.zeros((len(cells), grid), np.float32)
    matrix[np.arange(len(cells)), low] += 1.0 - frac
    matrix[np.arange(len(cells)), high] += frac
    return first, matrix


def grid_shape(plan: TilePlan, grid: int) -> tuple[int, int]:
    """(rows, columns) of the blended grid: ``grid`` cells per tile side, over the whole photo."""
    scale = grid / plan.side
    return max(1, math.ceil(plan.height * scale)), max(1, math.ceil(plan.width * scale))


def blend_tiles(plan: TilePlan, tile_scores) -> np.ndarray:
    """The tiles' class probabilities, each (C, G, G) in ``plan.boxes`` order, blended on one grid over
    the photo: (C, rows, columns) float32 (see :func:`grid_shape`)."""
    total = weight_sum = None
    for box, scores in zip(plan.boxes, tile_scores):
        scores = np.asarray(scores, np.float32)
        classes, grid = scores.shape[0], scores.shape[-1]
        if total is None:
            rows, cols = grid_shape(plan, grid)
            total = np.zeros((classes, rows, cols), np.float32)
            weight_sum = np.zeros((rows, cols), np.float32)
        assert weight_sum is not None
        scale = grid / plan.side
        top, ay = _placement(box[1] * scale, total.shape[1], grid)
        left, ax = _placement(box[0] * scale, total.shape[2], grid)
        ramp = _weights(grid)
        w = np.outer(ay @ ramp, ax @ ramp).astype(np.float32)
        window = np.einsum("ig,cgh,jh->cij", ay, scores, ax, optimize=True)
        total[:, top : top + len(ay), left : left + len(ax)] += window * w
        weight_sum[top : top + len(ay), left : left + len(ax)] += w
    if total is None or weight_sum is None:
        raise ValueError("no tiles to blend")
    return total / np.maximum(weight_sum, 1e-12)


def _axis(out: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear sampling of ``size`` cells at ``out`` points, half-pixel centres (ONNX ``Resize``)."""
    src = np.clip((np.arange(out) + 0.5) * size / out - 0.5, 0.0, size - 1.0)
    low = np.floor(src).astype(np.int64)
    return low, np.minimum(low + 1, size - 1), (src - low).astype(np.float32)


def grid_to_mask(scores: np.ndarray, width: int, height: int, rows: int = STRIP_ROWS) -> np.ndarray:
    """(C, gh, gw) class probabilities -> (height, width) uint8: each pixel's most likely class, the
    grid brought to the photo's size bilinearly, ``rows`` output rows at a time."""
    scores = np.asarray(scores, np.float32)
    y0, y1, fy = _axis(int(height), scores.shape[1])
    x0, x1, fx = _axis(int(width), scores.shape[2])
    mask = np.empty((int(height), int(width)), np.uint8)
    for start in range(0, int(height), rows):
        sl = slice(start, start + rows)
        wy = fy[sl][None, :, None]
        band = scores[:, y0[sl]] * (1.0 - wy) + scores[:, y1[sl]] * wy  # (C, rows, gw)
        wx = fx[None, None, :]
        full = band[:, :, x0] * (1.0 - wx) + band[:, :, x1] * wx  # (C, rows, width)
        mask[sl] = np.argmax(full, axis=0).astype(np.uint8)
    return mask


@dataclass
class TiledPhoto:
    """A photo the predictor segments tile by tile (what ``ImageInput.load`` gives for a tiling model's
    large photo): the decoded photo, its plan and the preprocessing."""

    image: Image.Image
    plan: TilePlan
    spec: ImageSpec

    def whole(self) -> np.ndarray:
        """The whole photo squashed to the input, as an untiled model sees it."""
        return image_to_tensor(self.image, self.spec)

    def run_on(self, session, names: list, input_name: str, size_input: str | None) -> list:
        """``[mask (1, H, W), class_scores (1, C, rows, columns)]``: the graph on every tile (its
        ``names[1]`` class probabilities), blended, brought to the photo's size."""
        scores = []
        for box in self.plan.boxes:
            feeds = {input_name: tile_tensor(self.image, box, self.spec)[None]}
            if size_input:
                feeds[size_input] = np.array([[self.plan.side, self.plan.side]], np.float32)
            scores.append(session.run([names[1]], feeds)[0][0])
        blended = blend_tiles(self.plan, scores)
        return [grid_to_mask(blended, self.plan.width, self.plan.height)[None], blended[None]]


__all__ = [
    "TilePlan",
    "TiledPhoto",
    "blend_tiles",
    "grid_shape",
    "grid_to_mask",
    "plan_tiles",
    "tile_settings",
    "tile_tensor",
]

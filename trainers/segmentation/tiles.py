"""Training on large photos in tiles, as the exported model segments them (``deploy.mask_tiles``).

A training photo much larger than the template's input is cut into the same overlapping tiles the
predictor cuts it into; each tile is a unit of its own for the feature cache (key ``<photo>_tileX-Y-SIDE``)
and for the head's rows (its crop of the photo's mask). The app's mask of such a photo is the head's
probabilities on every tile blended by ``deploy.mask_tiles``, the code the exported model runs.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modeldesk.deploy.mask_tiles import FACTOR, MAX_TILES, OVERLAP, TilePlan, plan_tiles
from modeldesk.deploy.preprocess import image_size, load_image

#: how the models trained here tile (written into the card, read by the predictor)
TILES = {"factor": FACTOR, "overlap": OVERLAP, "max_tiles": MAX_TILES}


def photo_plan(path, size: int) -> TilePlan | None:
    """The tiles the exported model will cut the photo at ``path`` into (None: it takes it whole)."""
    return plan_tiles(*image_size(path), size, **TILES)


@dataclass(frozen=True)
class _Crop:
    """A tile's part of its photo's mask (what the head's rows read, like a ``MaskRef``)."""

    ref: object
    box: tuple

    def read(self) -> np.ndarray:
        left, top, right, bottom = self.box
        return self.ref.read()[top:bottom, left:right]


@dataclass(frozen=True)
class TileUnit:
    """One tile of a training photo, standing in for a sample where features and rows are read."""

    key: str
    target: _Crop
    path: str


def tile_key(sample_key: str, box) -> str:
    return f"{sample_key}_tile{box[0]}-{box[1]}-{box[2] - box[0]}"


def unit_keys(samples, size: int) -> list[str]:
    """The feature cache keys a run extracts: each photo's, or each of a large photo's tiles' (for the
    ETA; reads the photos' headers only)."""
    keys = []
    for sample in samples:
        try:
            plan = photo_plan(sample.path, size)
        except (OSError, ValueError):  # unreadable: the run leaves it out and says so
            plan = None
        keys += [sample.key] if plan is None else [tile_key(sample.key, box) for box in plan.boxes]
    return keys


class TiledPhotos:
    """The tiles of a run's large photos: their plans, their cache items and their units.

    Tiles whose maps are not cached yet are written (lossless PNG, the photo's exact pixels) into a
    scratch folder under ``scratch_root`` for the extraction, removed by :meth:`close`."""

    def __init__(self, samples, size: int, scratch_root):
        self.plans = {s.key: plan for s in samples if (plan := photo_plan(s.path, size)) is not None}
        self._samples = {s.key: s for s in samples}
        Path(scratch_root).mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix="segtiles-", dir=scratch_root))

    def items(self, samples, missing) -> list[tuple[str, str]]:
        """(key, path) for the feature extraction: a whole photo, or each of a large photo's tiles
        (written to the scratch folder when ``missing(keys)`` says some are not cached)."""
        out = []
        for sample in samples:
            plan = self.plans.get(sample.key)
            if plan is None:
                out.append((sample.key, str(sample.path)))
                continue
            keys = [tile_key(sample.key, box) for box in plan.boxes]
            paths = [self.scratch / f"{sample.key}-{k}.png" for k in range(len(keys))]
            absent = set(missing(keys))
            if absent:
                image = load_image(sample.path)
                for key, box, path in zip(keys, plan.boxes, paths):
                    if key in absent:
                        image.crop(box).save(path, format="PNG", compress_level=1)
            out += [(key, str(path)) for key, path in zip(keys, paths)]
        return out

    def units(self, samples) -> list:
        """Each sample, or in its place its tiles' :class:`TileUnit` (row by row)."""
        out = []
        for sample in samples:
            plan = self.plans.get(sample.key)
            if plan is None:
                out.append(sample)
            else:
                out += [
                    TileUnit(tile_key(sample.key, box), _Crop(sample.target, box), str(sample.path))
                    for box in plan.boxes
                ]
        return out

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


__all__ = ["TILES", "TileUnit", "TiledPhotos", "photo_plan", "tile_key", "unit_keys"]

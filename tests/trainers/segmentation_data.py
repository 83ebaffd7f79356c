"""Photos with index masks the tests make: a textured background, a bright disk and a dark bar.

``write_mask_folder(root)`` lays them out as segmentation sets are (``images/`` + ``masks/`` +
``classes.txt``); the class values are 0 background, 1 disk, 2 bar, and a thin ring of 255 (not labeled)
around the disk, as real masks leave at edges.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

CLASSES = ("background", "disk", "bar")


def scene(rng, width: int = 96, height: int = 72) -> tuple[np.ndarray, np.ndarray]:
    """(RGB photo, index mask) of one scene."""
    photo = (rng.normal(110, 12, (height, width, 3))).clip(0, 255)
    mask = np.zeros((height, width), np.uint8)
    yy, xx = np.mgrid[:height, :width]
    cy, cx, r = rng.integers(18, height - 18), rng.integers(18, width - 18), rng.integers(9, 15)
    distance = np.hypot(yy - cy, xx - cx)
    photo[distance <= r] = (235, 220, 60)
    mask[distance <= r] = 1
    x0 = int(rng.integers(0, width - 30))
    y0 = int(rng.integers(0, height - 8))
    bar = (slice(y0, y0 + 7), slice(x0, x0 + 28))
    photo[bar] = (20, 30, 140)
    mask[bar] = 2
    mask[(distance > r - 1) & (distance <= r + 1) & (mask != 2)] = 255
    return photo.astype(np.uint8), mask


def write_mask_folder(root, n: int = 12, seed: int = 0, *, size=(96, 72)) -> Path:
    """``root/images/scene_NN.png`` + ``root/masks/scene_NN.png`` + ``root/classes.txt``."""
    root = Path(root)
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "masks").mkdir(exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(n):
        photo, mask = scene(rng, *size)
        Image.fromarray(photo).save(root / "images" / f"scene_{i:02d}.png")
        Image.fromarray(mask, mode="L").save(root / "masks" / f"scene_{i:02d}.png")
    (root / "classes.txt").write_text(
        "".join(f"{i} {name}\n" for i, name in enumerate(CLASSES)), encoding="utf-8"
    )
    return root

"""Small made-up inspection photos: a striped texture, and the same with a dark blob planted (a defect)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def texture(rng: np.random.Generator, width: int = 96, height: int = 80) -> np.ndarray:
    """A grey striped surface with fine noise (uint8, H x W)."""
    x = np.mgrid[0:height, 0:width][1]
    phase = rng.uniform(0, 2 * np.pi)
    base = 128 + 40 * np.sin(x / 3.0 + phase) + rng.normal(0, 6, (height, width))
    return np.clip(base, 0, 255).astype(np.uint8)


def plant_blob(image: np.ndarray, rng: np.random.Generator, radius: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """The image with a dark round blob at a random place, and its mask (bool)."""
    height, width = image.shape
    cy, cx = rng.integers(radius, height - radius), rng.integers(radius, width - radius)
    y, x = np.mgrid[0:height, 0:width]
    mask = (y - cy) ** 2 + (x - cx) ** 2 <= radius**2
    out = image.copy()
    out[mask] = 20
    return out, mask


def write_inspection_folder(
    root: Path, n_good: int = 24, n_defect: int = 6, seed: int = 0, grey: bool = True
):
    """``root/good/*.png``, ``root/defect/blob/*.png`` and ``root/masks/<stem>.png`` (grayscale photos)."""
    rng = np.random.default_rng(seed)
    (root / "good").mkdir(parents=True)
    (root / "defect" / "blob").mkdir(parents=True)
    (root / "masks").mkdir()
    for i in range(n_good):
        pixels = texture(rng, width=int(rng.integers(80, 120)))
        Image.fromarray(pixels, "L" if grey else None).save(root / "good" / f"good_{i:03d}.png")
    for i in range(n_defect):
        pixels, mask = plant_blob(texture(rng, width=int(rng.integers(80, 120))), rng)
        Image.fromarray(pixels, "L").save(root / "defect" / "blob" / f"blob_{i:03d}.png")
        Image.fromarray(mask.astype(np.uint8) * 255, "L").save(root / "masks" / f"blob_{i:03d}.png")
    return root

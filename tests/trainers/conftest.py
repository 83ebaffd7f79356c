"""Shared fixtures: the backbone graph is built once per test session into a temporary folder."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="session")
def backbone():
    from modeldesk.trainers.backbones import get_backbone

    return get_backbone("efficientnet-lite0")


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory, backbone) -> Path:
    """A feature cache folder whose ``graphs/`` already holds the built backbone."""
    root = tmp_path_factory.mktemp("feature-cache")
    backbone.onnx_path(root / "graphs")
    return root


@pytest.fixture(scope="session")
def graph_dir(shared_cache_dir) -> Path:
    return shared_cache_dir / "graphs"


def draw_sample(kind: str, seed: int, size: int = 64) -> Image.Image:
    """A small synthetic picture of class ``kind`` with random placement, colours jitter and noise."""
    rng = np.random.default_rng(seed)
    jitter = rng.integers(-30, 30, 3)
    image = Image.new("RGB", (size, size), tuple(int(v) for v in np.clip([200, 200, 200] + jitter, 0, 255)))
    draw = ImageDraw.Draw(image)
    if kind == "disc":
        r = int(rng.integers(12, 22))
        cx, cy = rng.integers(r, size - r, 2)
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=(int(rng.integers(180, 255)), 30, 30))
    elif kind == "stripes":
        width = int(rng.integers(3, 7))
        offset = int(rng.integers(0, width * 2))
        for x in range(-width * 2 + offset, size, width * 2):
            draw.rectangle([x, 0, x + width - 1, size], fill=(20, int(rng.integers(120, 200)), 40))
    elif kind == "checks":
        cell = int(rng.integers(6, 12))
        for y in range(0, size, cell):
            for x in range(0, size, cell):
                if (x // cell + y // cell) % 2:
                    draw.rectangle(
                        [x, y, x + cell - 1, y + cell - 1], fill=(30, 30, int(rng.integers(150, 255)))
                    )
    else:
        raise ValueError(kind)
    noise = rng.normal(0, 8, (size, size, 3))
    return Image.fromarray(np.clip(np.asarray(image, float) + noise, 0, 255).astype(np.uint8))


def write_dataset(folder: Path, per_class: int, kinds=("disc", "stripes", "checks"), seed: int = 0):
    """Write PNGs and return LabeledSample samples: about 60% train, 20% val, 20% test per class."""
    from modeldesk.trainers.data import LabeledSample

    folder.mkdir(parents=True, exist_ok=True)
    samples = []
    for k, kind in enumerate(kinds):
        for i in range(per_class):
            path = folder / f"{kind}-{i}.png"
            draw_sample(kind, seed * 100000 + k * 1000 + i).save(path)
            split = "test" if i % 5 == 0 else "val" if i % 5 == 1 else "train"
            key = hashlib.sha256(path.read_bytes()).hexdigest()
            samples.append(LabeledSample(key=key, source=str(path), target=kind, split=split))
    return samples


@pytest.fixture(scope="session")
def synthetic_samples(tmp_path_factory):
    """Three classes of 15 synthetic images each."""
    return write_dataset(tmp_path_factory.mktemp("synthetic"), per_class=15)


@pytest.fixture(scope="session")
def photos_dir() -> Path:
    """tests/data: small real photos (scikit-image's chelsea and coffee, downsized)."""
    return DATA


@pytest.fixture(scope="session")
def make_dataset():
    """``make_dataset(folder, per_class, kinds=..., seed=0)`` -> LabeledSample samples."""
    return write_dataset

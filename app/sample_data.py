"""Small labeled image sets made on the spot, for the demo and the first-run sample project."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

SAMPLE_CLASSES = ("circle", "square", "triangle")


def _draw_shape(draw: ImageDraw.ImageDraw, shape: str, box, fill) -> None:
    x0, y0, x1, y1 = box
    if shape == "circle":
        draw.ellipse(box, fill=fill)
    elif shape == "square":
        draw.rectangle(box, fill=fill)
    else:
        draw.polygon([((x0 + x1) / 2, y0), (x1, y1), (x0, y1)], fill=fill)


def make_shape_image(shape: str, rng: np.random.Generator, size: int = 96) -> Image.Image:
    """One photo-like image of a shape: random position, size, colours, noise and blur."""
    background = tuple(int(v) for v in rng.integers(90, 230, 3))
    image = Image.new("RGB", (size, size), background)
    draw = ImageDraw.Draw(image)
    extent = rng.uniform(0.35, 0.7) * size
    x0 = rng.uniform(0, size - extent)
    y0 = rng.uniform(0, size - extent)
    fill = tuple(int(v) for v in rng.integers(0, 90, 3))
    _draw_shape(draw, shape, (x0, y0, x0 + extent, y0 + extent), fill)
    noisy = np.asarray(image, np.float32) + rng.normal(0, 8, (size, size, 3))
    image = Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))
    return image.filter(ImageFilter.GaussianBlur(rng.uniform(0, 1.0)))


def make_shapes_folder(folder, per_class: int = 20, *, seed: int = 0, size: int = 96,
                       classes=SAMPLE_CLASSES) -> Path:
    """Write ``folder/<class>/<n>.jpg`` for each class; returns the folder."""
    folder = Path(folder)
    rng = np.random.default_rng(seed)
    for shape in classes:
        (folder / shape).mkdir(parents=True, exist_ok=True)
        for index in range(per_class):
            image = make_shape_image(shape, rng, size)
            image.save(folder / shape / f"{shape}_{seed}_{index:03d}.jpg", quality=90)
    return folder


TEXT_WORDS = {
    "praise": (["great", "tasty", "fresh", "lovely", "fast delivery", "friendly", "delicious", "warm"],
               ["很好吃", "很快", "新鲜", "推荐", "满意"]),
    "complaint": (["terrible", "cold", "late", "slow delivery", "rude", "stale", "wrong order", "refund"],
                  ["太慢", "难吃", "凉了", "差评", "退款"]),
    "question": (["when", "how", "can i", "do you", "is it", "what time", "where", "could you"],
                 ["什么时候", "怎么", "可以吗", "有没有", "几点"]),
}
_FILLER = ["the", "food", "order", "today", "and", "was", "very", "meal", "restaurant", "it", "我们", "这个"]


def make_text_table(path, per_class: int = 20, *, seed: int = 0) -> Path:
    """Write a ``text,label`` CSV of short made-up reviews in English and Chinese, three classes."""
    import csv

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        for label, (english, chinese) in TEXT_WORDS.items():
            for i in range(per_class):
                words = list(rng.choice(english, 2)) + list(rng.choice(_FILLER, 3))
                if i % 3 == 0:
                    words.append(str(rng.choice(chinese)))
                rng.shuffle(words)
                writer.writerow([f"{' '.join(words)} #{seed}-{i}", label])
    return path

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


def make_shapes_folder(
    folder, per_class: int = 20, *, seed: int = 0, size: int = 96, classes=SAMPLE_CLASSES
) -> Path:
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
    "praise": (
        ["great", "tasty", "fresh", "lovely", "fast delivery", "friendly", "delicious", "warm"],
        ["很好吃", "很快", "新鲜", "推荐", "满意"],
    ),
    "complaint": (
        ["terrible", "cold", "late", "slow delivery", "rude", "stale", "wrong order", "refund"],
        ["太慢", "难吃", "凉了", "差评", "退款"],
    ),
    "question": (
        ["when", "how", "can i", "do you", "is it", "what time", "where", "could you"],
        ["什么时候", "怎么", "可以吗", "有没有", "几点"],
    ),
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


BOX_CLASSES = ("square", "disc")


def make_boxes_image(rng: np.random.Generator, size=(200, 150)) -> tuple[Image.Image, list]:
    """A noisy photo with a red square and/or a blue disc that do not overlap; returns it and its
    boxes as ``(label, x0, y0, x1, y1)`` in pixels."""
    width, height = size
    image = Image.fromarray(rng.integers(90, 170, (height, width, 3), dtype=np.uint8))
    draw = ImageDraw.Draw(image)
    shapes = list(BOX_CLASSES) if rng.random() < 0.4 else [str(rng.choice(BOX_CLASSES))]
    boxes: list = []
    for shape in shapes:
        for _ in range(20):
            side = int(rng.integers(34, 60))
            x0, y0 = int(rng.integers(0, width - side)), int(rng.integers(0, height - side))
            if all(x0 + side < a or c < x0 or y0 + side < b or d < y0 for _, a, b, c, d in boxes):
                break
        if shape == "square":
            draw.rectangle([x0, y0, x0 + side - 1, y0 + side - 1], fill=(220, 30, 30))
        else:
            draw.ellipse([x0, y0, x0 + side - 1, y0 + side - 1], fill=(30, 40, 220))
        boxes.append((shape, float(x0), float(y0), float(x0 + side), float(y0 + side)))
    return image, boxes


def make_boxes_folder(
    folder, count: int = 24, *, seed: int = 0, sizes=((200, 150), (150, 200), (180, 180))
) -> Path:
    """Write ``count`` photos with boxed shapes as a Pascal VOC folder (``x.png`` + ``x.xml``)."""
    from modeldesk.datasets.records import Box
    from modeldesk.datasets.voc import voc_xml

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for index in range(count):
        size = sizes[index % len(sizes)]
        image, boxes = make_boxes_image(rng, size)
        name = f"shapes_{seed}_{index:03d}.png"
        image.save(folder / name)
        xml = voc_xml(name, size[0], size[1], [Box(*b) for b in boxes])
        (folder / name).with_suffix(".xml").write_text(xml, encoding="utf-8")
    return folder

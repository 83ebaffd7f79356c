"""Thumbnails for the gallery, made with Pillow and written atomically."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, ImageOps

from .media import atomic_write
from .verify import IMAGE_FORMATS


def make_thumbnail(src: Path, dest: Path, size: int) -> Path:
    """Write a JPEG of ``src`` whose longest side is at most ``size`` to ``dest``.

    JPEG draft mode decodes at a reduced scale, so a 12 MP photo thumbnails in milliseconds.
    """
    with Image.open(src, formats=IMAGE_FORMATS) as image:
        if image.format == "JPEG":
            image.draft("RGB", (size, size))
        image = ImageOps.exif_transpose(image)
        image = image.convert("RGB")
        image.thumbnail((size, size), Image.BILINEAR)
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=85)
    atomic_write(dest, buffer.getvalue())
    return dest


def waveform_thumbnail(src: Path, dest: Path, size: int, *, max_seconds: float = 30.0) -> Path:
    """Write a ``size`` x ``size`` JPEG picture of a WAV clip's waveform (its first ``max_seconds``)."""
    import wave

    import numpy as np
    from PIL import ImageDraw

    with wave.open(str(src), "rb") as reader:
        width, channels, rate = reader.getsampwidth(), reader.getnchannels(), reader.getframerate()
        raw = reader.readframes(min(reader.getnframes(), int(max_seconds * rate)))
    dtype = {1: "u1", 2: "<i2", 4: "<i4"}.get(width)
    if dtype is None:  # 24-bit: the top two bytes of each sample are enough for a picture
        values = np.frombuffer(raw[:len(raw) - len(raw) % 3], np.uint8).reshape(-1, 3)[:, 1:].copy().view("<i2")[:, 0]
        dtype, width = "<i2", 2
    else:
        values = np.frombuffer(raw[:len(raw) - len(raw) % width], dtype)
    x = values.astype(np.float32)
    x = (x - 128.0) / 128.0 if dtype == "u1" else x / float(2 ** (8 * width - 1))
    x = x[:len(x) - len(x) % channels].reshape(-1, channels).mean(axis=1)
    image = Image.new("RGB", (size, size), (238, 242, 255))
    draw = ImageDraw.Draw(image)
    if len(x):
        peak = max(float(np.abs(x).max()), 1e-3)
        columns = np.array_split(x / peak, min(size, len(x)))
        middle, half = size / 2, size * 0.42
        step = size / len(columns)
        for i, column in enumerate(columns):
            top, bottom = middle - float(column.max()) * half, middle - float(column.min()) * half
            draw.rectangle([i * step, top, (i + 1) * step - 0.5, max(bottom, top + 1)], fill=(99, 102, 241))
    draw.line([0, size / 2, size, size / 2], fill=(165, 180, 252))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=85)
    atomic_write(dest, buffer.getvalue())
    return dest

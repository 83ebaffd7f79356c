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
        image.thumbnail((size, size), Image.Resampling.BILINEAR)
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
        values = (
            np.frombuffer(raw[: len(raw) - len(raw) % 3], np.uint8)
            .reshape(-1, 3)[:, 1:]
            .copy()
            .view("<i2")[:, 0]
        )
        dtype, width = "<i2", 2
    else:
        values = np.frombuffer(raw[: len(raw) - len(raw) % width], dtype)
    x = values.astype(np.float32)
    x = (x - 128.0) / 128.0 if dtype == "u1" else x / float(2 ** (8 * width - 1))
    x = x[: len(x) - len(x) % channels].reshape(-1, channels).mean(axis=1)
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


#: fonts with CJK glyphs, tried in order (Linux fonts-noto-cjk, macOS, Windows); then Pillow's own
CJK_FONTS = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
    "/System/Library/Fonts/PingFang.ttc",
    "/System/Library/Fonts/STHeiti Light.ttc",
    "C:/Windows/Fonts/msyh.ttc",
    "C:/Windows/Fonts/simsun.ttc",
)


def _font(pixels: int):
    from PIL import ImageFont

    for path in CJK_FONTS:
        if Path(path).exists():
            try:
                return ImageFont.truetype(path, pixels)
            except OSError:
                continue
    return ImageFont.load_default(pixels)


def text_thumbnail(text: str, dest: Path, size: int, *, max_chars: int = 160) -> Path:
    """Write a ``size`` x ``size`` JPEG card showing the start of ``text``, wrapped (CJK included)."""
    from PIL import ImageDraw

    image = Image.new("RGB", (size, size), (250, 250, 252))
    draw = ImageDraw.Draw(image)
    pixels = max(10, size // 11)
    font = _font(pixels)
    margin, line_height = size // 14, int(pixels * 1.35)
    lines, line = [], ""
    import re

    # a CJK character, or a word with its trailing space: lines break between them
    pieces = re.findall(
        r"[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]|[^\s\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]+\s*|\s+",
        " ".join(text.split())[:max_chars],
    )
    for piece in pieces:
        if line and draw.textlength(line + piece.rstrip(), font=font) > size - 2 * margin:
            lines.append(line)
            line = piece.lstrip()
        else:
            line += piece
    lines.append(line)
    room = max(1, (size - 2 * margin) // line_height)
    if len(lines) > room:
        lines = lines[:room]
        lines[-1] = lines[-1][:-1] + "…"
    for i, row in enumerate(lines):
        draw.text((margin, margin + i * line_height), row, fill=(30, 33, 40), font=font)
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    atomic_write(dest, buffer.getvalue())
    return dest

"""Frames with the model's answer drawn on them, as JPEG (live view and event snapshots)."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont

MAX_SIDE = 960


def _font(size: int):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one fixed-size default font
        return ImageFont.load_default()


def answer_text(answer: dict | None) -> str:
    if not answer:
        return ""
    if "error" in answer:
        return f"error: {answer['error']}"[:120]
    text = f"{answer.get('label', '')} {float(answer.get('score') or 0):.0%}"
    if answer.get("boxes") is not None:
        text += f"  ({len(answer['boxes'])} found)"
    return text


def annotated_jpeg(image: Image.Image, answer: dict | None, quality: int = 80) -> bytes:
    """``image`` scaled to at most MAX_SIDE with its answer (label, score, boxes) drawn, as JPEG."""
    scale = min(1.0, MAX_SIDE / max(image.size))
    shown = image.convert("RGB")
    if scale < 1.0:
        shown = shown.resize((max(1, int(image.width * scale)), max(1, int(image.height * scale))))
    else:
        shown = shown.copy()
    draw = ImageDraw.Draw(shown)
    size = max(12, shown.height // 18)
    font = _font(size)
    for box in (answer or {}).get("boxes") or []:
        coords = box.get("box") or box.get("xyxy")
        if isinstance(coords, (list, tuple)) and len(coords) == 4:
            x0, y0, x1, y1 = (float(v) * scale for v in coords)
            draw.rectangle((x0, y0, x1, y1), outline=(255, 210, 0), width=max(2, size // 6))
            draw.text(
                (x0 + 2, max(0, y0 - size)),
                f"{box.get('label', '')} {float(box.get('score', 0)):.0%}",
                fill=(255, 210, 0),
                font=font,
            )
    text = answer_text(answer)
    if text:
        left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
        draw.rectangle((0, 0, right - left + 2 * (size // 3), bottom - top + 2 * (size // 3)), fill=(0, 0, 0))
        draw.text((size // 3 - left, size // 3 - top), text, fill=(255, 255, 255), font=font)
    buffer = io.BytesIO()
    shown.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()

"""Small generated data for the datasets tests."""

from __future__ import annotations

import io
import struct
import wave
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image, ImageDraw

from modeldesk.datasets import Store


def _find_benchdata() -> Path:
    """``../shared/benchdata`` beside the checkout (as CI lays it out), else the workplace copy."""
    beside = Path(__file__).resolve().parents[2].parent / "shared" / "benchdata"
    return beside if beside.is_dir() else Path("/work/shared/benchdata")


BENCHDATA = _find_benchdata()


def jpeg_bytes(width=32, height=24, color=(200, 30, 30), quality=90) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def png_bytes(width=32, height=24, color=(10, 200, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, "PNG")
    return buffer.getvalue()


def wav_bytes(frames=800, rate=8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(struct.pack(f"<{frames}h", *[(i * 37) % 2000 - 1000 for i in range(frames)]))
    return buffer.getvalue()


@pytest.fixture
def gen():
    """Generators of small media bytes: gen.jpeg(w, h, color), gen.png(w, h), gen.wav(frames, rate)."""
    return SimpleNamespace(jpeg=jpeg_bytes, png=png_bytes, wav=wav_bytes)


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "ws") as s:
        yield s


@pytest.fixture
def write():
    """write(path, data) -> path: create parents and write bytes or text."""

    def _write(path: Path, data) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_bytes(data)
        return path

    return _write


def pattern_jpeg(index: int, width=32, height=24) -> bytes:
    """A JPEG whose 4x4 grid of black/white cells spells ``index`` in binary: distinct bytes per index."""
    image = Image.new("RGB", (width, height), (90, 140, 200))
    draw = ImageDraw.Draw(image)
    cw, ch = width / 4, height / 4
    for bit in range(16):
        fill = (255, 255, 255) if index >> bit & 1 else (0, 0, 0)
        x, y = bit % 4 * cw, bit // 4 * ch
        draw.rectangle([x, y, x + cw - 1, y + ch - 1], fill=fill)
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


@pytest.fixture
def make_images(write):
    """make_images(folder, {label: n}, size=(32, 24)) writes distinct JPEGs in folder/label/
    (label "" writes into folder itself)."""

    counter = iter(range(1, 1 << 16))  # distinct across calls in one test

    def _make(folder: Path, counts: dict, size=(32, 24)) -> list[Path]:
        paths = []
        for label, n in counts.items():
            for i in range(n):
                k = next(counter)
                sub = folder / label if label else folder
                paths.append(write(sub / f"{label or 'img'}_{i}.jpg", pattern_jpeg(k, *size)))
        return paths

    return _make


@pytest.fixture
def benchdata():
    if not BENCHDATA.is_dir():
        pytest.skip("benchdata not available")
    return BENCHDATA

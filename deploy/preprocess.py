"""The one image preprocessing implementation.

Training, in-app prediction, the local service and the deploy bundle all call these functions, so
an exported model sees exactly the tensors the app trained on. This module depends on numpy and
Pillow only, because the deploy bundle copies it verbatim.
"""

from __future__ import annotations

import io
import os
from dataclasses import asdict, dataclass

import numpy as np
from PIL import Image, ImageOps

# Pillow's own bomb guard only warns below 2x its limit; we refuse anything over this many pixels.
MAX_PIXELS = 80_000_000
# The only formats decoded (the importer accepts the same): no Ghostscript for EPS, no PSD, ...
IMAGE_FORMATS = ("JPEG", "PNG", "GIF", "BMP", "WEBP", "TIFF")


class ImageDecodeError(ValueError):
    """An image could not be decoded; the message says why in plain words."""

    user_error = True


@dataclass(frozen=True)
class ImageSpec:
    """How raw pixels become the network input. Stored in every model artifact."""

    size: int = 224
    mean: float = 127.0
    std: float = 128.0
    resize: str = "squash"  # "squash": the whole image to size x size; "letterbox": keep the aspect
    # ratio, scale the longer side to ``size`` and pad the bottom/right with the mean (zero after
    # normalisation); nothing is cropped away either way
    color: str = "RGB"
    layout: str = "NCHW"

    def to_dict(self) -> dict:
        return {"kind": "image", **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> ImageSpec:
        fields = {k: data[k] for k in ("size", "mean", "std", "resize", "color", "layout") if k in data}
        return cls(**fields)


def load_image(source, *, max_pixels: int = MAX_PIXELS, draft_size: int | None = None) -> Image.Image:
    """Decode ``source`` (a path, bytes or a binary file object) to an RGB image.

    EXIF orientation is applied. ``draft_size`` lets JPEG decoding skip detail that a later resize
    to that size would throw away (a 3024x3024 photo decodes about 8x faster).
    Raises ImageDecodeError for anything that is not a complete image within ``max_pixels``.
    """
    return load_image_sized(source, max_pixels=max_pixels, draft_size=draft_size)[0]


def load_image_sized(
    source, *, max_pixels: int = MAX_PIXELS, draft_size: int | None = None
) -> tuple[Image.Image, tuple[int, int]]:
    """Like :func:`load_image`, also returning the image's full (width, height) after EXIF
    orientation, which a JPEG draft may have made larger than the decoded image."""
    name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "image"
    if isinstance(source, (bytes, bytearray, memoryview)):
        source = io.BytesIO(bytes(source))
    try:
        with Image.open(source, formats=IMAGE_FORMATS) as image:
            width, height = image.size
            if width * height > max_pixels:
                raise ImageDecodeError(
                    f"{name}: {width}x{height} pixels is over the limit of {max_pixels:,} pixels"
                )
            if _swaps_axes(image):
                width, height = height, width
            if draft_size and image.format == "JPEG":
                image.draft("RGB", (draft_size * 2, draft_size * 2))
            image.load()
            # No copy that changes nothing: a copy of a 40-megapixel image is 160 MB (Pillow keeps
            # RGB in 4 bytes a pixel), and the service's decode budget counts each one.
            if orientation(image) in _TURNS:
                image = ImageOps.exif_transpose(image)
            return (image if image.mode == "RGB" else image.convert("RGB")), (width, height)
    except ImageDecodeError:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageDecodeError(f"{name}: image is too large ({exc})") from None
    except Image.UnidentifiedImageError:
        raise ImageDecodeError(
            f"{name}: not an image file (or not JPEG, PNG, GIF, BMP, WebP or TIFF)"
        ) from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageDecodeError(f"{name}: damaged image ({exc})") from None


_TURNS = (2, 3, 4, 5, 6, 7, 8)  # EXIF orientations that flip or turn the image


def orientation(image: Image.Image) -> int | None:
    """The image's EXIF orientation (1-8), or None when it has none or its EXIF cannot be read."""
    try:
        return image.getexif().get(0x0112)
    except Exception:  # unreadable EXIF: exif_transpose would leave the image as it is too
        return None


def _swaps_axes(image: Image.Image) -> bool:
    """Whether the EXIF orientation turns the image by 90 degrees (width and height swap)."""
    return orientation(image) in (5, 6, 7, 8)


def image_size(source) -> tuple[int, int]:
    """(width, height) of an image after EXIF orientation, from its header (no full decode)."""
    name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "image"
    if isinstance(source, (bytes, bytearray, memoryview)):
        source = io.BytesIO(bytes(source))
    try:
        with Image.open(source) as image:
            width, height = image.size
            return (height, width) if _swaps_axes(image) else (width, height)
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageDecodeError(f"{name}: cannot read the image's size ({exc})") from None


def letterbox_scale(width: int, height: int, size: int) -> float:
    """The factor a letterboxed image is scaled by: its longer side becomes ``size``."""
    return size / max(width, height, 1)


def letterbox(image: Image.Image, size: int, fill: int = 127) -> Image.Image:
    """``image`` scaled by :func:`letterbox_scale` at the top left of a ``size`` square of ``fill``."""
    width, height = image.size
    scale = letterbox_scale(width, height, size)
    new = (min(size, max(1, round(width * scale))), min(size, max(1, round(height * scale))))
    if new != image.size:
        image = image.resize(new, Image.Resampling.BILINEAR)
    if new == (size, size):
        return image
    canvas = Image.new("RGB", (size, size), (fill, fill, fill))
    canvas.paste(image, (0, 0))
    return canvas


def image_to_tensor(image: Image.Image, spec: ImageSpec) -> np.ndarray:
    """Resize (squash or letterbox, as ``spec.resize`` says) and normalise an RGB image to float32 CHW."""
    if spec.resize == "letterbox":
        image = letterbox(image, spec.size, int(round(spec.mean)))
    elif image.size != (spec.size, spec.size):
        image = image.resize((spec.size, spec.size), Image.Resampling.BILINEAR)
    # Transpose the uint8 pixels, then normalise in place: the same values as the obvious float
    # expression at a fifth of the memory traffic (it matters beside a 4 ms backbone).
    array = np.asarray(image, dtype=np.uint8).transpose(2, 0, 1).astype(np.float32, order="C")
    array -= spec.mean
    array /= spec.std
    return array


def preprocess_image(source, spec: ImageSpec = ImageSpec()) -> np.ndarray:
    """Decode and preprocess one image to a float32 (3, size, size) array."""
    return image_to_tensor(load_image(source, draft_size=spec.size), spec)


def preprocess_batch(sources, spec: ImageSpec = ImageSpec()) -> np.ndarray:
    """Preprocess several images into one float32 (N, 3, size, size) batch."""
    return (
        np.stack([preprocess_image(s, spec) for s in sources])
        if sources
        else np.zeros((0, 3, spec.size, spec.size), np.float32)
    )

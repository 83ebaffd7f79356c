"""Images as model input: decoding and preprocessing through the one implementation in ``preprocess``."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from .inputs import ModelInput
from .preprocess import MAX_PIXELS, ImageSpec, image_to_tensor, load_image_sized


_MODE_BYTES = {
    "1": 1,
    "L": 1,
    "P": 1,
    "LA": 2,
    "I;16": 2,
    "RGB": 3,
    "YCbCr": 3,
    "RGBA": 4,
    "CMYK": 4,
    "I": 4,
    "F": 4,
}


class ImageInput(ModelInput):
    """Image files or bytes -> float32 (3, S, S) tensors, batched as (N, 3, S, S).

    When the card names a ``size_input`` (detectors, whose boxes come back in the original image's
    pixels), an item is ``(tensor, [width, height])`` and that input gets the (N, 2) original sizes.
    """

    kind = "image"
    json_fields = ("image", "images")
    upload_types = ("image/",)
    noun = "image"
    compress_in_batches = True
    console = {
        "widget": "file",
        "preview": "image",
        "accept": "image/*",
        "types": ["image/"],
        "suffixes": [],
        "untyped": True,
        "refused": "is not an image.",
        "hint": "Drop, paste or choose an image",
        "drop_title": "Drag an image here",
        "drop_formats": "JPEG, PNG, WebP, BMP",
        "record": False,
    }

    @classmethod
    def check_preprocessing(cls, preprocessing: dict) -> str | None:
        """The card's size, mean and std must be sane before anything is resized with them."""
        try:
            spec = ImageSpec.from_dict(preprocessing)
            sane = 8 <= int(spec.size) <= 4096 and float(spec.std) > 0 and abs(float(spec.mean)) < 1e6
        except (TypeError, ValueError):
            sane = False
        if sane:
            return None
        return "the model card's image preprocessing is invalid (size 8-4096 pixels, std above 0)"

    def __init__(self, card: dict, *, max_pixels: int = MAX_PIXELS, **options):
        super().__init__(card, **options)
        self.spec = ImageSpec.from_dict(card.get("preprocessing") or {})
        self.max_pixels = int(max_pixels)
        self.size_input = card.get("size_input")

    example_file = "photo.jpg"

    def words(self) -> str:
        size = self.spec.size
        return f"{size} × {size} px" + (" (aspect kept)" if self.spec.resize == "letterbox" else "")

    def readme_text(self) -> str:
        how = (
            "scaled to fit a {0}x{0} square, aspect ratio kept,"
            if self.spec.resize == "letterbox"
            else "resized to {0}x{0}"
        ).format(self.spec.size)
        return (
            f"any image; it is {how} by `preprocess.py`, the same code the app used for training and "
            "prediction."
        )

    def load(self, source):
        image, size = load_image_sized(source, max_pixels=self.max_pixels, draft_size=self.spec.size)
        tensor = image_to_tensor(image, self.spec)
        return (tensor, np.array(size, np.float32)) if self.size_input else tensor

    def example(self) -> np.ndarray:
        return np.zeros((3, self.spec.size, self.spec.size), np.float32)

    def cost(self, source) -> int:
        """Decoded bytes, read from the header only (JPEG decodes reduced, as ``load`` does)."""
        try:
            with Image.open(
                io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
            ) as image:
                width, height = image.size
                decoded = _MODE_BYTES.get(image.mode, 4)
                if width * height > self.max_pixels:
                    return 0  # refused by ``load`` before anything is decoded, with its own message
                if image.format == "JPEG":
                    scale = 1
                    while scale < 8 and min(width, height) // (scale * 2) >= 2 * self.spec.size:
                        scale *= 2
                    width, height = width // scale, height // scale
        except Exception:  # not an image: ``load`` will say why; it costs nothing to find out
            return len(source) if isinstance(source, (bytes, bytearray)) else 0
        # the decoded image, its RGB copy, and the float tensor
        return width * height * (decoded + 3) + 12 * self.spec.size**2

    def collate(self, items: list) -> np.ndarray:
        if not len(items):
            return np.zeros((0, 3, self.spec.size, self.spec.size), np.float32)
        return np.stack([item[0] if isinstance(item, tuple) else item for item in items])

    def feeds(self, items: list, input_name: str) -> dict:
        feeds = {input_name: self.collate(items)}
        if self.size_input:
            # A bare tensor is taken as a picture of exactly the input size.
            side = float(self.spec.size)
            feeds[self.size_input] = np.array(
                [item[1] if isinstance(item, tuple) else (side, side) for item in items], np.float32
            ).reshape(-1, 2)
        return feeds

    def check_batch(self, batch: np.ndarray) -> None:
        """ValueError unless ``batch`` is (N, 3, S, S) for this model's input size."""
        size = self.spec.size
        if batch.ndim != 4 or batch.shape[1:] != (3, size, size):
            raise ValueError(f"expected a batch of shape (N, 3, {size}, {size}), got {batch.shape}")

"""Images as model input: decoding and preprocessing through the one implementation in ``preprocess``."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from .inputs import ModelInput
from .mask_tiles import TiledPhoto, plan_tiles, tile_settings
from .preprocess import MAX_PIXELS, ImageSpec, image_to_tensor, load_image_sized, orientation

#: Bytes a pixel takes in Pillow's memory; every other mode (RGB and YCbCr included) takes 4.
_STORED_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16L": 2, "I;16B": 2, "I;16N": 2}
#: Modes whose conversion to RGB goes through an intermediate image (4 bytes a pixel at most).
_DIRECT_TO_RGB = {"1", "L", "P", "RGB", "RGBA", "LA", "PA", "I;16", "I;16L", "I;16B", "I;16N"}
#: What a decoder holds beside the image, per pixel (measured): libwebp decodes into its own canvas and
#: hands Pillow a copy of the frame as bytes.
_DECODER_BYTES = {"WEBP": 12}
#: The most pixels one ``session.run`` is given, every look at a photo counted: 16 photos at 224 px.
#: Larger batches are no faster on a CPU and hold more memory (``bench/image_batch.py``, the backbone
#: on 2 threads): at 320 px and three looks, 47.8 ms a photo and 1.93 GB in batches of 16 against 38.8 ms
#: and 0.71 GB in batches of 2; at 640 px, 229 ms and 7.7 GB against 149 ms and 2.3 GB one at a time.
BATCH_PIXELS = 16 * 224 * 224


def looks(card: dict) -> int:
    """How many times a model's graph looks at each photo: its test views (detectors) or views."""
    return len(card.get("test_views", card.get("views")) or ["identity"])


def image_batch_size(size: int, looks: int = 1) -> int:
    """Photos per ``session.run`` for a model of ``size`` px that looks ``looks`` times: 16 at 224 px
    and one look, fewer as the pixels grow (:data:`BATCH_PIXELS`), never under 1."""
    return max(1, min(16, BATCH_PIXELS // (int(size) ** 2 * max(1, int(looks)))))


def decode_bytes(
    width: int, height: int, mode: str, image_format: str | None, *, turned: bool, animated: bool
) -> int:
    """The peak bytes of decoding an image to the RGB image ``preprocess.load_image_sized`` returns.

    Measured against the process's peak RSS (tests/security/test_decode_budget.py): the decoded
    image in Pillow's layout, the decoder's own buffers, the RGB conversion unless the image is RGB
    already, the EXIF turn's copy, and the previous frame an animated GIF or PNG keeps.
    """
    pixels = width * height
    stored = _STORED_BYTES.get(mode, 4)
    per_pixel = stored + _DECODER_BYTES.get(image_format or "", 0)
    if mode != "RGB":
        per_pixel += 4 + (0 if mode in _DIRECT_TO_RGB else 4)
    if turned:
        per_pixel += 4
    if animated:
        per_pixel += stored
    return pixels * per_pixel


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
    pictures = True
    console = {
        "widget": "file",
        "preview": "image",
        "live": "camera",
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
        self.batch_size = image_batch_size(self.spec.size, looks(card))

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
        tiles = tile_settings(self.card)
        if tiles:  # a segmentation model that cuts large photos into tiles: the full resolution is kept
            image, size = load_image_sized(source, max_pixels=self.max_pixels)
            plan = plan_tiles(*size, self.spec.size, **tiles)
            if plan is not None:
                return TiledPhoto(image, plan, self.spec)
        else:
            image, size = load_image_sized(source, max_pixels=self.max_pixels, draft_size=self.spec.size)
        tensor = image_to_tensor(image, self.spec)
        return (tensor, np.array(size, np.float32)) if self.size_input else tensor

    def example(self) -> np.ndarray:
        return np.zeros((3, self.spec.size, self.spec.size), np.float32)

    def cost(self, source) -> int:
        """Peak bytes decoding and preprocessing ``source`` holds (see :func:`decode_bytes`), read from
        the header only; a JPEG decodes reduced, as ``load`` does."""
        try:
            with Image.open(
                io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
            ) as image:
                width, height = image.size
                if width * height > self.max_pixels:
                    return 0  # refused by ``load`` before anything is decoded, with its own message
                mode, image_format = image.mode, image.format
                if image_format == "JPEG" and not tile_settings(self.card):  # a tiling model decodes it all
                    scale = 1
                    while scale < 8 and min(width, height) // (scale * 2) >= 2 * self.spec.size:
                        scale *= 2
                    width, height = -(-width // scale), -(-height // scale)
                    mode = "RGB" if mode in ("RGB", "YCbCr", "CMYK") else mode
                turned = orientation(image) in (2, 3, 4, 5, 6, 7, 8)
                animated = bool(getattr(image, "is_animated", False)) and image_format in ("GIF", "PNG")
        except Exception:  # not an image: ``load`` will say why; it costs nothing to find out
            return len(source) if isinstance(source, (bytes, bytearray)) else 0
        decoded = decode_bytes(width, height, mode, image_format, turned=turned, animated=animated)
        # resizing passes through an image of size x the longer side; then the uint8 and float tensors
        return decoded + 4 * self.spec.size * max(width, height) + 16 * self.spec.size**2

    def collate(self, items: list) -> np.ndarray:
        if not len(items):
            return np.zeros((0, 3, self.spec.size, self.spec.size), np.float32)
        return np.stack(
            [
                item[0] if isinstance(item, tuple) else item.whole() if isinstance(item, TiledPhoto) else item
                for item in items
            ]
        )

    def feeds(self, items: list, input_name: str) -> dict:
        feeds = {input_name: self.collate(items)}
        if self.size_input:
            # A bare tensor is taken as a picture of exactly the input size.
            side = float(self.spec.size)
            feeds[self.size_input] = np.array(
                [
                    item[1]
                    if isinstance(item, tuple)
                    else (item.plan.width, item.plan.height)
                    if isinstance(item, TiledPhoto)
                    else (side, side)
                    for item in items
                ],
                np.float32,
            ).reshape(-1, 2)
        return feeds

    def check_batch(self, batch: np.ndarray) -> None:
        """ValueError unless ``batch`` is (N, 3, S, S) for this model's input size."""
        size = self.spec.size
        if batch.ndim != 4 or batch.shape[1:] != (3, size, size):
            raise ValueError(f"expected a batch of shape (N, 3, {size}, {size}), got {batch.shape}")

"""The one preprocessing: exact values, orientation, and clear refusals."""

import io

import numpy as np
import pytest
from PIL import Image

from modeldesk.deploy.preprocess import (
    ImageDecodeError,
    ImageSpec,
    image_to_tensor,
    load_image,
    preprocess_image,
)


def test_tensor_is_the_normalised_pixels_in_chw_order():
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)
    for spec in (ImageSpec(), ImageSpec(mean=120.5, std=57.3)):
        tensor = image_to_tensor(Image.fromarray(pixels), spec)
        expected = ((pixels.astype(np.float32) - spec.mean) / spec.std).transpose(2, 0, 1)
        assert tensor.dtype == np.float32 and tensor.flags["C_CONTIGUOUS"]
        assert np.array_equal(tensor, expected)


def test_exif_orientation_is_applied():
    image = Image.new("RGB", (40, 20), (255, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise on display
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", exif=exif)
    assert load_image(buffer.getvalue()).size == (20, 40)


def test_truncated_and_non_images_are_refused_with_a_reason(tmp_path):
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (0, 128, 0)).save(buffer, "JPEG")
    truncated = tmp_path / "cut.jpg"
    truncated.write_bytes(buffer.getvalue()[:300])
    with pytest.raises(ImageDecodeError, match="cut.jpg"):
        preprocess_image(truncated)
    with pytest.raises(ImageDecodeError, match="not an image"):
        preprocess_image(b"hello, I am text")
    with pytest.raises(ImageDecodeError, match="over the limit"):
        load_image(buffer.getvalue(), max_pixels=100)

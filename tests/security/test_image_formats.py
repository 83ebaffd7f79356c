"""Only JPEG, PNG, GIF, BMP, WebP and TIFF are decoded, wherever an image is opened: an EPS file
(which Pillow hands to Ghostscript) or any other format is refused as "not an image" before decoding."""

from __future__ import annotations

import io

import pytest
from PIL import EpsImagePlugin, Image

from modeldesk.datasets.thumbs import make_thumbnail
from modeldesk.datasets.verify import verify_image
from modeldesk.deploy.preprocess import ImageDecodeError, load_image, preprocess_image

EPS = (
    b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 32 32\n%%EndComments\n"
    b"newpath 0 0 moveto 32 32 lineto stroke showpage\n%%EOF\n"
)


def _ppm() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 10, 10)).save(buffer, "PPM")
    return buffer.getvalue()


@pytest.fixture
def ghostscript_calls(monkeypatch):
    calls = []
    monkeypatch.setattr(EpsImagePlugin, "Ghostscript", lambda *args, **kwargs: calls.append(args))
    monkeypatch.setattr(EpsImagePlugin, "gs_windows_binary", "gs", raising=False)
    return calls


@pytest.mark.parametrize("data", [EPS, _ppm()], ids=["eps", "ppm"])
def test_predictor_and_service_preprocessing_refuse_other_formats(data, ghostscript_calls):
    with pytest.raises(ImageDecodeError, match="not an image"):
        load_image(data)
    with pytest.raises(ImageDecodeError):
        preprocess_image(io.BytesIO(data))
    assert ghostscript_calls == []


@pytest.mark.parametrize("data", [EPS, _ppm()], ids=["eps", "ppm"])
def test_import_and_thumbnails_refuse_other_formats(data, tmp_path, ghostscript_calls):
    with pytest.raises(ValueError, match="not an image"):
        verify_image(data)
    source = tmp_path / "picture.jpg"  # the name says JPEG, the bytes do not
    source.write_bytes(data)
    with pytest.raises(Exception):  # noqa: B017 (any refusal will do: no thumbnail is the point)
        make_thumbnail(source, tmp_path / "thumb.jpg", 64)
    assert not (tmp_path / "thumb.jpg").exists()
    assert ghostscript_calls == []

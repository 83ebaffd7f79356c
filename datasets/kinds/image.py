"""Image samples: photos stored as media files, thumbnails drawn from the photo."""

from __future__ import annotations

from pathlib import Path

from ..verify import IMAGE_EXTS
from . import SampleKind


def _verify(source, ext: str) -> tuple:
    from ..verify import verify_image

    ext, width, height = verify_image(source)
    return ext, width, height, None


def _thumbnail(sample, dest: Path, size: int) -> Path:
    from ..thumbs import make_thumbnail

    if sample.path is None:
        raise ValueError(f"sample {sample.id} has no image file: no thumbnail")
    return dest if dest.exists() else make_thumbnail(sample.path, dest, size)


IMAGE = SampleKind(
    "image",
    "image",
    "images",
    "an image",
    extensions=IMAGE_EXTS,
    verify=_verify,
    thumbnail=_thumbnail,
    pictures=True,
)

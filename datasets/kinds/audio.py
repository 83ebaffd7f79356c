"""Sound samples: WAV clips stored as media files, thumbnails that picture the waveform."""

from __future__ import annotations

from pathlib import Path

from ..verify import AUDIO_EXTS, UNSUPPORTED_AUDIO_EXTS
from . import SampleKind


def _verify(source, ext: str) -> tuple:
    from ..verify import verify_wav

    return ".wav", None, None, verify_wav(source, ext)


def _thumbnail(sample, dest: Path, size: int) -> Path:
    from ..thumbs import waveform_thumbnail

    if sample.path is None:
        raise ValueError(f"sample {sample.id} has no sound file: no thumbnail")
    return dest if dest.exists() else waveform_thumbnail(sample.path, dest, size)


AUDIO = SampleKind(
    "audio",
    "clip",
    "clips",
    "a sound",
    extensions=AUDIO_EXTS | UNSUPPORTED_AUDIO_EXTS,
    verify=_verify,
    thumbnail=_thumbnail,
)

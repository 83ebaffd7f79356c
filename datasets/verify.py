"""Checks every media file passes before it enters a workspace.

Images are opened with Pillow: the pixel count is checked against :data:`MAX_IMAGE_PIXELS` from the
header alone, before any decoding, and then the image is decoded (JPEG in draft mode, at 1/8 scale,
which still reads every byte of the compressed data) so that truncated files are caught at import and
not during training. Sounds must be WAV (PCM) files, read with the standard ``wave`` module; MP3, FLAC,
OGG and other compressed formats are refused with a message asking for a conversion to WAV, because
reading them needs codecs ModelDesk does not ship.
"""

from __future__ import annotations

import io
import os
import warnings
import wave

from PIL import Image

# Matches modeldesk.deploy.preprocess.MAX_PIXELS (datasets may not import deploy): an image that the
# predictor would refuse is refused at import too.
MAX_IMAGE_PIXELS = 80_000_000

IMAGE_EXTS = frozenset({".jpg", ".jpeg", ".jpe", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff"})
AUDIO_EXTS = frozenset({".wav", ".wave"})
#: Sound formats we recognise but cannot read; the message asks for a WAV conversion.
UNSUPPORTED_AUDIO_EXTS = frozenset(
    {".mp3", ".flac", ".ogg", ".oga", ".opus", ".m4a", ".aac", ".wma", ".aiff", ".aif"}
)

#: The only formats Pillow may decode, everywhere ModelDesk opens an image (the importer, thumbnails,
#: the predictor and the service): Pillow would otherwise also run Ghostscript on EPS, parse PSD, ...
IMAGE_FORMATS = ("JPEG", "PNG", "GIF", "BMP", "WEBP", "TIFF")

_FORMAT_EXT = {
    "JPEG": ".jpg",
    "MPO": ".jpg",
    "PNG": ".png",
    "GIF": ".gif",
    "BMP": ".bmp",
    "WEBP": ".webp",
    "TIFF": ".tif",
}
_ROTATED = (5, 6, 7, 8)  # EXIF orientations that swap width and height


#: Sample rates a sound file is imported with (as modeldesk.deploy.audio_input reads them): 1 kHz
#: telephone recordings up to 384 kHz, the highest any audio interface records. A header outside says
#: something else: a rate of 1 Hz divided by zero in training, 5 MHz asked the resampler for gigabytes.
MIN_SAMPLE_RATE = 1_000
MAX_SAMPLE_RATE = 384_000


class MediaError(ValueError):
    """A file cannot be imported; the message says why in plain words (without the file name)."""


def media_kind(ext: str) -> str | None:
    """The sample kind whose files end in ``ext`` (lower case, such as ``".jpg"``), or None
    (the kinds' ``extensions``, ``datasets/kinds/``)."""
    from .kinds import SAMPLE_KINDS, sample_kind

    for name in SAMPLE_KINDS:
        if ext in sample_kind(name).extensions:
            return name
    return None


def _source(data):
    """Bytes to a file object; a path stays a path (Pillow and ``wave`` read it as they go)."""
    return io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else os.fspath(data)


def verify_image(data) -> tuple[str, int, int]:
    """Check that ``data`` (bytes or a path) is a complete image within the pixel limit.

    Returns
    -------
    (ext, width, height)
        The extension matching the real format (a PNG named ``.jpg`` gets ``.png``) and the size
        after EXIF orientation, which is the size training and prediction see.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(_source(data), formats=IMAGE_FORMATS)
    except Image.DecompressionBombError as exc:
        raise MediaError(
            f"image is over the limit of {MAX_IMAGE_PIXELS:,} pixels, refused before "
            f"decoding (a decompression bomb?): {exc}"
        ) from None
    except Image.UnidentifiedImageError:
        raise MediaError(
            "not an image file (or a format other than JPEG, PNG, GIF, BMP, WebP, TIFF)"
        ) from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise MediaError(f"damaged image ({exc})") from None
    with image:
        width, height = image.size
        if width * height > MAX_IMAGE_PIXELS:
            raise MediaError(
                f"{width}x{height} pixels is over the limit of {MAX_IMAGE_PIXELS:,} pixels "
                "(a decompression bomb or a huge scan); resize it first"
            )
        ext = _FORMAT_EXT.get(image.format or "")
        if ext is None:
            raise MediaError(f"unsupported image format {image.format}")
        try:
            if image.format == "JPEG":
                image.draft(
                    image.mode if image.mode in ("L", "RGB") else "RGB",
                    (max(1, width // 8), max(1, height // 8)),
                )
            image.load()
            orientation = image.getexif().get(0x0112)
        except (OSError, ValueError, SyntaxError, EOFError) as exc:
            raise MediaError(f"damaged or truncated image ({exc})") from None
    if orientation in _ROTATED:
        width, height = height, width
    return ext, width, height


def verify_wav(data, ext: str = ".wav") -> float:
    """Check that ``data`` (bytes or a path) is a complete PCM WAV file; return its duration in seconds.

    The audio is read in blocks, so a long recording does not have to fit in memory.
    """
    if ext in UNSUPPORTED_AUDIO_EXTS:
        raise MediaError(
            f"{ext.lstrip('.').upper()} files are not supported: convert them to WAV "
            "(PCM) first, for example with ffmpeg -i input output.wav"
        )
    try:
        with wave.open(_source(data), "rb") as reader:
            frames, rate = reader.getnframes(), reader.getframerate()
            width, channels = reader.getsampwidth(), reader.getnchannels()
            if rate > 0 and not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
                raise MediaError(
                    f"its header gives a sample rate of {rate:,} Hz, which no sound file has; sample rates "
                    f"from {MIN_SAMPLE_RATE:,} to {MAX_SAMPLE_RATE:,} Hz are imported"
                )
            payload = 0
            while payload < frames * width * channels:
                block = reader.readframes(1 << 18)
                if not block:
                    break
                payload += len(block)
    except (wave.Error, EOFError) as exc:
        raise MediaError(f"not a readable PCM WAV file ({exc}); convert it to 16-bit PCM WAV") from None
    if rate <= 0 or channels <= 0:
        raise MediaError("WAV header is invalid (no sample rate or channels)")
    if frames == 0:
        raise MediaError("WAV file has no audio")
    if payload < frames * width * channels:
        raise MediaError(f"truncated WAV file ({payload} of {frames * width * channels} bytes of audio)")
    return frames / rate

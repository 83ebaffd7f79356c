"""Frame sources: a video file, a camera (``camera:0``), an RTSP/HTTP(MJPEG) stream, a watched folder.

Video is decoded with PyAV (the ``av`` package bundles FFmpeg's libraries, so files, cameras and
network streams are read the same way on Linux, Windows and macOS with nothing else to install).
A source yields :class:`Frame` objects; a source that fails raises, and the pipeline reopens it with
back-off (files end; cameras and streams are retried for ever).
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from PIL import Image

OPEN_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 10.0
STREAM_SCHEMES = ("rtsp://", "rtsps://", "rtmp://", "http://", "https://", "udp://", "tcp://", "srt://")
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff"}


class SourceError(ValueError):
    """A source string that names nothing usable; the message says what was expected."""


@dataclass
class Frame:
    """One decoded input: an image (or, from a folder, a file for a non-image model)."""

    image: Image.Image | None
    index: int
    media_time: float  # seconds into the video (files), else seconds since the source opened
    path: str | None = None
    captured: float = 0.0  # time.monotonic() when it left the decoder


def shown_source(source: str) -> str:
    """``source`` as it may be shown (status, events, metrics, logs): a URL's password masked."""
    text = str(source)
    if "://" in text and "@" in text:
        parts = urlsplit(text)
        if parts.password:
            netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
            return urlunsplit(parts._replace(netloc=netloc))
    return text


def source_kind(source: str) -> str:
    """``"camera"``, ``"stream"``, ``"folder"`` or ``"file"`` (SourceError when none fits)."""
    text = str(source).strip()
    if text.startswith("camera:"):
        if not text[7:].isdigit():
            raise SourceError(f"{text}: a camera is camera:N, N its number (camera:0 is the first)")
        return "camera"
    if text.lower().startswith(STREAM_SCHEMES):
        return "stream"
    path = Path(text).expanduser()
    if path.is_dir():
        return "folder"
    if path.is_file():
        return "file"
    raise SourceError(
        f"{text}: no such file or folder (a source is a video file, a folder, camera:0, or an "
        "rtsp:// or http:// stream address)"
    )


def _open_container(source: str, kind: str):
    import av

    if kind == "camera":
        number = int(source[7:])
        system = platform.system()
        if system == "Linux":
            return av.open(f"/dev/video{number}", format="v4l2", timeout=OPEN_TIMEOUT_S)
        if system == "Darwin":
            return av.open(str(number), format="avfoundation", timeout=OPEN_TIMEOUT_S)
        return av.open(f"video={number}", format="dshow", timeout=OPEN_TIMEOUT_S)
    if kind == "stream":
        options = {"rtsp_transport": "tcp"} if source.lower().startswith("rtsp") else {}
        return av.open(source, options=options, timeout=(OPEN_TIMEOUT_S, READ_TIMEOUT_S))
    return av.open(str(Path(source).expanduser()))


def video_frames(source: str, kind: str, should_stop):
    """Frames of a file, camera or stream until it ends or ``should_stop()``; errors propagate."""
    container = _open_container(source, kind)
    try:
        stream = container.streams.video[0]
        started = time.monotonic()
        for index, frame in enumerate(container.decode(stream)):
            if should_stop():
                return
            if kind == "file" and frame.time is not None:
                media_time = float(frame.time)
            else:
                media_time = time.monotonic() - started
            # to_ndarray + fromarray shares the RGB buffer: half the time of frame.to_image()
            yield Frame(Image.fromarray(frame.to_ndarray(format="rgb24")), index, media_time)
    finally:
        container.close()


def folder_files(folder: str, seen: set[str], should_stop, poll_s: float = 0.5, settle_s: float = 0.5):
    """Files appearing in ``folder`` (and those there not in ``seen``), each once, once their size
    has stopped changing for ``settle_s`` (a file still being copied is not read half-written)."""
    root = Path(folder).expanduser()
    sizes: dict[str, tuple[int, float]] = {}
    index = 0
    started = time.monotonic()
    while not should_stop():
        if not root.is_dir():
            raise OSError(f"{root}: the folder is gone")
        now = time.monotonic()
        with os.scandir(root) as entries:
            names = sorted(e.name for e in entries if e.is_file() and not e.name.startswith("."))
        for name in names:
            if name in seen:
                continue
            try:
                size = (root / name).stat().st_size
            except OSError:
                continue
            previous = sizes.get(name)
            if previous is None or previous[0] != size:
                sizes[name] = (size, now)
                continue
            if now - previous[1] < settle_s or size == 0:
                continue
            seen.add(name)
            sizes.pop(name, None)
            yield Frame(None, index, now - started, path=str(root / name))
            index += 1
            if should_stop():
                return
        time.sleep(poll_s)

"""Capturing photos from a camera into a class, without Qt: the logic behind "hold to record".

A :class:`Burst` takes the frames a camera delivers (RGB arrays) while the button is held, keeps one
every ``every_s`` seconds of frame time (at most ``max_frames``), and hands them back as JPEG bytes.
It is driven by the frames and their timestamps, never by a clock, so a test feeds generated frames
and gets exactly what a camera would have given.

>>> burst = Burst(every_s=0.1, max_frames=3)
>>> kept = [burst.feed(np.zeros((8, 8, 3), np.uint8), t=i * 0.05) for i in range(10)]
>>> len(burst.photos())
3
"""

from __future__ import annotations

import io

import numpy as np


class Burst:
    """Frames in while held, photos out (see the module docstring)."""

    def __init__(self, every_s: float = 0.2, max_frames: int = 50):
        if every_s < 0 or max_frames < 1:
            raise ValueError("every_s must not be negative and max_frames must be positive")
        self.every_s, self.max_frames = float(every_s), int(max_frames)
        self._frames: list[np.ndarray] = []
        self._last: float | None = None

    @property
    def count(self) -> int:
        """Frames kept so far."""
        return len(self._frames)

    @property
    def full(self) -> bool:
        return len(self._frames) >= self.max_frames

    def feed(self, frame, t: float) -> bool:
        """Offer one RGB frame (H x W x 3, uint8) taken at ``t`` seconds; True when it was kept."""
        if self.full or (self._last is not None and t - self._last < self.every_s):
            return False
        frame = np.asarray(frame)
        if frame.ndim != 3 or frame.shape[2] < 3:
            raise ValueError(f"a camera frame must be height x width x 3, not {frame.shape}")
        self._frames.append(np.ascontiguousarray(frame[:, :, :3], dtype=np.uint8))
        self._last = t
        return True

    def photos(self, quality: int = 92) -> list[bytes]:
        """The kept frames as JPEG files (bytes)."""
        from PIL import Image

        out = []
        for frame in self._frames:
            buffer = io.BytesIO()
            Image.fromarray(frame).save(buffer, "JPEG", quality=quality)
            out.append(buffer.getvalue())
        return out

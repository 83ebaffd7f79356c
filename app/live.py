"""Live preview without Qt: what the try-it card's "Live" mode sends to the model.

The camera's latest frame goes to the model as a JPEG file's bytes, the microphone's last seconds as a
WAV file's bytes: the same inputs a photo or a clip tried by hand is, so the same preprocessing
(``deploy``'s input kinds) decodes them and the live answer is the answer the service would give.
"""

from __future__ import annotations

import io

import numpy as np

from modeldesk.app.recording import ClipRecorder
from modeldesk.deploy.audio_input import SAMPLE_RATE, resample, wav_bytes


def frame_jpeg(frame: np.ndarray, quality: int = 90) -> bytes:
    """An RGB uint8 frame (H x W x 3) as the bytes of a JPEG file."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(frame, dtype=np.uint8)).save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


class RollingClip(ClipRecorder):
    """The microphone's last ``seconds``, always: a window that rolls on as frames come in.

    ``done`` is True once the window is full; ``wav()`` is the window as a 16 kHz mono WAV.

    >>> clip = RollingClip(seconds=1.0)
    >>> clip.start(rate=16000)
    >>> for _ in range(3):
    ...     clip.feed(np.zeros(8000, "<i2").tobytes())
    >>> clip.done, len(clip.samples())
    (True, 16000)
    """

    def __init__(self, seconds: float = 2.0):
        super().__init__(seconds=seconds, countdown_s=0.0)

    def feed(self, data) -> None:
        self._kept = 0  # the recorder then keeps every new frame; the window is trimmed below
        super().feed(data)
        if self._chunks:
            window = np.concatenate(self._chunks)[-self.clip_frames :]
            self._chunks, self._kept = [window], len(window)

    def snapshot(self) -> tuple[np.ndarray, int]:
        """The window now (a copy, at the device's rate) and that rate: made into WAV off the UI thread
        by :func:`clip_wav`."""
        window = self._chunks[0].copy() if self._chunks else np.zeros(0, np.float32)
        return window, self.rate


def clip_wav(samples: np.ndarray, rate: int) -> bytes:
    """A window of mono float samples at ``rate`` (``RollingClip.snapshot``) as 16 kHz WAV bytes."""
    return wav_bytes(resample(np.asarray(samples, np.float32), int(rate), SAMPLE_RATE), SAMPLE_RATE)

"""Recording a clip from audio frames, without Qt: the logic behind the app's record buttons.

A :class:`ClipRecorder` takes the raw frames a microphone delivers (any rate, 16-bit integer or
32-bit float samples, any number of channels), drops the first ``countdown_s`` seconds (the
countdown the person sees before speaking), keeps the next ``seconds`` and reports the level of
the latest frames for a meter. Everything is driven by the frames themselves, never by a clock,
so a test can feed it a generated signal and get exactly what a device would have given. The clip
comes out as a 16 kHz mono WAV through ``deploy.audio_input``, the preprocessing the model uses.

>>> recorder = ClipRecorder(seconds=1.0, countdown_s=0.0)
>>> recorder.start(rate=48000, channels=1, sample_format="float32")
>>> recorder.feed(np.zeros(48000, np.float32).tobytes())
>>> recorder.done, len(recorder.wav()) > 0
(True, True)
"""

from __future__ import annotations

import numpy as np

from modeldesk.deploy.audio_input import SAMPLE_RATE, resample, wav_bytes

FORMATS = {
    "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"),
    "float32": np.dtype("<f4"),
    "uint8": np.dtype("u1"),
}


class ClipRecorder:
    """Frames in, one clip out (see the module docstring).

    Parameters
    ----------
    seconds : length of the clip.
    countdown_s : seconds of frames dropped first (the countdown).

    Attributes
    ----------
    level : peak of the latest frames, 0..1 (for a level meter).
    """

    def __init__(self, seconds: float = 2.0, countdown_s: float = 0.0):
        if seconds <= 0 or countdown_s < 0:
            raise ValueError("seconds must be positive and countdown_s not negative")
        self.seconds = float(seconds)
        self.countdown_s = float(countdown_s)
        self.rate = 0
        self.level = 0.0
        self._chunks: list[np.ndarray] = []
        self._seen = 0
        self._kept = 0
        self._dtype = FORMATS["int16"]
        self._channels = 1
        self._pending = b""

    def start(self, *, rate: int, channels: int = 1, sample_format: str = "int16") -> None:
        """Begin a new clip for frames of this layout (what the device says it delivers)."""
        if sample_format not in FORMATS:
            raise ValueError(f"sample format must be one of {', '.join(FORMATS)}, not {sample_format!r}")
        if rate <= 0 or channels <= 0:
            raise ValueError("rate and channels must be positive")
        self.rate, self._channels, self._dtype = int(rate), int(channels), FORMATS[sample_format]
        self._chunks, self._seen, self._kept, self._pending, self.level = [], 0, 0, b"", 0.0

    @property
    def skip_frames(self) -> int:
        return int(round(self.countdown_s * self.rate))

    @property
    def clip_frames(self) -> int:
        return int(round(self.seconds * self.rate))

    @property
    def counting_down(self) -> bool:
        return self._seen < self.skip_frames

    @property
    def remaining_s(self) -> float:
        """Seconds until the clip is complete (countdown included)."""
        if not self.rate:
            return self.countdown_s + self.seconds
        return max(0, self.skip_frames + self.clip_frames - self._seen) / self.rate

    @property
    def done(self) -> bool:
        return bool(self.rate) and self._kept >= self.clip_frames

    def feed(self, data) -> None:
        """Add frames: bytes as the device delivers them, or a numpy array of samples."""
        if not self.rate:
            raise RuntimeError("call start() before feeding frames")
        if isinstance(data, np.ndarray):
            raw = np.ascontiguousarray(data, dtype=self._dtype).tobytes()
        else:
            raw = self._pending + bytes(data)
        frame_bytes = self._dtype.itemsize * self._channels
        usable = len(raw) - len(raw) % frame_bytes
        raw, self._pending = raw[:usable], raw[usable:]
        if not raw:
            return
        samples = np.frombuffer(raw, self._dtype).reshape(-1, self._channels).astype(np.float32)
        if self._dtype.kind == "u":
            samples = (samples - 128.0) / 128.0
        elif self._dtype.kind == "i":
            samples /= float(2 ** (8 * self._dtype.itemsize - 1))
        mono = samples.mean(axis=1) if self._channels > 1 else samples[:, 0]
        self.level = float(min(1.0, np.abs(mono).max())) if len(mono) else 0.0
        start = max(0, self.skip_frames - self._seen)
        self._seen += len(mono)
        take = mono[start : start + max(0, self.clip_frames - self._kept)]
        if len(take):
            self._chunks.append(take.copy())
            self._kept += len(take)

    def samples(self) -> np.ndarray:
        """The clip so far at 16 kHz, mono float32."""
        raw = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.float32)
        return resample(raw, self.rate, SAMPLE_RATE) if self.rate else raw

    def wav(self) -> bytes:
        """The clip as 16 kHz mono 16-bit WAV bytes."""
        return wav_bytes(self.samples(), SAMPLE_RATE)

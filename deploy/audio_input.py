"""Sounds as model input: the one audio preprocessing, used by training, the app, the service and the bundle.

A WAV file (a path or its bytes) is decoded with the standard library's ``wave`` module and numpy:
PCM with 8-bit (unsigned), 16-, 24- or 32-bit samples, any sample rate, any number of channels.
Channels are averaged to mono, the rate is converted to 16 kHz (a windowed-sinc resampler in numpy),
and the clip is fitted to the model's length: a short clip is padded with silence on both sides up
to ``min_seconds``; only the first ``max_seconds`` of a long one are read, so a two-hour recording
costs no more memory than a clip of ``max_seconds``. The model graph takes the result, a float32
waveform in [-1, 1] of shape (1, samples), and does everything else itself.

    spec = AudioSpec()
    waveform = load_waveform("clip.wav", spec)
    waveform.dtype, waveform.ndim
(dtype('float32'), 1)
"""

from __future__ import annotations

import io
import math
import os
import wave
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from .inputs import InputError, ModelInput

SAMPLE_RATE = 16_000
DEFAULT_MIN_SECONDS = 1.0
DEFAULT_MAX_SECONDS = 30.0
WORKS = "WAV files work (PCM, 8, 16, 24 or 32 bit, mono or stereo, any sample rate)"
# Leading bytes of the sound formats people send instead of WAV.
_MAGIC = (
    (b"ID3", "MP3"),
    (b"\xff\xfb", "MP3"),
    (b"\xff\xf3", "MP3"),
    (b"\xff\xf2", "MP3"),
    (b"fLaC", "FLAC"),
    (b"OggS", "Ogg"),
    (b"\x1aE\xdf\xa3", "WebM"),
    (b"FORM", "AIFF"),
    (b"#!AMR", "AMR"),
    (b"\xff\xf1", "AAC"),
    (b"\xff\xf9", "AAC"),
)
_HALF_TAPS = 16  # sinc zero crossings on each side of a resampling filter
_KAISER_BETA = 8.6
_MAX_PHASES = 4096
_CHUNK_FRAMES = 1 << 16
_CHUNK_CELLS = 1 << 18  # resampler outputs x taps computed at once (bounds its temporaries)
#: Sample rates read: from telephone-grade 1 kHz up to 384 kHz, the highest any audio interface
#: records. A header outside says something else (a broken or hostile file): a rate of 5 MHz asked the
#: resampler for gigabytes, a rate of 1 Hz divided by zero.
MIN_SAMPLE_RATE = 1_000
MAX_SAMPLE_RATE = 384_000
_STREAMED_SIZE = 0xFFFFFFFF  # the data size a WAV written to a pipe carries: "unknown"


class AudioDecodeError(InputError):
    """A sound cannot be decoded; the message names it and says which formats work."""


@dataclass(frozen=True)
class AudioSpec:
    """How a clip becomes the graph's input (stored in the model card's ``preprocessing``).

    Parameters
    ----------
    sample_rate : the graph's sample rate (the pretrained embedding was made for 16 kHz).
    min_seconds : shorter clips are padded with silence, half before and half after.
    max_seconds : only the first ``max_seconds`` of longer clips are used.
    """

    kind: str = "audio"
    sample_rate: int = SAMPLE_RATE
    min_seconds: float = DEFAULT_MIN_SECONDS
    max_seconds: float = DEFAULT_MAX_SECONDS

    @property
    def min_samples(self) -> int:
        return int(round(self.min_seconds * self.sample_rate))

    @property
    def max_samples(self) -> int:
        return int(round(self.max_seconds * self.sample_rate))

    def to_dict(self) -> dict:
        return {**asdict(self), "input": "float32 waveform (1, samples) in [-1, 1], mono"}

    @classmethod
    def from_dict(cls, data: dict) -> AudioSpec:
        return cls(
            sample_rate=int(data.get("sample_rate", SAMPLE_RATE)),
            min_seconds=float(data.get("min_seconds", DEFAULT_MIN_SECONDS)),
            max_seconds=float(data.get("max_seconds", DEFAULT_MAX_SECONDS)),
        )


def _name(source) -> str:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "the sound"
    return os.fspath(source)


def sniff_format(head: bytes) -> str | None:
    """``"WAV"``, another format's name (``"MP3"``, ``"FLAC"``...) or None from a file's first bytes."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "WAV"
    if head[:4] in (b"RIFX", b"RF64"):
        return "WAV (RIFX/RF64)"
    if head[4:8] == b"ftyp":
        return "MP4/M4A"
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def read_wav(source, *, max_seconds: float | None = DEFAULT_MAX_SECONDS) -> tuple[np.ndarray, int, float]:
    """Decode a WAV file to mono float32 samples in [-1, 1] at its own rate.

    Parameters
    ----------
    source : a path, or the file's bytes.
    max_seconds : read at most this much from the start (None: everything). Frames are read in
        chunks, so memory stays bounded by ``max_seconds`` however long the file is.

    Returns
    -------
    (samples, sample_rate, duration_s) : ``duration_s`` is the whole file's length.

    Raises
    ------
    AudioDecodeError naming the file: empty, not a WAV (saying which format it seems to be and which
    formats work), compressed or float WAV, a broken header, or no audio.
    """
    name = _name(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if not data:
            raise AudioDecodeError(f"{name}: empty file (0 bytes); {WORKS}")
        head, stream = data[:16], io.BytesIO(data)
    else:
        try:
            if os.path.getsize(source) == 0:
                raise AudioDecodeError(f"{name}: empty file (0 bytes); {WORKS}")
            with open(source, "rb") as handle:
                head = handle.read(16)
        except OSError as exc:
            raise AudioDecodeError(f"{name}: cannot read the file ({exc.strerror or exc})") from None
        stream = os.fspath(source)
    kind = sniff_format(head)
    if kind != "WAV":
        what = (
            f"an {kind} file"
            if kind and kind[0] in "AEFIMO"
            else f"a {kind} file"
            if kind
            else "not a WAV file"
        )
        raise AudioDecodeError(
            f"{name}: {what}, which cannot be read; {WORKS} (convert it, e.g. ffmpeg -i input.mp3 output.wav)"
        )
    try:
        with wave.open(stream, "rb") as reader:
            channels, width, rate = reader.getnchannels(), reader.getsampwidth(), reader.getframerate()
            frames = reader.getnframes()
            if rate <= 0 or channels <= 0 or width not in (1, 2, 3, 4):
                raise AudioDecodeError(
                    f"{name}: unsupported WAV header ({channels} channels, "
                    f"{8 * width}-bit, {rate} Hz); {WORKS}"
                )
            check_sample_rate(rate, name)
            limit = frames if max_seconds is None else min(frames, int(math.ceil(max_seconds * rate)))
            chunks, read = [], 0
            while read < limit:
                raw = reader.readframes(min(_CHUNK_FRAMES, limit - read))
                if not raw:
                    break
                chunk = _pcm_to_float(raw, width, channels)
                chunks.append(chunk)
                read += len(chunk)
            streamed = frames * width * channels >= _STREAMED_SIZE - width * channels
            if read < limit and read and not streamed:
                raise AudioDecodeError(
                    f"{name}: the WAV file is cut short: its header announces {frames / rate:.2f} s of "
                    f"audio but it holds {read / rate:.2f} s; export or copy it again"
                )
            if streamed:
                frames = read
    except AudioDecodeError:
        raise
    except (wave.Error, EOFError, ValueError) as exc:
        raise AudioDecodeError(f"{name}: not a readable PCM WAV ({exc}); {WORKS}") from None
    if not read:
        raise AudioDecodeError(f"{name}: the WAV file holds no audio")
    samples = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
    return samples, rate, frames / rate


def check_sample_rate(rate: int, name: str = "the sound") -> None:
    """AudioDecodeError naming ``name`` for a rate outside MIN_SAMPLE_RATE..MAX_SAMPLE_RATE."""
    if not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
        raise AudioDecodeError(
            f"{name}: its header gives a sample rate of {rate:,} Hz, which no sound file has; "
            f"sample rates from {MIN_SAMPLE_RATE:,} to {MAX_SAMPLE_RATE:,} Hz are read"
        )


def _pcm_to_float(raw: bytes, width: int, channels: int) -> np.ndarray:
    """Interleaved PCM bytes -> mono float32 (channels averaged); an incomplete last frame is dropped."""
    usable = len(raw) - len(raw) % (width * channels)
    raw = raw[:usable]
    if width == 1:
        values = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        values = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        ints = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        values = (np.where(ints >= 1 << 23, ints - (1 << 24), ints)).astype(np.float32) / float(1 << 23)
    else:
        values = (np.frombuffer(raw, "<i4").astype(np.float64) / float(1 << 31)).astype(np.float32)
    values = values.reshape(-1, channels)
    return values[:, 0].copy() if channels == 1 else values.mean(axis=1, dtype=np.float32)


def _phase_filters(up: int, down: int) -> tuple[np.ndarray, int]:
    """Kaiser-windowed sinc filters, one per output phase: (up, taps) and the first tap's offset."""
    cutoff = min(1.0, up / down)  # relative to the input's Nyquist frequency
    half = int(math.ceil(_HALF_TAPS / cutoff))
    k = np.arange(-half + 1, half + 1)
    phases = (np.arange(up) * down % up) / up  # fractional input position of each output phase
    d = k[None, :] - phases[:, None]
    w = np.i0(_KAISER_BETA * np.sqrt(np.clip(1.0 - (d / half) ** 2, 0.0, 1.0))) / np.i0(_KAISER_BETA)
    h = cutoff * np.sinc(cutoff * d) * w
    h /= h.sum(axis=1, keepdims=True)
    return h.astype(np.float32), -half + 1


def _ratio(from_rate: int, to_rate: int) -> tuple[int, int]:
    """(up, down): the resampler's output phases and input step."""
    step = Fraction(from_rate, to_rate)
    if step.denominator > _MAX_PHASES:
        step = step.limit_denominator(_MAX_PHASES)
    return step.denominator, step.numerator


def _taps(up: int, down: int) -> int:
    return 2 * int(math.ceil(_HALF_TAPS / min(1.0, up / down)))


def _chunk_outputs(taps: int) -> int:
    return max(256, _CHUNK_CELLS // taps)


def resample(samples: np.ndarray, from_rate: int, to_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Band-limited sample-rate conversion (polyphase windowed sinc) of a mono float32 signal.

    Deterministic and numpy-only, so every copy of this module gives the same numbers.
    """
    samples = np.asarray(samples, np.float32)
    if from_rate == to_rate or len(samples) == 0:
        return samples
    check_sample_rate(from_rate)
    up, down = _ratio(from_rate, to_rate)
    filters, first = _phase_filters(up, down)
    taps = filters.shape[1]
    n_out = int(math.floor(len(samples) * to_rate / from_rate))
    pad = taps + 2
    padded = np.concatenate([np.zeros(pad, np.float32), samples, np.zeros(pad, np.float32)])
    out = np.empty(n_out, np.float32)
    step = _chunk_outputs(taps)
    for start in range(0, n_out, step):
        n = np.arange(start, min(start + step, n_out))
        base = (n * down) // up + first + pad
        phase = n % up
        idx = base[:, None] + np.arange(taps)[None, :]
        out[start : start + len(n)] = np.einsum("ij,ij->i", padded[idx], filters[phase])
    return out


def resample_bytes(n_in: int, from_rate: int, to_rate: int = SAMPLE_RATE) -> int:
    """Peak bytes :func:`resample` holds for ``n_in`` samples: its input's padded copy, the output,
    the filter bank while it is built (float64 temporaries) and one chunk's gathered taps."""
    if from_rate == to_rate or n_in == 0:
        return 0
    up, down = _ratio(from_rate, to_rate)
    taps = _taps(up, down)
    n_out = n_in * to_rate // from_rate + 1
    filters = 6 * 8 * up * taps
    chunk = min(_chunk_outputs(taps), n_out) * taps * (8 + 4 + 4 + 8)
    return 4 * (n_in + 2 * taps) + 4 * n_out + max(filters, chunk + 4 * up * taps)


def fit_length(waveform: np.ndarray, spec: AudioSpec) -> np.ndarray:
    """Pad a clip shorter than ``spec.min_samples`` with silence (centred); cut one over ``max_samples``."""
    waveform = waveform[: spec.max_samples]
    short = spec.min_samples - len(waveform)
    if short > 0:
        waveform = np.pad(waveform, (short // 2, short - short // 2))
    return np.ascontiguousarray(waveform, dtype=np.float32)


def load_waveform(source, spec: AudioSpec | None = None) -> np.ndarray:
    """A WAV path or bytes -> the 1-D float32 16 kHz waveform the model graph takes (see module doc)."""
    spec = spec or AudioSpec()
    samples, rate, _ = read_wav(source, max_seconds=spec.max_seconds)
    return fit_length(resample(samples, rate, spec.sample_rate), spec)


def wav_bytes(samples: np.ndarray, sample_rate: int = SAMPLE_RATE) -> bytes:
    """Mono float samples in [-1, 1] as the bytes of a 16-bit PCM WAV file."""
    pcm = np.clip(np.round(np.asarray(samples, np.float64) * 32767.0), -32768, 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(int(sample_rate))
        writer.writeframes(pcm.tobytes())
    return buffer.getvalue()


class AudioInput(ModelInput):
    """WAV files or bytes -> float32 (samples,) waveforms; one clip per run (clips differ in length,
    and padding one to another's length would change its answer)."""

    kind = "audio"
    batch_size = 1
    json_fields = ("audio", "audios")
    upload_types = ("audio/",)
    noun = "clip"
    console = {
        "widget": "file",
        "preview": "clip",
        "live": "microphone",
        "accept": "audio/wav,audio/x-wav,.wav",
        "types": ["wav"],
        "suffixes": [".wav"],
        "untyped": False,
        "refused": "is not a WAV file: record a clip here, or convert it to WAV (PCM) first.",
        "hint": "Drop or choose a WAV clip, or record one",
        "drop_title": "Drag a sound clip here",
        "drop_formats": "WAV (PCM), any sample rate",
        "record": True,
    }

    example_file = "clip.wav"

    def words(self) -> str:
        spec = self.spec
        return f"{spec.sample_rate / 1000:g} kHz clip, {spec.min_seconds:g}–{spec.max_seconds:g} s"

    def readme_text(self) -> str:
        return (
            f"a WAV clip (PCM, any sample rate, mono or stereo); `modeldesk_server/audio_input.py`, the "
            f"same code the app used for training, turns it into {self.spec.sample_rate // 1000} kHz mono "
            f"(at least {self.spec.min_seconds:g} s, at most the first {self.spec.max_seconds:g} s), and "
            "the model does the rest."
        )

    def __init__(self, card: dict, **options):
        options.pop("max_pixels", None)
        super().__init__(card, **options)
        self.spec = AudioSpec.from_dict(card.get("preprocessing") or {})

    def load(self, source) -> np.ndarray:
        return load_waveform(source, self.spec)

    def example(self) -> np.ndarray:
        """A second of silence for the service's warm-up run."""
        return np.zeros(self.spec.min_samples, np.float32)

    def cost(self, source) -> int:
        """Peak bytes :meth:`load` holds, from the header and the file's real size: the samples read
        (at most ``max_seconds``, at most what the file holds), the resampling and the fitted clip.
        A rate outside the sane range costs nothing: ``load`` refuses it before reading."""
        try:
            with wave.open(
                io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source, "rb"
            ) as reader:
                rate, channels, width = reader.getframerate(), reader.getnchannels(), reader.getsampwidth()
                frames = reader.getnframes()
            size = len(source) if isinstance(source, (bytes, bytearray)) else os.path.getsize(source)
        except Exception:  # not a WAV: ``load`` will say why
            return len(source) if isinstance(source, (bytes, bytearray)) else 0
        if not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE or channels <= 0 or width not in (1, 2, 3, 4):
            return 0
        frames = min(frames, size // (channels * width), int(math.ceil(self.spec.max_seconds * rate)))
        chunk = min(frames, _CHUNK_FRAMES) * channels * (width + 4 + 8)  # one chunk's raw and float copies
        read = 2 * 4 * frames + chunk  # the mono chunks and their concatenation
        fitted = 4 * max(self.spec.max_samples, self.spec.min_samples)
        return read + resample_bytes(frames, rate, self.spec.sample_rate) + fitted

    def collate(self, items: list) -> np.ndarray:
        if not items:
            return np.zeros((0, self.spec.min_samples), np.float32)
        if len(items) != 1:
            raise ValueError("a sound model takes one clip per run")
        return items[0][None, :]

    def check_batch(self, batch: np.ndarray) -> None:
        """ValueError unless ``batch`` is one waveform (1, samples) of at least ``min_samples``."""
        if batch.ndim != 2 or batch.shape[0] > 1 or (len(batch) and batch.shape[1] < self.spec.min_samples):
            raise ValueError(
                f"expected one waveform of shape (1, >= {self.spec.min_samples}), got {batch.shape}"
            )

"""The one audio preprocessing: WAV decoding of every PCM layout, resampling, lengths, bad input."""

from __future__ import annotations

import io
import tracemalloc
import wave

import numpy as np
import pytest

from modeldesk.deploy.audio_input import (
    AudioDecodeError,
    AudioInput,
    AudioSpec,
    fit_length,
    load_waveform,
    read_wav,
    resample,
    sniff_format,
    wav_bytes,
)


def tone(seconds=0.5, rate=16000, freq=440.0, amplitude=0.5) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def pcm_wav(samples: np.ndarray, rate: int, width: int, channels: int = 1) -> bytes:
    """``samples`` (mono, [-1, 1]) as a PCM WAV of ``width`` bytes per sample, copied to every channel."""
    x = np.repeat(np.asarray(samples, np.float64)[:, None], channels, axis=1)
    if width == 1:
        raw = np.clip(np.round(x * 127 + 128), 0, 255).astype(np.uint8).tobytes()
    elif width == 2:
        raw = np.round(x * 32767).astype("<i2").tobytes()
    elif width == 3:
        ints = np.round(x * (2**23 - 1)).astype("<i4").reshape(-1)
        raw = np.stack([ints & 255, (ints >> 8) & 255, (ints >> 16) & 255], axis=1).astype(np.uint8).tobytes()
    else:
        raw = np.round(x * (2**31 - 1)).astype("<i4").tobytes()
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(width)
        writer.setframerate(rate)
        writer.writeframes(raw)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "width,channels,tolerance", [(1, 1, 1e-2), (2, 1, 1e-4), (2, 2, 1e-4), (3, 1, 1e-6), (4, 2, 1e-6)]
)
def test_every_pcm_layout_decodes_to_the_same_mono_signal(width, channels, tolerance):
    reference = tone()
    samples, rate, duration = read_wav(pcm_wav(reference, 16000, width, channels))
    assert rate == 16000 and duration == pytest.approx(0.5)
    assert samples.dtype == np.float32 and samples.shape == reference.shape
    assert np.abs(samples - reference).max() < tolerance


def test_stereo_channels_are_averaged():
    left, right = tone(freq=300), tone(freq=700)
    interleaved = np.round(np.stack([left, right], axis=1) * 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(16000)
        writer.writeframes(interleaved.tobytes())
    samples, _, _ = read_wav(buffer.getvalue())
    assert np.abs(samples - (left + right) / 2).max() < 1e-4


@pytest.mark.parametrize("rate", [8000, 22050, 44100, 48000])
def test_other_rates_are_resampled_to_16k_without_distortion(rate):
    waveform = load_waveform(pcm_wav(tone(1.0, rate, 1000.0), rate, 2), AudioSpec(min_seconds=1.0))
    assert len(waveform) == 16000
    expected = tone(1.0, 16000, 1000.0)
    assert np.abs(waveform[300:-300] - expected[300:-300]).max() < 2e-3


def test_resampling_removes_what_16k_cannot_hold():
    rate = 44100
    high = tone(1.0, rate, 12000.0)  # above 8 kHz, the Nyquist frequency at 16 kHz: must not alias
    out = resample(high, rate, 16000)
    assert np.sqrt(np.mean(out[300:-300] ** 2)) < 0.01


def test_short_clips_are_centred_in_silence_and_long_ones_cut():
    spec = AudioSpec(min_seconds=1.0, max_seconds=2.0)
    short = fit_length(np.ones(4000, np.float32), spec)
    assert len(short) == 16000 and short[:6000].sum() == 0 and short[6000:10000].sum() == 4000
    assert len(fit_length(np.ones(50000, np.float32), spec)) == 32000


def test_zero_bytes_and_empty_wav_are_refused_with_the_formats_that_work(tmp_path):
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(AudioDecodeError, match=r"empty.wav: empty file.*WAV files work"):
        load_waveform(empty)
    with pytest.raises(AudioDecodeError, match="holds no audio"):
        load_waveform(pcm_wav(np.zeros(0, np.float32), 16000, 2))


@pytest.mark.parametrize(
    "head,name",
    [
        (b"ID3\x03\x00\x00\x00", "MP3"),
        (b"\xff\xfb\x90\x00", "MP3"),
        (b"fLaC\x00\x00\x00\x22", "FLAC"),
        (b"OggS\x00\x02", "Ogg"),
        (b"\x00\x00\x00\x20ftypM4A ", "MP4/M4A"),
    ],
)
def test_other_formats_are_named_and_the_working_ones_listed(tmp_path, head, name):
    assert sniff_format(head) == name
    path = tmp_path / "song.bin"
    path.write_bytes(head + b"\x00" * 200)
    with pytest.raises(AudioDecodeError) as info:
        load_waveform(path)
    message = str(info.value)
    assert "song.bin" in message and name in message and "WAV files work (PCM" in message


def test_a_broken_wav_header_is_refused():
    data = bytearray(pcm_wav(tone(), 16000, 2))
    data[20:22] = (3).to_bytes(2, "little")  # IEEE float format tag with 16-bit samples
    with pytest.raises(AudioDecodeError, match="not a readable PCM WAV"):
        read_wav(bytes(data))


def test_a_two_hour_wav_is_read_in_bounded_memory(tmp_path):
    """Only the first ``max_seconds`` are read, whatever the file's length (here 2 h at 44.1 kHz stereo)."""
    path = tmp_path / "long.wav"
    frames = 2 * 3600 * 44100
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(44100)
        writer.setnframes(frames)
        writer.writeframesraw(np.round(np.repeat(tone(1.0, 44100), 2) * 32767).astype("<i2").tobytes())
    with open(path, "r+b") as handle:  # sparse: the rest of the two hours is silence on disk
        handle.truncate(44 + frames * 4)
        handle.seek(4)
        handle.write((36 + frames * 4).to_bytes(4, "little"))
        handle.seek(40)
        handle.write((frames * 4).to_bytes(4, "little"))
    assert read_wav(path, max_seconds=0.1)[2] == pytest.approx(7200.0)
    tracemalloc.start()
    try:
        waveform = load_waveform(path, AudioSpec(max_seconds=10.0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(waveform) == 160000
    assert peak < 60 * 1024 * 1024  # a full decode would need > 1.2 GB


def test_wav_bytes_round_trip():
    samples, rate, _ = read_wav(wav_bytes(tone(), 16000))
    assert rate == 16000 and np.abs(samples - tone()).max() < 1e-4


def test_the_input_takes_one_clip_per_run():
    model_input = AudioInput({"preprocessing": AudioSpec().to_dict()})
    one = model_input.load(wav_bytes(tone(), 16000))
    assert model_input.collate([one]).shape == (1, 16000)
    with pytest.raises(ValueError, match="one clip per run"):
        model_input.collate([one, one])

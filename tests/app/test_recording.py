"""The recording logic, driven by a generated signal instead of a microphone."""

from __future__ import annotations

import numpy as np
import pytest

from modeldesk.app.recording import ClipRecorder
from modeldesk.deploy.audio_input import read_wav


def blocks(signal: np.ndarray, size: int):
    for start in range(0, len(signal), size):
        yield signal[start : start + size]


def test_countdown_is_dropped_and_the_clip_comes_out_at_16k():
    rate = 48000
    t = np.arange(int(rate * 3.5)) / rate
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    tone[:rate] = 0.0  # silent countdown
    stereo = np.round(np.stack([tone, tone], axis=1) * 32767).astype("<i2")
    recorder = ClipRecorder(seconds=2.0, countdown_s=1.0)
    recorder.start(rate=rate, channels=2, sample_format="int16")
    levels, remaining = [], []
    for block in blocks(stereo, 1234):  # odd block sizes, as devices deliver them
        raw = block.tobytes()
        recorder.feed(raw[:5])  # a frame split across two deliveries
        recorder.feed(raw[5:])
        levels.append(recorder.level)
        remaining.append(recorder.remaining_s)
        if recorder.done:
            break
    assert recorder.done and remaining == sorted(remaining, reverse=True) and remaining[-1] == 0
    assert max(levels[:30]) == 0.0 and max(levels) == pytest.approx(0.5, abs=0.01)
    samples, out_rate, duration = read_wav(recorder.wav())
    assert out_rate == 16000 and duration == pytest.approx(2.0)
    # the clip starts where the countdown ended: the tone, not the silence before it
    expected = 0.5 * np.sin(2 * np.pi * 440 * (np.arange(32000) / 16000 + 1.0))
    assert np.abs(samples[200:-200] - expected[200:-200]).max() < 0.01


def test_float_frames_and_arrays_work_too():
    recorder = ClipRecorder(seconds=0.5)
    recorder.start(rate=44100, channels=1, sample_format="float32")
    recorder.feed(np.full(30000, 0.25, np.float32))
    assert recorder.done and recorder.level == pytest.approx(0.25)
    assert len(recorder.samples()) == 8000


def test_feeding_before_start_is_refused():
    with pytest.raises(RuntimeError, match="start"):
        ClipRecorder().feed(b"\x00\x00")

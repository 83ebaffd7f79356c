"""A clip whose header says 1 Hz, already in a project (imported by an older version, which did not
refuse it), does not crash training: the run skips it with its reason and trains on the rest."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from modeldesk.app.workspace import Workspace
from modeldesk.datasets import NewSample


def _wav(path: Path, rate: int, freq: float, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    t = np.arange(int(0.6 * 16000)) / 16000
    x = 0.4 * np.sin(2 * np.pi * freq * t) + 0.02 * rng.standard_normal(t.size)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((x * 32767).astype("<i2").tobytes())
    return path


def test_training_skips_a_one_hertz_clip_already_in_the_project(tmp_path):
    folder = tmp_path / "clips"
    for label, freq in (("low", 300.0), ("high", 2400.0)):
        (folder / label).mkdir(parents=True)
        for i in range(8):
            _wav(folder / label / f"{label}{i}.wav", 16000, freq * (1 + 0.03 * i), seed=i)
    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("sounds", "sound-classification")
        ws.import_data("sounds", folder)
        bad = _wav(tmp_path / "bad.wav", 1, 300.0, seed=99).read_bytes()  # the import would refuse it now
        content_hash, _ = ws.store.media.put(bad, ".wav")
        ws.store.add_samples(
            ws.project("sounds"),
            [NewSample("audio", content_hash, "bad.wav", ext=".wav", duration=9600.0, labels=["low"])],
        )
        result = ws.train("sounds", "sound-classification/fast")
        (skipped,) = result["skipped"]
        assert content_hash in skipped["file"] and "1 Hz" in skipped["reason"]
        assert result["model"] and result["metrics"]["accuracy"] >= 0.75  # trained on the other clips
    finally:
        ws.jobs.close(cancel_running=True, timeout=20)
        ws.close()

"""The held-out split every benchmark uses (images, sounds), so their accuracies compare."""

from __future__ import annotations

import hashlib
from pathlib import Path

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


def load_samples(root: Path, suffixes=IMAGE_SUFFIXES):
    """``root/<label>/<image>`` as LabeledSample rows: a fixed 25% test / 10% val / 65% train split
    by a hash of the file name, so the test quarter never changes between runs."""
    from modeldesk.trainers.data import LabeledSample

    samples = []
    for label_dir in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        for path in sorted(label_dir.iterdir()):
            if path.suffix.lower() not in suffixes:
                continue
            bucket = int(hashlib.sha1(path.name.encode()).hexdigest(), 16) % 20
            split = "test" if bucket < 5 else "val" if bucket < 7 else "train"
            samples.append(
                LabeledSample(
                    key=hashlib.sha256(path.read_bytes()).hexdigest(),
                    source=str(path),
                    target=label_dir.name,
                    split=split,
                )
            )
    return samples


def spectrogram_images(audio_root: Path, out_root: Path, size: int = 128) -> Path:
    """A second image set made from shared data: spoken-digit clips as log-spectrogram pictures.

    Each ``audio_root/<label>/<clip>.wav`` (8 kHz mono 16-bit, as in ``fsdd_audio``) becomes
    ``out_root/<label>/<clip>.png``: a 256-point STFT (hop 32), power in dB, low
    frequencies at the bottom, the loudest 60 dB of the clip mapped to 0..255, stretched to ``size`` x ``size``. Deterministic; existing files are kept.
    """
    import wave

    import numpy as np
    from PIL import Image

    window = np.hanning(256)
    for wav in sorted(Path(audio_root).glob("*/*.wav")):
        target = Path(out_root) / wav.parent.name / (wav.stem + ".png")
        if target.is_file():
            continue
        with wave.open(str(wav)) as reader:
            signal = np.frombuffer(reader.readframes(reader.getnframes()), np.int16).astype(np.float64)
        signal = np.pad(signal, (0, max(0, 256 - len(signal))))
        frames = np.lib.stride_tricks.sliding_window_view(signal, 256)[::32] * window
        db = 10 * np.log10(np.abs(np.fft.rfft(frames, axis=1)) ** 2 + 1e-6).T[::-1]
        scaled = 255 * np.clip((db - db.max() + 60) / 60, 0, 1)
        target.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(scaled.astype(np.uint8)).convert("RGB").resize((size, size), Image.BILINEAR).save(
            target
        )
    return Path(out_root)

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
            samples.append(LabeledSample(key=hashlib.sha256(path.read_bytes()).hexdigest(), source=str(path),
                                         target=label_dir.name, split=split))
    return samples

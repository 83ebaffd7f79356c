"""Made detection data: photos with a drawn red square and/or a blue disc at known places."""

from __future__ import annotations

import hashlib

import numpy as np

from modeldesk.app.sample_data import make_boxes_image
from modeldesk.datasets.records import Box
from modeldesk.trainers.data import LabeledSample


def make_detection_samples(folder, n=30, seed=0, sizes=((200, 150), (150, 200), (180, 180))):
    """``n`` photos as LabeledSample rows: 60% train, 20% val, 20% test."""
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(n):
        path = folder / f"shapes{i:03d}.png"
        image, boxes = make_boxes_image(rng, sizes[i % len(sizes)])
        image.save(path)
        split = "train" if i % 5 < 3 else "val" if i % 5 == 3 else "test"
        samples.append(
            LabeledSample(
                hashlib.sha256(path.read_bytes()).hexdigest(), str(path), tuple(Box(*b) for b in boxes), split
            )
        )
    return samples

"""What a model's raw outputs mean, keyed by the card's ``target``: one label, or tags."""

from __future__ import annotations

import numpy as np


class LabelOutput:
    """Class probabilities (N, C) -> ``{"label", "score", "scores"}`` per item."""

    kind = "label"

    def __init__(self, card: dict):
        self.card = card
        self.labels = [str(label) for label in card["labels"]]
        self.names = [card.get("output_name", "probabilities")]

    def format(self, outputs: list) -> list[dict]:
        return format_predictions(outputs[0], self.labels)


class TagsOutput(LabelOutput):
    """Per-tag probabilities (N, C) -> the tags over their own thresholds (``card["thresholds"]``).

    Each item also carries ``label``/``score`` (the most likely tag) and every tag's ``scores``, so
    that clients written for single-label models keep working.
    """

    kind = "tags"

    def __init__(self, card: dict):
        super().__init__(card)
        thresholds = card.get("thresholds") or {}
        self.thresholds = np.array([float(thresholds.get(label, 0.5)) for label in self.labels])

    def format(self, outputs: list) -> list[dict]:
        results = format_predictions(outputs[0], self.labels)
        for result, row in zip(results, np.asarray(outputs[0], dtype=np.float64)):
            on = np.flatnonzero(row >= self.thresholds)
            result["tags"] = [self.labels[i] for i in on[np.argsort(-row[on], kind="stable")]]
        return results


def format_predictions(probabilities: np.ndarray, labels: list[str]) -> list[dict]:
    """Turn an (N, n_classes) probability array into ``{"label", "score", "scores"}`` dicts."""
    results = []
    for row in np.asarray(probabilities, dtype=np.float64):
        best = int(np.argmax(row))
        results.append({
            "label": labels[best],
            "score": float(row[best]),
            "scores": {label: float(p) for label, p in zip(labels, row)},
        })
    return results

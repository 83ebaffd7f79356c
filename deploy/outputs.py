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
        # "unlike anything it was trained on": a graph output and its threshold (see the card's novelty)
        novelty: dict = card["novelty"] if isinstance(card.get("novelty"), dict) else {}
        self.novelty_threshold = float(novelty.get("threshold", 0.0)) if novelty.get("output") else None
        if novelty.get("output"):
            self.names.append(str(novelty["output"]))

    def format(self, outputs: list) -> list[dict]:
        return self.mark_unsure(format_predictions(outputs[0], self.labels), outputs)

    @property
    def schema(self) -> dict:
        """The extra keys of a prediction, for the OpenAPI document."""
        if self.novelty_threshold is None:
            return {}
        return {
            "familiarity": {
                "type": "number",
                "description": "how much the input looks like the training "
                "inputs; below the card's novelty threshold (0) the answer is not sure",
            },
            "sure": {
                "type": "boolean",
                "description": "false: unlike anything the model was trained on, "
                "so the label is only its closest guess",
            },
        }

    def mark_unsure(self, results: list[dict], outputs: list) -> list[dict]:
        """Add ``familiarity`` and ``sure`` (False: unlike the training inputs; the label is then only
        the closest guess) to each result, for models whose card has a novelty output."""
        if self.novelty_threshold is None or len(outputs) < 2:
            return results
        for result, raw in zip(results, np.asarray(outputs[1], dtype=np.float64).reshape(-1)):
            value = float(raw) if np.isfinite(raw) else -1.0
            result["familiarity"] = round(value, 4)
            result["sure"] = bool(value >= self.novelty_threshold)
        return results


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
        results = self.mark_unsure(format_predictions(outputs[0], self.labels), outputs)
        for result, row in zip(results, np.asarray(outputs[0], dtype=np.float64)):
            on = np.flatnonzero(row >= self.thresholds)
            result["tags"] = [self.labels[i] for i in on[np.argsort(-row[on], kind="stable")]]
        return results


def format_predictions(probabilities: np.ndarray, labels: list[str]) -> list[dict]:
    """Turn an (N, n_classes) probability array into ``{"label", "score", "scores"}`` dicts."""
    results = []
    for row in np.asarray(probabilities, dtype=np.float64):
        best = int(np.argmax(row))
        results.append(
            {
                "label": labels[best],
                "score": float(row[best]),
                "scores": {label: float(p) for label, p in zip(labels, row)},
            }
        )
    return results

"""Detector outputs: the graph's final boxes -> ``{"boxes": [{label, score, box}], ...}`` per image.

The graph already decoded, rescaled to the original image's pixels and suppressed overlapping
boxes; this only keeps the boxes at or above the score threshold (the card's ``score_threshold``,
chosen on the validation images; a caller may move it) and groups them by image.
"""

from __future__ import annotations

from typing import Any

import numpy as np

DEFAULT_THRESHOLD = 0.5


class BoxesOutput:
    """``detections`` (K, 7: image, x0, y0, x1, y1, score, class) and ``sizes`` (N, 2) -> one dict per image.

    Each dict has ``boxes`` (best first, each ``{"label", "score", "box": [x0, y0, x1, y1]}``), and,
    so that clients written for classifiers keep working, ``label``/``score`` of the best box (None
    and 0.0 without any) and ``scores``: each label's best box score.
    """

    kind = "boxes"
    one_score_per_label = False  # the first output is (K, 7) rows of boxes, not (N, labels)
    #: what each prediction adds, for the service's OpenAPI document
    schema = {
        "boxes": {
            "type": "array",
            "description": "found objects, best first",
            "items": {
                "type": "object",
                "properties": {
                    "label": {"type": "string"},
                    "score": {"type": "number"},
                    "box": {
                        "type": "array",
                        "items": {"type": "number"},
                        "minItems": 4,
                        "maxItems": 4,
                        "description": "x0, y0, x1, y1 in the original image's pixels",
                    },
                },
            },
        }
    }

    def __init__(self, card: dict):
        self.card = card
        self.labels = [str(label) for label in card["labels"]]
        self.names = [card.get("output_name", "detections"), card.get("sizes_output", "sizes")]
        self.threshold = float(card.get("score_threshold", DEFAULT_THRESHOLD))

    def format(self, outputs: list, threshold: float | None = None) -> list[dict]:
        detections = np.asarray(outputs[0], np.float64).reshape(-1, 7)
        count = len(outputs[1])
        cut = self.threshold if threshold is None else float(threshold)
        results: list[dict[str, Any]] = [
            {"label": None, "score": 0.0, "scores": {label: 0.0 for label in self.labels}, "boxes": []}
            for _ in range(count)
        ]
        for row in detections[np.argsort(-detections[:, 5], kind="stable")]:
            image, score, cls = int(row[0]), float(row[5]), int(row[6])
            if score < cut or not 0 <= image < count or not 0 <= cls < len(self.labels):
                continue
            result, label = results[image], self.labels[cls]
            result["boxes"].append(
                {"label": label, "score": score, "box": [round(float(v), 2) for v in row[1:5]]}
            )
            result["scores"][label] = max(result["scores"][label], score)
            if result["label"] is None:
                result["label"], result["score"] = label, score
        return results

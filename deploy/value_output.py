"""What a regression model's raw output means (the card's ``target`` ``"value"``): one number per item."""

from __future__ import annotations

import math

import numpy as np


class ValueOutput:
    """Predicted values (N,) or (N, 1) -> ``{"value", "label"}`` per item (``label``: the value as text,
    for clients written for classifiers)."""

    kind = "value"

    def __init__(self, card: dict):
        self.card = card
        self.labels: list[str] = []
        self.names = [card.get("output_name", "value")]
        self.unit = str(card.get("unit") or "")
        self.digits = int(card.get("digits", 4))

    @property
    def schema(self) -> dict:
        """The extra keys of a prediction, for the OpenAPI document."""
        return {"value": {"type": "number", "description": "the predicted value of the target column"}}

    def format(self, outputs: list) -> list[dict]:
        results: list[dict] = []
        for raw in np.asarray(outputs[0], dtype=np.float64).reshape(-1):
            value = float(raw) if math.isfinite(raw) else None
            shown = "" if value is None else f"{value:.{self.digits}g}"
            results.append({"value": value, "label": shown, "score": None, "scores": {}})
        return results

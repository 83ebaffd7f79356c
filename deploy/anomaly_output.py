"""Anomaly outputs: the graph's score, yes/no and heatmap -> ``{"score", "anomalous", ...}`` per photo.

The graph gives ``score`` (N,), ``anomalous`` (N,), ``heatmap`` (N, S, S) over the whole photo and
``sizes`` (N, 2) the photos' (width, height). A photo is flagged when its score reaches the card's
``threshold`` (chosen on held-out good parts; a caller may move it). ``label``/``scores`` are there
too, so clients written for classifiers keep working. :func:`heatmap_png` draws a heatmap at the
photo's own size. numpy and Pillow only: the deploy bundle copies this module verbatim.
"""

from __future__ import annotations

import base64
import io
from typing import ClassVar

import numpy as np
from PIL import Image

GOOD, DEFECT = "good", "defect"


class AnomalyOutput:
    """One dict per photo: ``score``, ``anomalous``, ``label`` (good/defect), ``threshold``, and the
    heatmap (an array in ``heatmap``; the service turns it into a PNG on request)."""

    kind = "anomaly"
    one_score_per_label = False
    schema: ClassVar[dict] = {
        "anomalous": {"type": "boolean", "description": "true: unlike the good parts the model learned"},
        "threshold": {"type": "number", "description": "score from which a photo counts as anomalous"},
        "heatmap_png": {
            "type": "string",
            "description": "with ?heatmap=1: where the photo is unlike the good parts, a PNG (base64) "
            "at the photo's size, brighter = more unusual",
        },
    }

    def __init__(self, card: dict):
        self.card = card
        self.labels = [str(label) for label in card["labels"]]
        self.names = [
            card.get("output_name", "score"),
            card.get("flag_output", "anomalous"),
            card.get("heatmap_output", "heatmap"),
            card.get("sizes_output", "sizes"),
        ]
        self.threshold = float(card.get("threshold", 0.0))
        low, high = card.get("heatmap_range") or (0.0, max(self.threshold, 1e-6))
        self.heat_range = (float(low), float(high))

    def respond(self, prediction: dict, options=None) -> dict:
        """A prediction as the service sends it: JSON-ready, with the heatmap as a PNG only when
        ``options`` (the request's query) asks ``heatmap=1``."""
        wanted = str((options or {}).get("heatmap", "")).lower() in ("1", "true", "yes", "png")
        return public(prediction, self.heat_range, with_heatmap=wanted)

    def format(self, outputs: list, threshold: float | None = None) -> list[dict]:
        scores = np.asarray(outputs[0], np.float64).reshape(-1)
        heatmaps = np.asarray(outputs[2], np.float32) if len(outputs) > 2 else None
        sizes = np.asarray(outputs[3], np.float64).reshape(-1, 2) if len(outputs) > 3 else None
        cut = self.threshold if threshold is None else float(threshold)
        results = []
        for i, score in enumerate(scores):
            flagged = bool(score >= cut)
            result = {
                "label": DEFECT if flagged else GOOD,
                "score": float(score),
                "anomalous": flagged,
                "threshold": cut,
                "scores": {GOOD: float(score < cut), DEFECT: float(flagged)},
                "confidence": confidence(float(score), cut),
            }
            if heatmaps is not None:
                result["heatmap"] = heatmaps[i]
            if sizes is not None:
                result["size"] = [round(float(v)) for v in sizes[i]]
            results.append(result)
        return results


def confidence(score: float, threshold: float) -> float:
    """How sure the yes/no is, 0.5 (right at the threshold) to 1 (twice or under none of it away)."""
    return 0.5 + 0.5 * min(abs(score - threshold) / max(abs(threshold), 1e-9), 1.0)


def heatmap_at_size(heatmap: np.ndarray, size) -> np.ndarray:
    """The (S, S) heatmap stretched bilinearly to the photo's (width, height)."""
    width, height = (int(v) for v in size)
    image = Image.fromarray(np.asarray(heatmap, np.float32), mode="F")
    return np.asarray(image.resize((max(1, width), max(1, height)), Image.Resampling.BILINEAR), np.float32)


def heat_levels(heatmap: np.ndarray, low: float, high: float) -> np.ndarray:
    """Heat from 0 (as usual as good parts) to 255 (at or past ``high``), as uint8."""
    scaled = (np.asarray(heatmap, np.float32) - low) / max(high - low, 1e-9)
    return (np.clip(scaled, 0.0, 1.0) * 255).astype(np.uint8)


def colour_heat(levels: np.ndarray) -> np.ndarray:
    """uint8 heat (H, W) -> RGBA (H, W, 4): transparent where usual, yellow to red, more opaque where hot."""
    t = levels.astype(np.float32) / 255.0
    rgba = np.zeros((*levels.shape, 4), np.uint8)
    rgba[..., 0] = 255
    rgba[..., 1] = (220 * (1 - t)).astype(np.uint8)
    rgba[..., 3] = (np.clip((t - 0.15) / 0.85, 0, 1) * 200).astype(np.uint8)
    return rgba


def heatmap_png(result: dict, heat_range) -> bytes:
    """A prediction's heatmap as a PNG at the photo's size (RGBA: lay it over the photo)."""
    heat = result["heatmap"]
    if result.get("size"):
        heat = heatmap_at_size(heat, result["size"])
    buffer = io.BytesIO()
    Image.fromarray(colour_heat(heat_levels(heat, *heat_range)), mode="RGBA").save(buffer, format="PNG")
    return buffer.getvalue()


def overlay(photo: Image.Image, heatmap: np.ndarray, heat_range) -> Image.Image:
    """``photo`` (any mode) with the heatmap drawn over it, at the photo's size."""
    base = photo.convert("RGBA")
    heat = colour_heat(heat_levels(heatmap_at_size(heatmap, base.size), *heat_range))
    return Image.alpha_composite(base, Image.fromarray(heat, mode="RGBA")).convert("RGB")


def public(result: dict, heat_range, *, with_heatmap: bool = False) -> dict:
    """A prediction made JSON-ready: the heatmap array dropped, or sent as a base64 PNG."""
    out = {k: v for k, v in result.items() if k != "heatmap"}
    if with_heatmap and "heatmap" in result:
        out["heatmap_png"] = base64.b64encode(heatmap_png(result, heat_range)).decode("ascii")
    return out

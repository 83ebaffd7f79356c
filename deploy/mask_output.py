"""Segmentation outputs: the graph's mask at the photo's size -> ``{"mask", "areas", ...}`` per photo.

The graph gives ``mask`` (N, H, W) uint8, the class index of every pixel of the photo, and
``class_scores`` (N, C, G, G), each class's probability on the model's grid. A prediction carries the
mask (an array; the service sends it as a PNG), each class's share of the photo in ``areas`` and its
pixel count in ``pixels`` (what the console and the edge rules read), and ``label``/``score``/``scores``
(the class covering most of the photo, its share, every class's share) so that clients written for
classifiers keep working. numpy and Pillow only: the deploy bundle copies this module verbatim.
"""

from __future__ import annotations

import base64
import io
from typing import ClassVar

import numpy as np
from PIL import Image

try:
    from modeldesk.outlines import mask_polygons
except ImportError:  # the deploy bundle, which copies the module beside this one
    from .outlines import mask_polygons  # type: ignore[no-redef]

#: the colours masks are drawn in (class index -> RGB), repeated past the end
PALETTE = (
    (230, 25, 75),
    (60, 180, 75),
    (255, 225, 25),
    (0, 130, 200),
    (245, 130, 48),
    (145, 30, 180),
    (70, 240, 240),
    (240, 50, 230),
    (210, 245, 60),
    (250, 190, 212),
    (0, 128, 128),
    (220, 190, 255),
    (170, 110, 40),
    (255, 250, 200),
    (128, 0, 0),
    (170, 255, 195),
)
VOID = 255


class MaskOutput:
    """One dict per photo: ``mask`` (H, W) uint8 class indices into ``classes``, ``areas`` and
    ``pixels`` per class, ``size`` [width, height], and ``label``/``score``/``scores``."""

    kind = "mask"
    one_score_per_label = False
    #: the mask has the photo's own size, so photos of different sizes cannot share one run
    one_per_run = True
    schema: ClassVar[dict] = {
        "classes": {"type": "array", "items": {"type": "string"}, "description": "mask value -> class"},
        "areas": {"type": "object", "description": "each class's share of the photo's pixels (0-1)"},
        "confidence": {
            "type": "number",
            "description": "how sure the model is of the whole mask (0-1): the least sure photos are "
            "the ones to label next",
        },
        "pixels": {"type": "object", "description": "each class's number of pixels"},
        "mask_png": {
            "type": "string",
            "description": "the mask at the photo's size as a palette PNG (base64): a pixel's value is "
            "its class's index in `classes`; ?mask=0 leaves it out",
        },
        "polygons": {
            "type": "object",
            "description": "with ?polygons=1: per class, the outline of each of its regions as [[x, y], ...] "
            "in the photo's pixels (corners of pixels: pixel (x, y) spans x..x+1); a region's outline "
            "encloses its holes, which are other classes' regions: drawn largest first, the outlines "
            "give back the mask exactly",
        },
        "score_pngs": {
            "type": "object",
            "description": "with ?scores=1: per class, its probability on the model's grid as a "
            "grayscale PNG at the photo's size (base64), 255 = certain",
        },
    }

    def __init__(self, card: dict):
        self.card = card
        self.labels = [str(label) for label in card["labels"]]
        self.names = [card.get("output_name", "mask"), card.get("scores_output", "class_scores")]

    def format(self, outputs: list) -> list[dict]:
        masks = np.asarray(outputs[0])
        scores = np.asarray(outputs[1], np.float32) if len(outputs) > 1 else None
        results = []
        for i, mask in enumerate(masks):
            mask = np.ascontiguousarray(mask, np.uint8)
            counts = np.bincount(mask.ravel(), minlength=len(self.labels))[: len(self.labels)]
            total = max(int(mask.size), 1)
            areas = {label: float(c) / total for label, c in zip(self.labels, counts)}
            best = int(np.argmax(counts)) if len(counts) else 0
            result = {
                "label": self.labels[best] if self.labels else None,
                "score": areas.get(self.labels[best], 0.0) if self.labels else 0.0,
                "scores": areas,
                "areas": areas,
                "pixels": {label: int(c) for label, c in zip(self.labels, counts)},
                "classes": list(self.labels),
                "size": [int(mask.shape[1]), int(mask.shape[0])],
                "mask": mask,
            }
            if scores is not None:
                result["class_scores"] = scores[i]
                # how sure, 0..1: the most likely class's probability, averaged over the photo's grid
                result["confidence"] = float(scores[i].max(axis=0).mean()) if scores[i].size else 0.0
            results.append(result)
        return results

    def respond(self, prediction: dict, options=None) -> dict:
        """A prediction as the service sends it: JSON-ready, the mask as a PNG unless ``mask=0`` is asked,
        per-class score maps as PNGs when ``scores=1`` is, each class's outlines when ``polygons=1`` is."""
        options = options or {}
        out = {k: v for k, v in prediction.items() if k not in ("mask", "class_scores")}
        if "mask" in prediction and str(options.get("mask", "1")).lower() not in ("0", "false", "no"):
            out["mask_png"] = base64.b64encode(mask_png(prediction["mask"])).decode("ascii")
        if "mask" in prediction and str(options.get("polygons", "")).lower() in ("1", "true", "yes"):
            out["polygons"] = class_polygons(prediction["mask"], self.labels)
        wanted = str(options.get("scores", "")).lower() in ("1", "true", "yes", "png")
        if wanted and "class_scores" in prediction:
            out["score_pngs"] = {
                label: base64.b64encode(score_png(grid, prediction["size"])).decode("ascii")
                for label, grid in zip(self.labels, prediction["class_scores"])
            }
        return out


def class_polygons(mask: np.ndarray, labels: list[str]) -> dict[str, list[list[list[int]]]]:
    """Each class's region outlines (``[[x, y], ...]`` in pixel corners), largest region first; a class
    with no pixels has an empty list."""
    polygons: dict[str, list[list[list[int]]]] = {label: [] for label in labels}
    for value, points in mask_polygons(mask):
        if value < len(labels):
            pairs = [[int(points[k]), int(points[k + 1])] for k in range(0, len(points), 2)]
            polygons[labels[value]].append(pairs)
    return polygons


def palette_bytes(n: int = 256) -> list[int]:
    """A flat RGB palette: class k gets ``PALETTE[k]`` (repeated), 255 (not labeled) black."""
    flat: list[int] = []
    for k in range(n):
        flat += [0, 0, 0] if k == VOID else list(PALETTE[k % len(PALETTE)])
    return flat


def mask_png(mask: np.ndarray) -> bytes:
    """The mask as a palette PNG: its pixel values are the class indices, its colours the palette's."""
    mask = np.ascontiguousarray(mask, np.uint8)
    image = Image.frombytes("P", (mask.shape[1], mask.shape[0]), mask.tobytes())
    image.putpalette(palette_bytes())
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def score_png(grid: np.ndarray, size) -> bytes:
    """One class's probabilities (G, G) as a grayscale PNG stretched bilinearly to (width, height)."""
    image = Image.fromarray(np.asarray(grid, np.float32), mode="F")
    width, height = (max(1, int(v)) for v in size)
    stretched = np.asarray(image.resize((width, height), Image.Resampling.BILINEAR), np.float32)
    buffer = io.BytesIO()
    Image.fromarray((np.clip(stretched, 0, 1) * 255).astype(np.uint8), mode="L").save(buffer, format="PNG")
    return buffer.getvalue()


def colour_mask(mask: np.ndarray, alpha: int = 140) -> np.ndarray:
    """(H, W) class indices -> RGBA (H, W, 4): each class in its palette colour, not labeled clear."""
    table = np.zeros((256, 4), np.uint8)
    for k in range(255):
        table[k, :3] = PALETTE[k % len(PALETTE)]
        table[k, 3] = alpha
    return table[np.asarray(mask, np.uint8)]


def overlay(photo: Image.Image, mask: np.ndarray, alpha: int = 140) -> Image.Image:
    """``photo`` with the mask drawn over it (the mask must have the photo's size)."""
    base = photo.convert("RGBA")
    return Image.alpha_composite(base, Image.fromarray(colour_mask(mask, alpha), mode="RGBA")).convert("RGB")

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


def slot_color(slot: int) -> str:
    """``#rrggbb`` of a class's colour slot (``datasets.masks.class_slots``: kept with the class, so
    adding a class shifts no other class's colour)."""
    return "#{:02x}{:02x}{:02x}".format(*PALETTE[int(slot) % len(PALETTE)])


def class_colors(labels, colors=None) -> list[tuple[int, int, int]]:
    """The RGB of each class: ``colors`` (a model card's ``#rrggbb`` list) when it names one per class,
    else the palette in class order (models trained before colours were kept with the classes)."""
    given = list(colors or [])
    if len(given) == len(labels) and all(
        isinstance(c, str)
        and len(c) == 7
        and c[0] == "#"
        and all(ch in "0123456789abcdefABCDEF" for ch in c[1:])
        for c in given
    ):
        return [tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in given]  # type: ignore[misc]
    return [PALETTE[k % len(PALETTE)] for k in range(len(labels))]


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
        self.colors = class_colors(self.labels, card.get("colors"))

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
            out["mask_png"] = base64.b64encode(mask_png(prediction["mask"], self.colors)).decode("ascii")
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


def _color_of(k: int, colors) -> tuple:
    return tuple(colors[k]) if colors and k < len(colors) else PALETTE[k % len(PALETTE)]


def palette_bytes(n: int = 256, colors=None) -> list[int]:
    """A flat RGB palette: class k gets ``colors[k]`` (default ``PALETTE[k]``, repeated), 255 (not
    labeled) black."""
    flat: list[int] = []
    for k in range(n):
        flat += [0, 0, 0] if k == VOID else list(_color_of(k, colors))
    return flat


def mask_png(mask: np.ndarray, colors=None) -> bytes:
    """The mask as a palette PNG: its pixel values are the class indices, its colours ``colors``
    (RGB per class, see :func:`class_colors`; default the palette in class order)."""
    mask = np.ascontiguousarray(mask, np.uint8)
    image = Image.frombytes("P", (mask.shape[1], mask.shape[0]), mask.tobytes())
    image.putpalette(palette_bytes(colors=colors))
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


def colour_mask(mask: np.ndarray, alpha: int = 140, colors=None) -> np.ndarray:
    """(H, W) class indices -> RGBA (H, W, 4): each class in its colour (``colors``, default the
    palette's), not labeled clear."""
    table = np.zeros((256, 4), np.uint8)
    for k in range(255):
        table[k, :3] = _color_of(k, colors)
        table[k, 3] = alpha
    return table[np.asarray(mask, np.uint8)]


def overlay(photo: Image.Image, mask: np.ndarray, alpha: int = 140, colors=None) -> Image.Image:
    """``photo`` with the mask drawn over it in ``colors`` (the mask must have the photo's size)."""
    base = photo.convert("RGBA")
    layer = Image.fromarray(colour_mask(mask, alpha, colors), mode="RGBA")
    return Image.alpha_composite(base, layer).convert("RGB")

"""Pictures for segmentation models: a photo with a mask drawn over it (Deploy's try-it) and a photo's
true and predicted masks side by side (Evaluate), in the colours the service's mask PNGs use."""

from __future__ import annotations

import base64
import hashlib
import io
import logging
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from modeldesk.datasets.masks import VOID, class_slots
from modeldesk.deploy.mask_output import class_colors, overlay, slot_color
from modeldesk.deploy.preprocess import load_image

log = logging.getLogger(__name__)

GAP = 6  # pixels between the two pictures of a comparison


def project_colors(ws, project) -> list[str]:
    """``#rrggbb`` of each of the project's classes (in ``ws.labels`` order): kept with the class, so
    adding a class moves no other class's colour; the models trained on it draw in the same."""
    return [slot_color(s) for s in class_slots(ws.store, ws.project(project))]


def class_slots_by_name(ws, project) -> dict[str, int]:
    """Class name -> its colour slot (``datasets.masks.class_slots``) in ``project`` (name or id)."""
    project = ws.project(project)
    return dict(zip(ws.store.labels(project), class_slots(ws.store, project)))


def model_colors(labels, colors=None) -> list[str]:
    """``#rrggbb`` of each of a model's classes: its card's ``colors``, else the palette in class order."""
    return ["#{:02x}{:02x}{:02x}".format(*rgb) for rgb in class_colors(labels, colors)]


def label_colors(ws, model) -> dict[str, str]:
    """Each class of ``model`` and its ``#rrggbb`` on the overlays: the legend of a try-it answer."""
    predictor = ws._predictor(model)
    labels = [str(x) for x in predictor.labels]
    return dict(zip(labels, model_colors(labels, predictor.artifact.card.get("colors"))))


def _predictor_colors(predictor) -> list:
    return class_colors([str(x) for x in predictor.labels], predictor.artifact.card.get("colors"))


def _save(picture: Image.Image, ws, folder: str, *key) -> Path:
    digest = hashlib.sha1("\0".join(map(str, key)).encode()).hexdigest()[:16]
    out = Path(ws.paths.tmp) / folder / f"{digest}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp.png")
    picture.save(tmp)
    tmp.replace(out)
    return out


def prediction_mask(prediction: dict) -> np.ndarray:
    """The class-index mask of a prediction: its array, or the PNG the service answers with."""
    if "mask" in prediction:
        return np.asarray(prediction["mask"], np.uint8)
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(prediction["mask_png"]))), np.uint8)


def overlay_file(ws, model, path, prediction: dict, *, max_side: int = 1024) -> Path:
    """A PNG of the photo at ``path`` with the predicted mask (an array or the service's PNG) drawn over
    it, at most ``max_side`` pixels on its longer side."""
    colors = _predictor_colors(ws._predictor(model))
    picture = overlay(load_image(str(path)), prediction_mask(prediction), colors=colors)
    picture.thumbnail((max_side, max_side), Image.BILINEAR)
    return _save(picture, ws, "masks", model, Path(path).resolve())


def truth_for_model(ws, project, sample_id: int, model_labels: list[str]) -> np.ndarray | None:
    """The sample's saved mask renumbered to the model's classes (by name; classes it lacks are void)."""
    mask = ws.sample_mask(sample_id)
    if mask is None:
        return None
    table = np.full(256, VOID, np.uint8)
    index = {name: k for k, name in enumerate(model_labels)}
    for k, name in enumerate(ws.labels(project)):
        table[k] = index.get(name, VOID)
    return table[mask]


def suggested_mask(ws, model, project, sample_id: int) -> np.ndarray | None:
    """The model's mask for a sample, numbered as the project's classes (classes it does not know are
    void); None when the model cannot read the photo."""
    predictor = ws._predictor(model)
    try:
        prediction = predictor.predict([str(ws.sample(sample_id).path)])[0]
    except (OSError, ValueError) as exc:
        log.warning("no suggested mask for sample %s: %s", sample_id, exc)
        return None
    index = {name: k for k, name in enumerate(ws.labels(project))}
    table = np.full(256, VOID, np.uint8)
    for k, name in enumerate(predictor.labels):
        table[k] = index.get(str(name), VOID)
    return table[prediction_mask(prediction)]


def comparison_file(ws, model, project, sample_id: int, *, side: int = 200) -> Path:
    """A PNG of the photo twice, ``side`` pixels at most each: with its true mask, then with the model's."""
    predictor = ws._predictor(model)  # one kept session per model
    sample = ws.sample(sample_id)
    prediction = predictor.predict([str(sample.path)])[0]
    photo = load_image(str(sample.path))
    truth = truth_for_model(ws, project, sample_id, [str(x) for x in predictor.labels])
    if truth is None or truth.shape != prediction["mask"].shape:
        truth = np.full(prediction["mask"].shape, VOID, np.uint8)
    colors = _predictor_colors(predictor)
    pictures = [overlay(photo, truth, colors=colors), overlay(photo, prediction["mask"], colors=colors)]
    for picture, words in zip(pictures, ("labeled", "model")):
        picture.thumbnail((side, side), Image.BILINEAR)
        caption(picture, words)
    width, height = pictures[0].size
    both = Image.new("RGBA", (2 * width + GAP, height), (0, 0, 0, 0))  # the gap shows the page
    both.paste(pictures[0], (0, 0))
    both.paste(pictures[1], (width + GAP, 0))
    return _save(both, ws, "mask-comparisons", model, sample_id, side)


def caption(picture: Image.Image, words: str) -> None:
    """Write ``words`` on a dark tag in ``picture``'s top left corner (which half is which, without
    reading the card's text)."""
    try:
        font = ImageFont.load_default(size=12)
    except TypeError:  # Pillow before 10.1 has one bitmap size
        font = ImageFont.load_default()
    draw = ImageDraw.Draw(picture)
    left, top, right, bottom = draw.textbbox((0, 0), words, font=font)
    draw.rectangle((0, 0, right - left + 8, bottom - top + 6), fill=(32, 32, 32, 255))
    draw.text((4 - left, 3 - top), words, fill=(255, 255, 255, 255), font=font)


def comparison_thumbnails(ws, model, project, sample_ids, *, side: int = 200, should_stop=None) -> list:
    """``[(sample_id, PNG path or None, the photo's file name)]``: each photo's true and predicted masks
    side by side."""
    out = []
    for sample_id in sample_ids:
        if should_stop is not None and should_stop():
            break
        picture, name = None, ""
        if sample_id is not None:
            try:
                name = Path(str(ws.sample(sample_id).source or "")).name
                picture = comparison_file(ws, model, project, sample_id, side=side)
            except (OSError, ValueError, KeyError) as exc:
                log.warning("no mask comparison for sample %s: %s", sample_id, exc)
        out.append((sample_id, picture, name))
    return out


__all__ = [
    "class_slots_by_name",
    "comparison_thumbnails",
    "model_colors",
    "overlay_file",
    "prediction_mask",
    "project_colors",
    "slot_color",  # the deploy side's, for the Label page (ui reaches deploy only through app)
    "suggested_mask",
    "truth_for_model",
]

"""Pictures for anomaly models: a photo with the model's heatmap laid over it (Deploy, Evaluate, Label)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from PIL import Image

from modeldesk.deploy.anomaly_output import overlay
from modeldesk.deploy.preprocess import load_image


def is_anomaly_prediction(prediction: dict) -> bool:
    return "anomalous" in prediction


def overlay_file(ws, model, path, *, max_side: int = 720) -> tuple[dict, Path]:
    """(the prediction as the service gives it, a PNG of the photo with its heatmap drawn) for ``path``.

    The picture is at most ``max_side`` pixels on its longer side, written under the workspace's
    temporary folder (named by the model and the file, so a second look reuses it)."""
    predictor = ws._predictor(model)  # one kept session per model
    prediction = predictor.predict([str(path)])[0]
    heat_range = predictor.output.heat_range
    photo = load_image(str(path))
    picture = overlay(photo, prediction["heatmap"], heat_range)
    picture.thumbnail((max_side, max_side), Image.BILINEAR)
    digest = hashlib.sha1(f"{model}\0{Path(path).resolve()}".encode()).hexdigest()[:16]
    out = Path(ws.paths.tmp) / "heatmaps" / f"{digest}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp.png")
    picture.save(tmp)
    tmp.replace(out)
    return predictor.output.respond(prediction), out


def overlay_thumbnails(ws, model, files, *, side: int = 168, should_stop=None) -> list:
    """``[(file, PNG path or None)]``: each photo with its heatmap, as a thumbnail (for the Evaluate page)."""
    out = []
    for file in files:
        if should_stop is not None and should_stop():
            break
        try:
            _, picture = overlay_file(ws, model, file, max_side=side)
        except (OSError, ValueError):
            picture = None
        out.append((file, picture))
    return out


def overlay_if_anomaly(ws, model, path, *, max_side: int = 1024) -> Path | None:
    """The photo with the heatmap drawn when ``model`` is an anomaly model (its output says so), else None."""
    if model is None or getattr(ws._predictor(model).output, "kind", None) != "anomaly":
        return None
    return overlay_file(ws, model, path, max_side=max_side)[1]

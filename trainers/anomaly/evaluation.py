"""Evaluating an anomaly artifact on labeled photos: through the predictor, as users run it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from PIL import Image

from modeldesk.deploy import Predictor, load_artifact
from modeldesk.errors import UserError
from modeldesk.trainers.anomaly.scoring import auroc, best_f1_threshold, counts_at, pixel_auroc

log = logging.getLogger(__name__)

GOOD_NAMES = ("good", "ok", "normal", "pass")
BATCH = 8
MAX_IMAGES_LISTED = 300


def is_good(label) -> bool:
    """Whether a label means a good part (``good``, ``ok``, ``normal``, ``pass``; any case)."""
    return str(label).strip().lower() in GOOD_NAMES


def load_mask(mask, size: int) -> np.ndarray:
    """A defect mask as a (size, size) bool array, squashed as photos are: ``mask`` is a file (white =
    defect) or an (H, W) array (true = defect), e.g. a mask stored in the project."""
    if isinstance(mask, np.ndarray):
        image = Image.fromarray(np.where(mask, 255, 0).astype(np.uint8), mode="L")
        return np.asarray(image.resize((size, size), Image.Resampling.NEAREST)) > 127
    with Image.open(mask) as image:
        squashed = image.convert("L").resize((size, size), Image.Resampling.NEAREST)
    return np.asarray(squashed) > 127


def predict_scores(artifact_path, samples, *, progress=None, heatmaps: bool = False) -> list[dict]:
    """The predictor's answer for every sample (the heatmap arrays kept only when asked)."""
    predictor = Predictor(artifact_path)
    out = []
    for start in range(0, len(samples), BATCH):
        chunk = samples[start : start + BATCH]
        for result in predictor.predict([s.source for s in chunk]):
            if not heatmaps:
                result.pop("heatmap", None)
            elif "heatmap" in result:  # half the memory: a test split of thousands of photos is kept whole
                result["heatmap"] = np.asarray(result["heatmap"], np.float16)
            out.append(result)
        if progress is not None:
            progress(min(start + BATCH, len(samples)), len(samples), "")
    return out


def anomaly_report(is_defect, scores, kinds, threshold: float) -> dict:
    """Image AUROC, the counts at ``threshold`` and the best-F1 threshold (for the Evaluate page)."""
    report = counts_at(is_defect, scores, threshold, kinds)
    report["auroc"] = auroc(is_defect, scores)
    report["best_f1_threshold"] = best_f1_threshold(is_defect, scores)
    report["accuracy"] = float(np.mean((np.asarray(scores) >= threshold) == np.asarray(is_defect, bool)))
    return report


def evaluate_anomaly(artifact_path, samples, *, progress=None, masks: Mapping | None = None) -> dict:
    """``auroc``, ``pixel_auroc`` (when ``masks``: sample key -> mask file or (H, W) bool array, a
    mapping such as the project's stored masks), ``catch_rate``,
    ``false_alarm_rate`` and the counts at the model's threshold, per-kind catch rates, and
    ``images``: every photo's file, kind and score, misses and false alarms first; and
    ``false_alarm_promise``, the false-alarm rate the model's threshold can promise (from its card)."""
    artifact = load_artifact(artifact_path)
    samples = [s for s in samples if s.target is not None]
    if not samples:
        raise UserError("no labeled photos (good or a defect kind) found to evaluate on")
    threshold = float(artifact.card.get("threshold", 0.0))
    size = int(artifact.card["preprocessing"]["size"])
    want_pixels = bool(masks)
    results = predict_scores(artifact.path, samples, progress=progress, heatmaps=want_pixels)
    scores = np.array([r["score"] for r in results])
    defect = np.array([not is_good(s.target) for s in samples])
    kinds = [str(s.target) for s in samples]
    report = anomaly_report(defect, scores, kinds, threshold)
    report["pixel_auroc"] = None
    if masks and want_pixels:
        heat, truth, found = [], [], 0
        for sample, result in zip(samples, results):
            mask = masks.get(sample.key)
            if mask is not None:
                found += 1
                try:
                    truth.append(load_mask(mask, size))
                except OSError as exc:
                    log.warning("cannot read the defect mask of %s: %s", sample.source, exc)
                    continue
            elif is_good(sample.target):
                truth.append(np.zeros((size, size), bool))  # a good part: no defect pixel anywhere
            else:
                continue
            heat.append(result["heatmap"])
        report["pixel_auroc"] = pixel_auroc(heat, truth)
        report["masks"] = found
    images = [
        {
            "key": s.key,
            "file": str(s.source),
            "kind": kind,
            "defect": bool(d),
            "score": float(score),
        }
        for s, kind, d, score in zip(samples, kinds, defect, scores)
    ]

    def wrong(m):
        return (m["score"] >= threshold) != m["defect"]

    images.sort(key=lambda m: (not wrong(m), -abs(m["score"] - threshold)))
    report["images"] = images[:MAX_IMAGES_LISTED]
    report["heatmap_range"] = artifact.card.get("heatmap_range")
    # what the threshold promises on unseen good parts (``scoring.false_alarm_plan``; None before it was kept)
    report["false_alarm_promise"] = artifact.card.get("false_alarm_promise")
    return report


def masks_in_folder(root, sources: dict) -> dict:
    """Sample key -> ``root/masks/<stem>.png`` for the samples (key -> source name) that have one."""
    folder = Path(root) / "masks"
    if not folder.is_dir():
        return {}
    found = {}
    for key, source in sources.items():
        stem = Path(str(source)).stem
        for ext in (".png", ".PNG", ".bmp", ".jpg"):
            candidate = folder / f"{stem}{ext}"
            if candidate.is_file():
                found[key] = candidate
                break
    return found

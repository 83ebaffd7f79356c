"""Anomaly metrics: AUROC, the threshold rules, and the counts people read ("catches N of M defects")."""

from __future__ import annotations

import numpy as np


def auroc(is_defect, scores) -> float | None:
    """Area under the ROC curve (ties count half); None when one of the two classes is missing."""
    y = np.asarray(is_defect, bool).reshape(-1)
    s = np.asarray(scores, np.float64).reshape(-1)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if not n_pos or not n_neg:
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), np.float64)
    sorted_s = s[order]
    # average ranks over ties
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_s)) + 1]
    ends = np.r_[starts[1:], len(s)]
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def false_alarm_threshold(good_scores, rate: float) -> float:
    """The lowest threshold that flags at most ``rate`` of these good parts (score >= threshold flags)."""
    s = np.sort(np.asarray(good_scores, np.float64))
    if not len(s):
        raise ValueError("no good parts to choose a threshold on")
    allowed = int(np.floor(rate * len(s)))
    if allowed <= 0:
        return float(np.nextafter(s[-1], np.inf))
    return float(np.nextafter(s[-1 - allowed], np.inf))


def best_f1_threshold(is_defect, scores) -> float | None:
    """The threshold with the best F1 for catching defects (None without both kinds)."""
    y = np.asarray(is_defect, bool)
    s = np.asarray(scores, np.float64)
    if not y.any() or y.all():
        return None
    best, cut = -1.0, None
    for t in np.unique(s):
        flagged = s >= t
        tp = int((flagged & y).sum())
        f1 = 2 * tp / max(int(flagged.sum()) + int(y.sum()), 1)
        if f1 > best:
            best, cut = f1, float(t)
    return cut


def counts_at(is_defect, scores, threshold: float, kinds=None) -> dict:
    """What people read at ``threshold``: caught defects, false alarms, and the catch rate per kind."""
    y = np.asarray(is_defect, bool)
    flagged = np.asarray(scores, np.float64) >= threshold
    caught, defects = int((flagged & y).sum()), int(y.sum())
    alarms, goods = int((flagged & ~y).sum()), int((~y).sum())
    out = {
        "threshold": float(threshold),
        "caught": caught,
        "defects": defects,
        "false_alarms": alarms,
        "good": goods,
        "catch_rate": caught / defects if defects else None,
        "false_alarm_rate": alarms / goods if goods else None,
    }
    if kinds is not None:
        per_kind = {}
        for kind in sorted({k for k, d in zip(kinds, y) if d}):
            mine = np.array([k == kind for k in kinds]) & y
            per_kind[kind] = {"caught": int((flagged & mine).sum()), "defects": int(mine.sum())}
        out["per_kind"] = per_kind
    return out


def pixel_auroc(heatmaps: list, masks: list, max_pixels: int = 2_000_000, seed: int = 0) -> float | None:
    """AUROC over pixels of (heatmap, mask) pairs of equal shape (masks: True = defect); pixels are
    sampled evenly when there are more than ``max_pixels``."""
    scores = np.concatenate([np.asarray(h, np.float32).reshape(-1) for h in heatmaps]) if heatmaps else []
    truth = np.concatenate([np.asarray(m, bool).reshape(-1) for m in masks]) if masks else []
    if len(scores) > max_pixels:
        keep = np.random.default_rng(seed).choice(len(scores), max_pixels, replace=False)
        scores, truth = scores[keep], truth[keep]
    return auroc(truth, scores)

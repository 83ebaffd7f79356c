"""Anomaly metrics: AUROC, the threshold rules, and the counts people read ("catches N of M defects")."""

from __future__ import annotations

import functools
import math

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


#: how sure a promised false-alarm rate is: on unseen good parts it holds 9 times in 10 (over the draw of
#: the good photos held back to set the threshold)
CONFIDENCE = 0.9


def _binomial_cdf(m: int, n: int, p: float) -> float:
    """P(Binomial(n, p) <= m), summed in log space (n of many thousands, p near 0)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if m >= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    terms = [
        base - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q for i in range(m + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


@functools.lru_cache(maxsize=4096)
def false_alarm_bound(photos: int, allowed: int, confidence: float = CONFIDENCE) -> float:
    """The false-alarm rate on unseen good parts that a threshold just above the ``allowed + 1``-th
    highest score of ``photos`` held-back good parts stays under, ``confidence`` of the time.

    Distribution-free for photos drawn alike: the unseen rate of such a threshold is Beta(allowed + 1,
    photos - allowed) distributed, so P(rate > r) = P(Binomial(photos, r) <= allowed); the bound is the
    r where that is ``1 - confidence`` (Clopper-Pearson's upper limit), found by bisection."""
    if photos <= allowed:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if _binomial_cdf(allowed, photos, mid) > 1 - confidence:
            lo = mid
        else:
            hi = mid
    return hi


def false_alarm_plan(photos: int, rate: float, confidence: float = CONFIDENCE) -> dict:
    """How many of ``photos`` held-back good parts the threshold may flag so that at most ``rate`` of
    unseen good parts raise a false alarm, ``confidence`` of the time: ``allowed`` (the most such held
    photos; 0 when even that cannot keep the promise), ``promised`` (the rate that can be promised:
    ``rate``, or the lowest possible when there are too few photos for it), ``lowest`` (that lowest)
    and ``needed`` (held-back good photos that ``rate`` needs)."""
    lowest = false_alarm_bound(photos, 0, confidence) if photos else 1.0
    # the bound grows with ``allowed`` and exceeds allowed / photos: bisect below rate * photos + 1
    allowed, above = 0, max(min(int(photos), int(rate * photos) + 1), 1)
    while above - allowed > 1:
        mid = (allowed + above) // 2
        if false_alarm_bound(photos, mid, confidence) <= rate:
            allowed = mid
        else:
            above = mid
    needed = math.ceil(math.log(1 - confidence) / math.log1p(-rate)) if 0 < rate < 1 else None
    return {
        "photos": int(photos),
        "asked": float(rate),
        "confidence": float(confidence),
        "allowed": allowed,
        "promised": float(max(rate, lowest)),
        "lowest": float(lowest),
        "needed": needed,
    }


def false_alarm_threshold(good_scores, rate: float, confidence: float = CONFIDENCE) -> float:
    """The threshold (score >= threshold flags) that keeps false alarms on unseen good parts at or under
    ``rate``, ``confidence`` of the time, from the scores of held-back good parts: just above the
    highest but ``false_alarm_plan(...)["allowed"]``. With too few photos for ``rate`` it is just
    above the highest score, the best that can be promised (``false_alarm_plan`` says how good)."""
    s = np.sort(np.asarray(good_scores, np.float64))
    if not len(s):
        raise ValueError("no good parts to choose a threshold on")
    allowed = false_alarm_plan(len(s), rate, confidence)["allowed"] if rate > 0 else 0
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


def _percent(rate: float) -> str:
    return f"{100 * rate:.1f}".rstrip("0").rstrip(".") + "%"


def promise_sentence(plan: dict) -> str:
    """One sentence on the false-alarm rate a threshold can promise (a :func:`false_alarm_plan`; with
    ``out_of_fold`` and ``held``, the trainer's cross-fitted count of the good photos that set it)."""
    sure = f"{plan['confidence']:.0%} sure"
    checked = plan.get("out_of_fold") or 0
    unseen = (
        f", each scored by a model that had not learned from it "
        f"({plan.get('held', plan['photos'] - checked):,} held back, {checked:,} checked in turns)"
    )
    if plan["promised"] > plan["asked"]:
        if checked:
            lead, needs = f"With {plan['photos']:,} good photos setting the threshold{unseen}", "good photos"
        else:
            lead, needs = f"With {plan['photos']:,} good photos held back to set the threshold", "held back"
        needed = f"; {_percent(plan['asked'])} needs {plan['needed']:,} {needs}" if plan.get("needed") else ""
        return (
            f"{lead}, the lowest false-alarm rate it can promise is {_percent(plan['lowest'])} ({sure})"
            f"{needed}: label more good photos."
        )
    photos = (
        f"{plan['photos']:,} good photos{unseen}" if checked else f"{plan['photos']:,} held-back good photos"
    )
    return (
        f"False alarms stay at or under {_percent(plan['asked'])} of good parts ({sure}), as set on {photos}."
    )

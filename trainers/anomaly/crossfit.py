"""The model of normal fitted on the bank's good photos, all of them or all but one fold, and the
cross-fitted threshold scores: each bank photo scored by a model of normal fitted without its fold.

Held-back good photos alone (59 on magnetic_tile) let a threshold promise no better than 3.8% false
alarms, 90% sure (``scoring.false_alarm_plan``). Scored out of fold, every good photo of the bank
is one the scoring model did not learn from, so all of them, held back or not, set the threshold and
count in its promise. The final model is still fitted on every bank photo.

Why the threshold stays conservative: a fold's model learned from 4/5 of the bank photos, the final
one from all of them (a fold's memory bank also keeps 4/5 of the final one's patches, searched in 4/5
of its pool, so the caps do not hand it as much as the final model), and a good photo's distance to
the normal learned from fewer photos (a bank covering fewer good patches, a Gaussian estimated from
fewer of them) is no smaller, on the whole, than to the normal learned from more. Out-of-fold scores
therefore run at or above the scores unseen good parts get from the final model, so a threshold above
all but a few of them flags unseen good parts no more often than planned. Measured
(``bench/train_anomaly.py``, magnetic_tile, 216 bank and 59 held-back goods against 191 test goods,
2026-12-04): the chance that an out-of-fold score is above a test good's score against the final
model is 0.56 [0.52, 0.61] for the memory bank and 0.56 [0.52, 0.61] for the per-position Gaussian
(90% bootstrap); with fold banks as large as the final one (4,000 patches from 40,000 either way) it
was 0.49 [0.45, 0.54]: alike, not higher. Each run records the same chance against its held-back
photos (``threshold_photos["out_of_fold_above_held"]`` in the card).
"""

from __future__ import annotations

import hashlib
import time

import numpy as np

from modeldesk.trainers.anomaly import bank as memory
from modeldesk.trainers.anomaly.bank import PositionGaussian, fit_gaussian, greedy_coreset, sample_pool

FOLDS = 5
#: fewer bank photos than this: the held-back photos alone set the threshold (each fold's model needs a few)
MIN_BANK = 2 * FOLDS
#: the share of the run's time budget by which the folds must be done (the export and its check follow)
FOLDS_END = 0.9
MAX_BANK_BYTES = 64 << 20  # the bank as a graph constant stays under this


def fold_of(key: str, folds: int = FOLDS) -> int:
    """The fold of a photo, from its content hash: stable across runs, and the same photo imported
    twice lands in one fold (never in the model that scores its copy)."""
    # salted: ``trainer.split_roles`` holds back the photos whose plain hash is 0 modulo 5, and the
    # same hash would leave one fold of the rest empty
    return int(hashlib.sha1(f"fold/{key}".encode()).hexdigest()[:8], 16) % folds


def fold_numbers(keys, folds: int = FOLDS) -> np.ndarray | None:
    """Each photo's fold (:func:`fold_of`), or None when some fold would leave fewer than 2 photos to
    fit on (or there are fewer than :data:`MIN_BANK` photos)."""
    if len(keys) < MIN_BANK:
        return None
    numbers = np.array([fold_of(k, folds) for k in keys])
    if any(np.sum(numbers != f) < 2 for f in np.unique(numbers)):
        return None
    return numbers


class NormalFitter:
    """Fits the template's model of normal on the bank photos, every one or all but one fold.

    Patches are computed once. The memory bank and the single Gaussian keep every bank photo's
    patches, as one fit did (a coreset searches a random pool of at most ``bank.MAX_POOL`` of them,
    chosen by index, so no fold copies them all); the per-position Gaussian keeps one running sum per
    fold (``folds`` times its P x D x D, whatever the number of photos), and a fit adds up its folds.
    """

    def __init__(self, template, computer, maps_of, bank: list, folds: np.ndarray):
        self.template = template
        self.folds = np.asarray(folds)  # each bank photo's fold (all 0: no cross-fitting)
        self.patches: np.ndarray | None = None
        self.sums: dict[int, PositionGaussian] = {}
        self.fit_s = 0.0  # seconds of the last fit
        if template.method == "position-gaussian":  # batch by batch: memory stays folds * P * D * D
            for start in range(0, len(bank), 32):
                patches = computer(maps_of(bank[start : start + 32]))
                part = self.folds[start : start + 32]
                for fold in np.unique(part):
                    self.sums.setdefault(int(fold), PositionGaussian()).add(patches[part == fold])
        else:
            patches = computer(maps_of(bank))
            self.per_photo = patches.shape[1]
            self.patches = patches.reshape(-1, patches.shape[-1])

    def fit(self, rng, *, leave_out: int | None = None, deadline: float | None = None) -> tuple[dict, list]:
        """(``{"bank"}`` or ``{"mean", "whiten"}`` fitted on the bank photos not in fold ``leave_out``,
        sentences for the run's warnings); the coreset search stops at ``deadline``."""
        start = time.monotonic()
        try:
            return self._fit(rng, leave_out, deadline)
        finally:
            self.fit_s = time.monotonic() - start

    def _fit(self, rng, leave_out, deadline) -> tuple[dict, list]:
        template = self.template
        if template.method == "position-gaussian":
            gaussian = PositionGaussian.merged(g for f, g in sorted(self.sums.items()) if f != leave_out)
            # a fold's model only scores: the Cholesky whitening gives its distances in a tenth of the time
            mean, whiten = gaussian.whitening(template.shrink, cholesky=leave_out is not None)
            return {"mean": mean, "whiten": whiten}, []
        if leave_out is None:
            rows = np.arange(len(self.patches))
        else:
            rows = np.flatnonzero(np.repeat(self.folds != leave_out, self.per_photo))
        if template.method == "gaussian":
            mean, whiten = fit_gaussian(self.patches[rows])
            return {"mean": mean, "whiten": whiten}, []
        # the final model's pool and bank sizes; a fold's are those times its share of the photos, so
        # that its model learns from 4/5 of what the final one does even where the caps bind
        share = len(rows) / len(self.patches)
        limit = memory.MAX_POOL if leave_out is None else max(1, round(share * memory.MAX_POOL))
        picked, cut = sample_pool(rows, limit, rng)
        pool = self.patches[picked]
        size = min(
            template.bank_size,
            max(1000, int(template.coreset_share * len(self.patches))),
            MAX_BANK_BYTES // (4 * pool.shape[1]),
        )
        if leave_out is not None:
            size = max(1, round(share * size))
        chosen = greedy_coreset(pool, size, rng, deadline=deadline)
        notes = []
        if cut:
            notes.append(
                f"the good photos have {len(rows):,} patches: {len(pool):,} drawn at random were "
                f"searched for the {len(chosen):,} that cover them best (memory kept bounded)"
            )
        if len(chosen) < min(size, len(pool)):
            notes.append(f"the time budget allowed a bank of {len(chosen):,} of {size:,} patches")
        # kept in the order chosen: any first part is a coreset too (compression's smaller bank)
        return {"bank": pool[chosen]}, notes


def out_of_fold_scores(fitter: NormalFitter, bank: list, score, *, deadline: float, report=None):
    """Each bank photo's score (aligned with ``bank``) against the model fitted without its fold, or
    None when the folds would not be done by ``deadline`` (``time.monotonic()``): the time a fold takes
    is predicted from the last fit (the full model's) before the first, then from the folds done.

    ``score(normal, photos)`` scores photos against a model of normal; ``report(done, total)`` is
    called before each fold (it may raise to cancel)."""
    folds = [int(f) for f in np.unique(fitter.folds)]
    scores = np.full(len(bank), np.nan, np.float64)
    taken: list[float] = []
    for i, fold in enumerate(folds):
        if report is not None:
            report(i, len(folds))
        per_fold = float(np.mean(taken)) if taken else fitter.fit_s
        if time.monotonic() + per_fold * (len(folds) - i) > deadline:
            return None
        start = time.monotonic()
        normal, _ = fitter.fit(np.random.default_rng(1 + fold), leave_out=fold, deadline=deadline)
        mine = np.flatnonzero(fitter.folds == fold)
        scores[mine] = score(normal, [bank[j] for j in mine])
        taken.append(time.monotonic() - start)
    return scores

"""How a smaller copy of an anomaly model is made and judged before it is kept (compression's verdict,
for scores).

The copies are the model with its backbone in 8 bits (the patch features, the memory bank's distances,
the smoothing and the threshold stay in float: ``deploy.quantize.FLOAT_PREFIXES``), a memory bank cut
to half (:func:`smaller_bank`; a per-position Gaussian model gets half its dimensions instead,
:func:`fewer_dimensions`), and both together. Each copy re-chooses its own threshold, by the trainer's
rule, on its own scores of the good photos held back for the original's (its scores are not the
original's: an 8-bit backbone shifts them all a little). A cross-fitted original's threshold was set
on its bank photos' out-of-fold scores too, which a copy has no fold models to redo: the copy keeps
the ratio of the original's threshold to the one the held-back photos alone give it. A copy is kept only if, on the project's photos
that did not fill the memory bank (the good ones held back and every defect photo),

1. the upper bound of its image AUROC loss against the original is within the limit (a paired
   bootstrap over the photos, ``deploy.verdict.judge``), and
2. at its own threshold it gets wrong (a false alarm, a missed defect) at most 1 - :data:`MIN_AGREEMENT`
   of the photos that the original gets right at the original's: AUROC alone would keep a copy that
   ranks the photos alike overall but misses defects near the threshold. Only the copy's own extra
   mistakes count: with 10 good photos held back, a copy's threshold lands a little higher or lower
   than the original's by chance, and a copy that raises one false alarm fewer is not worse.

With fewer than :data:`MIN_DEFECTS` defect photos or :data:`MIN_GOOD` good ones the judgement is
refused in plain words.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from modeldesk.errors import UserError
from modeldesk.trainers.anomaly.evaluation import is_good
from modeldesk.trainers.anomaly.scoring import auroc, false_alarm_threshold

MIN_DEFECTS = 10
MIN_GOOD = 10
MIN_AGREEMENT = 0.97
#: Photos that calibrate the 8-bit ranges: the calibrator keeps every intermediate tensor of every photo,
#: and the distances to a 4,000-patch bank are 16 MB a photo (200 photos ran a 23 GB machine out of memory).
CALIBRATION_PHOTOS = 24
#: The 8-bit recipes tried, in the verdict's order (least changed first): no smaller input sizes, since
#: the graph's grid of patches is fixed to the model's input size.
CANDIDATES = ("int8-qdq-perchannel", "int8-qdq-perchannel-keepfirst", "int8-qop-perchannel")
#: The share of a memory bank the smaller copy keeps, and the fewest patches it keeps. Cross-validated
#: on magnetic_tile's training goods (3 folds, image AUROC): 4,000 patches 0.927, 2,000 0.920, 1,000
#: 0.901; on its test photos a quarter bank ran 2.0x faster but lost 2.6 points and was refused.
BANK_SHARE = 0.5
MIN_BANK = 250
#: The share of a per-position Gaussian model's dimensions its smaller copy keeps.
DIM_SHARE = 0.5
BANK, WHITEN, MEAN, PROJECTION = "anomaly/bank_t", "anomaly/whiten", "anomaly/mean", "patch/projection"
THRESHOLD = "anomaly/threshold"


def _initializers(model: onnx.ModelProto) -> dict:
    return {init.name: init for init in model.graph.initializer}


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


def smaller_bank(model: onnx.ModelProto, share: float = BANK_SHARE) -> onnx.ModelProto:
    """A copy of a memory-bank model that keeps the first ``share`` of its bank's patches.

    The trainer stores the bank in the order the greedy coreset chose it (``trainers.anomaly.bank``),
    and greedy k-center is the same search at every size: the first K/2 patches are the coreset of
    K/2 of the same pool, the patches that cover the good parts best, without a new search."""
    copy = _copy(model)
    inits = _initializers(copy)
    bank_t = numpy_helper.to_array(inits[BANK])  # (D, K): -2 * bank.T
    keep = max(MIN_BANK, int(round(share * bank_t.shape[1])))
    if keep >= bank_t.shape[1]:
        raise ValueError(f"the bank has only {bank_t.shape[1]} patches: nothing to cut")
    kept = np.ascontiguousarray(bank_t[:, :keep])
    inits[BANK].CopyFrom(numpy_helper.from_array(kept, BANK))
    square = numpy_helper.to_array(inits["anomaly/bank_sq"])[:keep]
    inits["anomaly/bank_sq"].CopyFrom(
        numpy_helper.from_array(np.ascontiguousarray(square), "anomaly/bank_sq")
    )
    return copy


def fewer_dimensions(model: onnx.ModelProto, share: float = DIM_SHARE) -> onnx.ModelProto:
    """A copy of a per-position Gaussian model (PaDiM) on ``share`` of its patch dimensions.

    The patches are projected further, onto the principal directions of the positions' average
    covariance; the Gaussian of a projection of Gaussian patches is known exactly (mean R, R^T C R),
    so nothing is re-fitted: each covariance comes back from its whitening W as (W W^T)^-1."""
    copy = _copy(model)
    inits = _initializers(copy)
    if WHITEN not in inits or PROJECTION not in inits or len(inits[WHITEN].dims) != 3:
        raise ValueError("only a per-position Gaussian model on projected patches has dimensions to cut")
    whiten = numpy_helper.to_array(inits[WHITEN]).astype(np.float64)  # (P, D, D)
    mean = numpy_helper.to_array(inits[MEAN]).astype(np.float64)  # (P, D)
    cov = np.linalg.inv(whiten @ whiten.transpose(0, 2, 1))
    dim = cov.shape[-1]
    keep = max(2, int(round(share * dim)))
    _, vectors = np.linalg.eigh(cov.mean(axis=0))
    R = vectors[:, ::-1][:, :keep]  # (D, d): the largest average variance first
    small = R.T @ cov @ R  # (P, d, d)
    values, vecs = np.linalg.eigh(small)
    values = np.maximum(values, 1e-6 * values.max(axis=1, keepdims=True))
    new = {
        WHITEN: vecs / np.sqrt(values)[:, None, :],
        MEAN: mean @ R,
        PROJECTION: numpy_helper.to_array(inits[PROJECTION]).astype(np.float64) @ R,
    }
    for name, value in new.items():
        inits[name].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(value, np.float32), name))
    return copy


def variants_for(card: dict) -> dict:
    """The task-made copies compression tries for an anomaly model's card: ``{name: transform}``."""
    if card.get("method") == "memory-bank":
        return {"smaller-bank": smaller_bank}
    if card.get("method") == "position-gaussian":
        return {"fewer-dimensions": fewer_dimensions}
    return {}


def candidates_for(card: dict) -> list[str]:
    """The recipes compression tries for an anomaly model: the 8-bit backbones, the task's own smaller
    copy (:func:`variants_for`) in full precision and with the first 8-bit recipe."""
    out = list(CANDIDATES)
    for name in variants_for(card):
        out += [f"fp32+{name}", f"{CANDIDATES[0]}+{name}"]
    return out


class JudgingPhotos(list):
    """``(path, label)`` of the judging photos, the good ones held back for the threshold first
    (``held`` of them): a copy re-chooses its threshold on those."""

    held: int = 0


def judging_photos(samples) -> JudgingPhotos:
    """``(path, label)`` of the labeled photos that did not fill the memory bank: the good ones the
    trainer held back (``trainer.split_roles``), first, and every defect photo.

    Raises
    ------
    UserError
        With fewer than :data:`MIN_DEFECTS` defect or :data:`MIN_GOOD` such good photos.
    """
    from modeldesk.trainers.anomaly.trainer import split_roles

    bank, held, measured, _ = split_roles([s for s in samples if s.target is not None])
    in_bank = {s.key for s in bank}
    photos, seen = JudgingPhotos(), set()
    for s in held + measured:
        if s.key not in in_bank and s.key not in seen:
            seen.add(s.key)
            photos.append((s.path, s.target))
    photos.held = len({s.key for s in held} - in_bank)
    defects = sum(1 for _, label in photos if not is_good(label))
    goods = len(photos) - defects
    if defects < MIN_DEFECTS or goods < MIN_GOOD:
        raise UserError(
            f"a smaller copy of an anomaly model is checked against the original on photos it did not "
            f"learn from, and {defects} defect and {goods} held-back good photos are too few to tell a "
            f"1-point loss from chance: label at least {MIN_DEFECTS} defect photos and {MIN_GOOD + 1} "
            f"more good ones, or export without compression"
        )
    return photos


class AnomalyJudge:
    """Compression's metric for an anomaly model: image AUROC against the labels, each copy's own
    threshold, and a refusal of copies that do not answer yes/no as the original does.

    Compression scores the original first, at the model's ``threshold``; its right and wrong yes/no
    answers become the reference every later candidate is compared with (``agreement``: the share of
    photos that are not wrong in the copy only, 1.0 for the original). Every later candidate's threshold is chosen again as the trainer
    chose the original's: the lowest that flags at most ``false_alarm_rate`` of the first ``held``
    judging photos (the good ones held back; None or 0: every good judging photo), on the candidate's
    own scores; :meth:`adjust` writes it into the copy's graph and card. ``variants``: the copies only
    this task can make (:func:`variants_for`), for ``deploy.compress``.
    """

    __name__ = "auroc"

    def __init__(
        self,
        threshold: float,
        min_agreement: float = MIN_AGREEMENT,
        *,
        false_alarm_rate: float = 0.01,
        held: int | None = None,
        variants: dict | None = None,
        cross_fitted: bool = False,
    ):
        self.threshold = float(threshold)
        #: the original's threshold over the one its held-back photos alone give (``cross_fitted``: the
        #: original's threshold was set on its bank photos' out-of-fold scores too), set on scoring it
        self.cross_fitted = cross_fitted
        self.margin = 1.0
        self.min_agreement = float(min_agreement)
        self.false_alarm_rate = float(false_alarm_rate)
        self.held = held
        self.variants = dict(variants or {})
        self.reference: np.ndarray | None = None
        self.agreement: float | None = None
        self.agreements: list[float] = []
        self.chosen: dict = {}  # the last candidate's own threshold and heat range

    @classmethod
    def for_model(cls, card: dict, photos=None) -> AnomalyJudge:
        """The judge of an anomaly model's copies, from its card and its judging photos
        (:func:`judging_photos`, which says how many of them set the threshold)."""
        return cls(
            card.get("threshold", 0.0),
            false_alarm_rate=card.get("false_alarm_rate_planned", 0.01),
            held=getattr(photos, "held", None),
            variants=variants_for(card),
            cross_fitted=bool((card.get("threshold_photos") or {}).get("out_of_fold")),
        )

    def __call__(self, predictions, targets) -> float:
        """Image AUROC of one candidate's ``predictions`` (the predictor's format) on ``targets`` (labels)."""
        scores = np.array([p["score"] for p in predictions], np.float64)
        if self.reference is None:
            threshold = self.threshold
            if self.cross_fitted:
                held_rule = self._rechoose(scores, predictions, targets)
                self.margin = self.threshold / held_rule if held_rule > 0 else 1.0
                self.chosen = {}  # the original keeps its own threshold
        else:
            threshold = self._rechoose(scores, predictions, targets)
        right = (scores >= threshold) == np.array([not is_good(t) for t in targets], bool)
        if self.reference is None:
            self.reference = right
        self.agreement = float(np.mean(right | ~self.reference)) if len(right) else 1.0
        self.agreements.append(self.agreement)
        return self.score(predictions, targets)

    def _rechoose(self, scores, predictions, targets) -> float:
        """The candidate's own threshold (and heat range) on its scores of the threshold's good photos."""
        chosen = np.zeros(len(scores), bool)
        if self.held:
            chosen[: self.held] = True
        else:
            chosen = np.array([is_good(t) for t in targets], bool)
        threshold = false_alarm_threshold(scores[chosen], self.false_alarm_rate) * self.margin
        heat = [p["heatmap"] for p, c in zip(predictions, chosen) if c and "heatmap" in p]
        low = float(np.median(np.stack(heat))) if heat else 0.0
        self.chosen = {"threshold": threshold, "heatmap_range": [low, max(threshold, low + 1e-6)]}
        return threshold

    def adjust(self, blob: bytes) -> tuple[bytes, dict]:
        """The candidate scored last with its own threshold in its graph; the card fields that change
        with it (threshold, heat range, bank size)."""
        model = onnx.load_from_string(blob)
        inits = _initializers(model)
        if THRESHOLD not in inits:
            raise ValueError("the copy's graph has lost the anomaly threshold")
        threshold = self.chosen["threshold"]
        inits[THRESHOLD].CopyFrom(numpy_helper.from_array(np.asarray(threshold, np.float32), THRESHOLD))
        card = dict(self.chosen)
        if BANK in inits:
            card["bank_patches"] = int(inits[BANK].dims[1])
        return model.SerializeToString(), card

    @staticmethod
    def score(predictions, targets) -> float:
        """Image AUROC of ``predictions`` on ``targets``, recording nothing (the verdict's bootstrap scores
        resampled photos with it; a resample with one kind only counts as 0.5, chance)."""
        value = auroc([not is_good(t) for t in targets], [p["score"] for p in predictions])
        return 0.5 if value is None else value

    def refusal(self) -> str:
        """Why the candidate scored last must not be kept ("" when it may)."""
        if len(self.agreements) < 2 or self.agreement >= self.min_agreement:  # never the original itself
            return ""
        worse = int(round((1 - self.agreement) * len(self.reference)))
        return (
            f"rejected: at its own threshold it answers {worse} of {len(self.reference)} photos wrong "
            f"that the original answers right (at most {1 - self.min_agreement:.0%} allowed)"
        )

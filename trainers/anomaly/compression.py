"""How a smaller copy of an anomaly model is judged before it is kept (compression's verdict, for scores).

The copies are the model with its backbone in 8 bits (the patch features, the memory bank's distances,
the smoothing and the threshold stay in float: ``deploy.quantize.FLOAT_PREFIXES``). A copy is kept
only if, on the project's photos that did not fill the memory bank (the good ones held back and every
defect photo),

1. the upper bound of its image AUROC loss against the original is within the limit (a paired
   bootstrap over the photos, ``deploy.verdict.judge``), and
2. it answers yes/no at the model's threshold as the original does on at least :data:`MIN_AGREEMENT`
   of them: AUROC alone would keep a copy whose scores all grew by a tenth, which ranks the photos
   the same and raises false alarms on many more good parts.

With fewer than :data:`MIN_DEFECTS` defect photos or :data:`MIN_GOOD` good ones the judgement is
refused in plain words.
"""

from __future__ import annotations

import numpy as np

from modeldesk.errors import UserError
from modeldesk.trainers.anomaly.evaluation import is_good
from modeldesk.trainers.anomaly.scoring import auroc

MIN_DEFECTS = 10
MIN_GOOD = 10
MIN_AGREEMENT = 0.97
#: Photos that calibrate the 8-bit ranges: the calibrator keeps every intermediate tensor of every photo,
#: and the distances to a 4,000-patch bank are 16 MB a photo (200 photos ran a 23 GB machine out of memory).
CALIBRATION_PHOTOS = 24
#: The recipes tried, in the verdict's order (least changed first): only 8-bit backbones, since the
#: graph's grid of patches is fixed to the model's input size.
CANDIDATES = ("int8-qdq-perchannel", "int8-qdq-perchannel-keepfirst", "int8-qop-perchannel")


def judging_photos(samples) -> list[tuple]:
    """``(path, label)`` of the labeled photos that did not fill the memory bank: the good ones the
    trainer held back (``trainer.split_roles``) and every defect photo.

    Raises
    ------
    UserError
        With fewer than :data:`MIN_DEFECTS` defect or :data:`MIN_GOOD` such good photos.
    """
    from modeldesk.trainers.anomaly.trainer import split_roles

    bank, held, measured, _ = split_roles([s for s in samples if s.target is not None])
    in_bank = {s.key for s in bank}
    photos, seen = [], set()
    for s in held + measured:
        if s.key not in in_bank and s.key not in seen:
            seen.add(s.key)
            photos.append((s.path, s.target))
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
    """Compression's metric for an anomaly model: image AUROC against the labels, and a refusal of copies
    that do not answer yes/no as the original does at the model's ``threshold``.

    Compression scores the original first; its yes/no answers become the reference every later
    candidate is compared with (``agreement``: the share of photos answered alike, 1.0 for the original).
    """

    __name__ = "auroc"

    def __init__(self, threshold: float, min_agreement: float = MIN_AGREEMENT):
        self.threshold = float(threshold)
        self.min_agreement = float(min_agreement)
        self.reference: np.ndarray | None = None
        self.agreement: float | None = None
        self.agreements: list[float] = []

    def __call__(self, predictions, targets) -> float:
        """Image AUROC of one candidate's ``predictions`` (the predictor's format) on ``targets`` (labels)."""
        flags = np.array([p["score"] >= self.threshold for p in predictions])
        if self.reference is None:
            self.reference = flags
        self.agreement = float(np.mean(flags == self.reference)) if len(flags) else 1.0
        self.agreements.append(self.agreement)
        return self.score(predictions, targets)

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
        return (
            f"rejected: it answers good/defect as the original does on {self.agreement:.0%} of the photos "
            f"at the model's threshold (at least {self.min_agreement:.0%} needed)"
        )

"""How a smaller copy of a segmentation model is judged before it is kept (compression, for masks).

As for every task, the copy is compared with the original photo by photo (``deploy.verdict.judge``):
its mean IoU against the true masks, on the project's labeled photos, must not fall by more than the
limit at the verdict's confidence (a paired bootstrap over the photos, :meth:`SegmentationJudge.score`
on each resample). Per photo only its confusion between classes is kept (not its mask), so judging
holds a few numbers per photo whatever the photos' size. The copies tried are 8-bit versions at the
model's own input size (the grid of a segmentation graph is fixed by its input size, so smaller
inputs are not tried).

With fewer than :data:`MIN_PHOTOS` labeled photos the judgement is refused in plain words; past
:data:`MAX_PHOTOS` an even spread of them judges (each copy runs on every judging photo).
"""

from __future__ import annotations

import numpy as np

from modeldesk.datasets.masks import VOID
from modeldesk.errors import UserError
from modeldesk.trainers.segmentation.evaluation import confusion, mean_iou

MIN_PHOTOS = 10
MAX_PHOTOS = 80
#: training photos the 8-bit activation ranges are calibrated on (each a full-size input tensor in memory)
CALIBRATION_PHOTOS = 48
#: the recipes tried: 8-bit at the model's size (per channel first, then per tensor)
CANDIDATES = ("int8-qdq-perchannel", "int8-qdq-pertensor", "int8-qop-perchannel")


def judging_photos(samples) -> list[tuple]:
    """``(path, mask)`` of up to :data:`MAX_PHOTOS` labeled photos (an even spread), for judging copies.

    Raises
    ------
    UserError
        With fewer than :data:`MIN_PHOTOS` such photos.
    """
    photos = [(s.path, s.target) for s in samples if s.target is not None]
    if len(photos) < MIN_PHOTOS:
        raise UserError(
            f"a smaller copy of a segmentation model is checked against the original on your labeled "
            f"photos, and {len(photos)} are too few to tell a 1-point loss from chance: paint masks on at "
            f"least {MIN_PHOTOS} photos, or export without compression"
        )
    if len(photos) > MAX_PHOTOS:
        picks = np.linspace(0, len(photos) - 1, MAX_PHOTOS).round().astype(int)
        photos = [photos[i] for i in picks]
    return photos


class SegmentationJudge:
    """Compression's metric for a segmentation model: mean IoU over the judged photos' pooled pixels.

    Parameters
    ----------
    labels : the model's classes (its masks' values index them).
    """

    __name__ = "miou"
    score_words = "mean IoU"  # what the verdict's points are of, in its claim

    def __init__(self, labels):
        self.labels = [str(label) for label in labels]

    def __call__(self, predictions, targets) -> float:
        """Mean IoU of one copy's ``predictions`` (the predictor's format) against ``targets`` (masks)."""
        return self.score(predictions, targets)

    def score(self, predictions, targets) -> float:
        """Mean IoU of ``predictions`` against ``targets``, pooled over the photos (the verdict's
        bootstrap scores resampled photos with it)."""
        n = len(self.labels)
        total = np.zeros((n, n), np.int64)
        for prediction, target in zip(predictions, targets):
            total += self._confusion(prediction, target)
        return mean_iou(total)

    def _confusion(self, prediction: dict, target) -> np.ndarray:
        # computed once per photo and copy; the mask itself is dropped (answers are kept for the bootstrap)
        if "_confusion" not in prediction:
            prediction["_confusion"] = confusion(self._truth(target), prediction["mask"], len(self.labels))
            prediction.pop("mask", None)
            prediction.pop("class_scores", None)
        return prediction["_confusion"]

    def _truth(self, ref) -> np.ndarray:
        """A stored mask as indices into the model's classes (by name; others not labeled)."""
        table = np.full(256, VOID, np.uint8)
        index = {name: k for k, name in enumerate(self.labels)}
        for k, name in enumerate(ref.classes):
            table[k] = index.get(name, VOID)
        return table[ref.read()]


__all__ = [
    "CALIBRATION_PHOTOS",
    "CANDIDATES",
    "MAX_PHOTOS",
    "MIN_PHOTOS",
    "SegmentationJudge",
    "judging_photos",
]

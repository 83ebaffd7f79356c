"""How a smaller copy of a detector is judged before it is kept (compression's verdict, for boxes).

A detector's validation split is small (9 of raccoon_voc's 103 photos), and on it an int8 copy once
gained 3 mAP50 points while it lost 8 on the test photos. What compression changes is the model, not
the data, so it is measured the way one measures a change: paired, photo by photo, on every labeled
photo of the project (the training photos too; the question is "does the copy still draw the boxes the
original draws", not "how good is the model"). A compressed copy is kept only if, on those photos,

1. the upper bound of its mAP50 loss against the original is within the limit (a paired bootstrap over
   the photos, :meth:`DetectionJudge.score` on each resample; ``deploy.verdict.judge``), and
2. it reproduces the original's own boxes: the AP50 of its boxes scored against the original's boxes
   at the model's score threshold is at least :data:`MIN_AGREEMENT`.

With fewer than :data:`MIN_PHOTOS` labeled photos the judgement is refused in plain words, because a
1-point change cannot be told from chance on so few.

Measured on raccoon_voc (accurate template; 103 photos; the test photos' change in brackets):
int8 QDQ per-tensor: -3.2 points on all photos, agreement 0.94 -> refused (test -8.1, 90% [-22, +7]);
int8 QDQ per-channel: +0.5 points, agreement 0.99 -> kept (test +0.2, 90% [-4, +5]).
"""

from __future__ import annotations

import math

from modeldesk.errors import UserError
from modeldesk.trainers.detection.metrics import mean_ap

MIN_PHOTOS = 30
MIN_AGREEMENT = 0.95


def judging_photos(samples) -> list[tuple]:
    """``(path, boxes)`` of every labeled photo with boxes, for judging compressed copies.

    Raises
    ------
    UserError
        With fewer than :data:`MIN_PHOTOS` such photos.
    """
    photos = [(s.path, s.target) for s in samples if s.target and not isinstance(s.target, str)]
    if len(photos) < MIN_PHOTOS:
        raise UserError(
            f"a smaller copy of a detector is checked against the original on your labeled "
            f"photos, and {len(photos)} are too few to tell a 1-point loss from chance: label at "
            f"least {MIN_PHOTOS} photos with boxes, or export without compression"
        )
    return photos


class DetectionJudge:
    """Compression's metric for a detector: mAP50 against the true boxes, and a refusal of copies that do
    not reproduce the original's boxes.

    Compression scores the original (fp32) first; its boxes at ``threshold`` become the reference
    every later candidate is compared with (``agreement``: AP50 against them, 1.0 for the original).

    Parameters
    ----------
    labels : the model's classes.
    threshold : the model's score threshold (its boxes from there on are the reference).
    min_agreement : smallest accepted agreement with the original's boxes.
    """

    __name__ = "map50"
    score_words = "box score (mAP50)"  # what the verdict's points are of, in its claim

    def __init__(self, labels, threshold: float, min_agreement: float = MIN_AGREEMENT):
        self.labels = [str(label) for label in labels]
        self.threshold = float(threshold)
        self.min_agreement = float(min_agreement)
        self.reference: list | None = None
        self.agreement: float | None = None
        self.agreements: list[float] = []

    def __call__(self, predictions, targets) -> float:
        """mAP50 of one candidate's ``predictions`` (the predictor's format) against ``targets`` (boxes)."""
        boxes = [p["boxes"] for p in predictions]
        if self.reference is None:
            self.reference = [
                [(str(p["label"]), *p["box"]) for p in image if p["score"] >= self.threshold]
                for image in boxes
            ]
            self.agreement = 1.0
        else:
            agreement = mean_ap(self.reference, boxes, self.labels)[0]
            self.agreement = (
                1.0 if math.isnan(agreement) else float(agreement)
            )  # nan: the original drew nothing
        self.agreements.append(self.agreement)
        return self.score(predictions, targets)

    def score(self, predictions, targets) -> float:
        """mAP50 of ``predictions`` against ``targets``, recording nothing (the verdict's bootstrap
        scores resampled photos with it)."""
        boxes = [p["boxes"] for p in predictions]
        truths = [[(str(b.label), b.x0, b.y0, b.x1, b.y1) for b in target] for target in targets]
        return mean_ap(truths, boxes, self.labels)[0]

    def refusal(self) -> str:
        """Why the candidate scored last must not be kept ("" when it may)."""
        if len(self.agreements) < 2 or self.agreement >= self.min_agreement:  # never the original itself
            return ""
        return (
            f"rejected: it reproduces the original's boxes at {self.agreement:.0%} (AP50 against them on "
            f"every labeled photo; at least {self.min_agreement:.0%} needed)"
        )

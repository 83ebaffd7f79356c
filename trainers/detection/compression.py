"""How a smaller copy of a detector is judged before it is kept (compression's verdict, for boxes).

A compressed copy keeps the detector's trained head (its 1x1 cell head and box refiner cannot be
re-fitted from the copy's features without the trainer's whole fitting recipe), so it is judged only
on the labeled photos that head was not fitted on: every photo with boxes outside the training split
(the validation photos, which chose the head's settings and score threshold but did not fit it, and
the test photos). Judged on the training photos too, a copy was compared with
an original that had learned those very photos: on raccoon_voc (accurate template) an int8 per-tensor
copy lost 3.2 points there and 8.1 on the test photos (90% [-22, +7]).

What compression changes is the model, not the data, so it is measured the way one measures a change:
paired, photo by photo, against the original on the same photos. A compressed copy is kept only if

1. the upper bound of its mAP50 loss against the original is within the limit (a paired bootstrap over
   the photos, :meth:`DetectionJudge.score` on each resample; ``deploy.verdict.judge``, which widens the
   limit honestly, and says so, when the photos are too few for 1 point), and
2. it reproduces the original's own boxes: the AP50 of its boxes scored against the original's boxes
   at the model's score threshold is at least :data:`MIN_AGREEMENT`.

With fewer than :data:`MIN_PHOTOS` such photos the judgement is refused in plain words, because even
a widened limit cannot be told from chance on so few (raccoon_voc's usual split leaves 35 of 103).
"""

from __future__ import annotations

import math

from modeldesk.errors import UserError
from modeldesk.trainers.detection.metrics import mean_ap

MIN_PHOTOS = 30
MIN_AGREEMENT = 0.95


def judging_photos(samples, minimum: int = MIN_PHOTOS) -> list[tuple]:
    """``(path, boxes)`` of every labeled photo with boxes that the detector's head was not fitted on
    (outside the training split), for judging compressed copies.

    Raises
    ------
    UserError
        With fewer than ``minimum`` such photos (the app asks :data:`MIN_PHOTOS`), or when no photo is
        in the training split (the trainer then fitted the head on every photo).
    """
    boxed = [s for s in samples if s.target and not isinstance(s.target, str)]
    if boxed and not any(s.split == "train" for s in boxed):
        raise UserError(
            "a smaller copy of a detector is checked against the original on photos it was not trained "
            "on, and this detector was trained on every labeled photo: put some photos in the validation "
            "or test split and train again, or export without compression"
        )
    photos = [(s.path, s.target) for s in boxed if s.split != "train"]
    if len(photos) < minimum:
        raise UserError(
            f"a smaller copy of a detector is checked against the original on photos it was not trained "
            f"on, and {len(photos)} are too few to tell a loss from chance: have at least {minimum} "
            f"labeled photos in the validation and test splits, or export without compression"
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
    noun = "photos it was not trained on"  # what judged the copies, in the claim (judging_photos)

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
            f"the photos it was not trained on; at least {self.min_agreement:.0%} needed)"
        )

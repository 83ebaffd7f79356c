"""How a smaller copy of a detector is judged before it is kept (compression's verdict, for boxes).

A copy is judged on every labeled photo with boxes, each by a detection head that was not fitted on
it: the photos are dealt into :data:`FOLDS` folds by content hash and, for each fold, the detector's
head (what the detection trainer fits on top of the frozen backbone: the cell head, with its hard
negatives, and the box refiner) is fitted once on the other folds' photos, from the original model's
cached backbone maps, with the model's own head settings (:func:`fit_fold_heads`). Every candidate,
the original included, then answers each fold's photos with that fold's head in place of its own
(the head is float in every copy, so only the backbone's maps differ), and its mAP50 is pooled over
all the photos, paired photo by photo with the original's. Judged on its own training photos
instead, the trained head would compare a copy with an original that had learned them (on
raccoon_voc, accurate template, an int8 per-tensor copy lost 3.2 points there and 8.1 on the test
photos, 90% [-22, +7]); judged only on the photos outside its training split, a project needed
about 90 labeled photos before a copy could be judged at all.

Where the folds cannot be fitted (a model whose template this version no longer has, a box label
the model does not know, a photo that cannot be read), the copies keep the trained head and are
judged on the photos it was not fitted on (:func:`judging_photos`), as before.

What compression changes is the model, not the data, so it is measured the way one measures a change:
paired, photo by photo, against the original on the same photos. A compressed copy is kept only if

1. the upper bound of its mAP50 loss against the original is within the limit (a paired bootstrap over
   the photos, :meth:`DetectionJudge.score` on each resample; ``deploy.verdict.judge``, which widens the
   limit honestly, and says so, when the photos are too few for 1 point), and
2. it reproduces the original's own boxes: the AP50 of its boxes scored against the original's boxes
   at the model's score threshold is at least :data:`MIN_AGREEMENT`, and
3. it puts them where the original does: their AP75 against the original's boxes is at least
   :data:`MIN_AGREEMENT_75`. mAP50 does not see a box that slid off its object by a few pixels, and
   the 8-bit copies that quantize the first layers too do that (accurate at 480 px, 79 magnetic-tile
   photos: AP75 against the original 0.82-0.87 and COCO mAP 0.247 -> 0.220 for mAP50 0.467-0.473
   against 0.470; with the first layers in float: 0.93-0.97 and COCO mAP 0.241-0.250).

With fewer than :data:`MIN_PHOTOS` judging photos the judgement is refused in plain words, because
even a widened limit cannot be told from chance on so few.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnx.numpy_helper

from modeldesk.errors import UserError
from modeldesk.trainers.detection.metrics import mean_ap

log = logging.getLogger(__name__)

MIN_PHOTOS = 30
MIN_AGREEMENT = 0.95
MIN_AGREEMENT_75 = 0.90
#: Folds of the heads fitted across the judging photos (as ``deploy.compress.FOLDS`` for classifiers).
FOLDS = 5


def boxed_photos(samples) -> list:
    """The labeled samples that have boxes (a photo labeled as having none judges nothing)."""
    return [s for s in samples if s.target and not isinstance(s.target, str)]


def folds_by_content(keys, folds: int = FOLDS) -> np.ndarray:
    """The fold of each photo: sorted by content hash and dealt in turn, so a photo keeps its fold
    whatever order the project lists it in, and the folds differ in size by one at most."""
    order = sorted(range(len(keys)), key=lambda i: str(keys[i]))
    fold_of = np.zeros(len(keys), int)
    fold_of[order] = np.arange(len(keys)) % folds
    return fold_of


class FoldsUnavailable(ValueError):
    """The detector's head cannot be fitted across folds here (the reason says why)."""


@dataclass
class FoldHeads:
    """A detector's head fitted across folds of its labeled photos.

    ``samples``: the judging photos; ``fold_of``: each one's fold; ``heads``: per fold, the head's
    initializers (named as the detector graph names them) fitted on the other folds' photos;
    ``fitted``: per fold, the ``(CellHead, BoxRefiner or None)`` they come from; ``seconds``: how long
    the maps and the fits took."""

    samples: list
    fold_of: np.ndarray
    heads: list = field(default_factory=list)
    fitted: list = field(default_factory=list)
    seconds: float = 0.0


def fit_fold_heads(
    artifact, samples, cache_dir, *, template=None, folds: int = FOLDS, progress=None
) -> FoldHeads:
    """The detector's head fitted :data:`FOLDS` times, each on the photos of ``samples`` (with boxes)
    outside one fold, as the detection trainer fits it (``trainer._Fitter``: cell head with hard
    negatives, then the box refiner) with the model's own head settings, on the original backbone's
    maps from the feature cache in ``cache_dir`` (computed there for photos not cached yet);
    ``progress(done, folds)`` after each fold.

    Raises
    ------
    FoldsUnavailable
        When the model's template is not known here (``template`` gives it), differs from the one
        that trained the model, a box carries a label the model does not know, or a photo cannot be
        read.
    """
    from modeldesk.trainers.backbones import get_backbone
    from modeldesk.trainers.detection.features import CellComputer, extract_maps
    from modeldesk.trainers.detection.graph import decode_nodes
    from modeldesk.trainers.detection.sizing import for_card
    from modeldesk.trainers.detection.trainer import _Fitter, _Photos
    from modeldesk.trainers.feature_cache import FeatureCache
    from modeldesk.trainers.templates import get_template

    card = artifact.card
    try:
        template = for_card(get_template(template or card.get("template")), card)
    except UserError as exc:
        raise FoldsUnavailable(f"the model's template is not known here ({exc})") from None
    neck = template.neck
    if card.get("neck") != neck.name or list(card.get("views") or []) != list(template.views):
        raise FoldsUnavailable(f"the template {template.name!r} is no longer the one that trained the model")
    labels = [str(label) for label in artifact.labels]
    photos = boxed_photos(samples)
    unknown = sorted({str(b.label) for s in photos for b in s.target} - set(labels))
    if unknown:
        raise FoldsUnavailable(f"boxes labeled {', '.join(unknown)}, which the model does not know")
    backbone = get_backbone(template.backbone)
    started = time.monotonic()
    extracted = extract_maps(
        backbone,
        neck,
        [(s.key, s.path) for s in photos],
        FeatureCache(cache_dir),
        views=template.views,
        device="cpu",
    )
    if extracted[template.views[0]].skipped:
        raise FoldsUnavailable(f"{len(extracted[template.views[0]].skipped)} photo(s) could not be read")
    maps = {}
    for view, result in extracted.items():
        row = {key: r for r, key in enumerate(result.keys)}
        maps[view] = result.features[[row[s.key] for s in photos]]
    fitter = _Fitter(
        _Photos(photos, labels, neck, maps), CellComputer(neck, backbone), template, np.random.default_rng(0)
    )
    params = dict((card.get("head") or {}).get("params") or template.head_params)
    trained = {
        init.name: onnx.numpy_helper.to_array(init)
        for init in onnx.load(str(artifact.model_path)).graph.initializer
        if init.name.startswith("det/")
    }
    out = FoldHeads(photos, folds_by_content([s.key for s in photos], folds))
    for fold in range(folds):
        fitted_on = np.flatnonzero(out.fold_of != fold)
        refiner = fitter.fit_refiner(fitted_on)
        head = fitter.fit(fitted_on, params)
        inits = decode_nodes(
            neck,
            len(labels),
            *head.folded(),
            refiner=refiner,
            dedupe_iou=template.dedupe_iou,
            # as the trained graph: lowered there when it looks once (and was made by a version that does)
            decay_iou=template.decay_iou if "det/dedupe/decay" in trained else None,
        )[1]
        out.heads.append(_fitted_only(inits, trained))
        out.fitted.append((head, refiner))
        if progress is not None:
            progress(fold + 1, folds)
    if not any(init.name.endswith("head/W") for init in out.heads[0]):
        raise FoldsUnavailable("the model's graph does not name its head as this version does")
    out.seconds = time.monotonic() - started
    log.info("detection heads fitted across %d folds of %d photos in %.1f s", folds, len(photos), out.seconds)
    return out


def _fitted_only(inits: list, trained: dict) -> list:
    """The initializers of ``inits`` that a fit sets: those whose values differ from the trained
    graph's of the same name (``trained``: name -> array). The decoding's constants are left out: a
    quantized copy's graph folds or reshapes some of them, while the fitted weights stay as they are
    (its ``det/`` nodes are kept in float, ``deploy.quantize``)."""
    out = []
    for init in inits:
        old = trained.get(init.name)
        if old is None:
            raise FoldsUnavailable(f"the model's graph has no {init.name!r}, which its head fits")
        new = onnx.numpy_helper.to_array(init)
        if old.shape != new.shape or not np.array_equal(old, new):
            out.append(init)
    return out


def detection_judging(
    artifact, samples, cache_dir, *, template=None, minimum: int = MIN_PHOTOS, progress=None
):
    """``(judge, photos)``: the :class:`DetectionJudge` of a detector's compressed copies and the
    ``(path, boxes)`` it judges them on: every labeled photo with boxes, each by the head fitted
    across folds without it (:func:`fit_fold_heads`); where those heads cannot be fitted, the photos
    outside the training split, by the trained head (:func:`judging_photos`). ``progress(done, folds,
    photos)`` follows the fold fits.

    Raises
    ------
    UserError
        With fewer than ``minimum`` judging photos.
    """
    judge = DetectionJudge(artifact.labels, artifact.card.get("score_threshold", 0.5))
    photos = boxed_photos(samples)
    if len(photos) < minimum:
        raise UserError(
            f"a smaller copy of a detector is checked against the original on the labeled photos, and "
            f"{len(photos)} with boxes are too few to tell a loss from chance: label boxes on at least "
            f"{minimum} photos, or export without compression"
        )
    try:
        folds = (lambda done, total: progress(done, total, len(photos))) if progress else None
        judge.use_folds(fit_fold_heads(artifact, photos, cache_dir, template=template, progress=folds))
    except FoldsUnavailable as exc:
        log.warning("judging the compressed copies on the photos outside training: %s", exc)
        return judge, judging_photos(samples, minimum)
    return judge, [(s.path, s.target) for s in judge.folds.samples]


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
    min_agreement : smallest accepted agreement with the original's boxes (AP50 against them).
    min_agreement_75 : the same at IoU 0.75 (AP75 against them): the boxes sit where the original's do.
    """

    __name__ = "map50"
    score_words = "box score (mAP50)"  # what the verdict's points are of, in its claim
    noun = "photos it was not trained on"  # what judged the copies, in the claim (judging_photos)
    #: with heads fitted across folds (:meth:`use_folds`): each judging photo's fold and, per fold, the
    #: head's initializers that compression puts in place of a copy's own (``deploy.compress``)
    fold_of = None
    fold_heads = None

    def __init__(
        self,
        labels,
        threshold: float,
        min_agreement: float = MIN_AGREEMENT,
        min_agreement_75: float = MIN_AGREEMENT_75,
    ):
        self.labels = [str(label) for label in labels]
        self.threshold = float(threshold)
        self.min_agreement = float(min_agreement)
        self.min_agreement_75 = float(min_agreement_75)
        self.reference: list | None = None
        self.agreement: float | None = None
        self.agreement_75: float | None = None
        self.agreements: list[float] = []
        self.folds: FoldHeads | None = None

    def use_folds(self, folds: FoldHeads) -> None:
        """Judge on every photo of ``folds``, each by the head fitted without it."""
        self.folds, self.fold_of, self.fold_heads = folds, folds.fold_of, folds.heads
        self.noun = "photos"

    def __call__(self, predictions, targets) -> float:
        """mAP50 of one candidate's ``predictions`` (the predictor's format) against ``targets`` (boxes)."""
        boxes = [p["boxes"] for p in predictions]
        if self.reference is None:
            self.reference = [
                [(str(p["label"]), *p["box"]) for p in image if p["score"] >= self.threshold]
                for image in boxes
            ]
            self.agreement = self.agreement_75 = 1.0
        else:
            self.agreement = self._agreement(boxes, 0.5)
            self.agreement_75 = self._agreement(boxes, 0.75)
        self.agreements.append(self.agreement)
        return self.score(predictions, targets)

    def _agreement(self, boxes, iou: float) -> float:
        """AP of ``boxes`` scored against the original's boxes at ``iou`` (1 when it drew none)."""
        agreement = mean_ap(self.reference, boxes, self.labels, iou)[0]
        return 1.0 if math.isnan(agreement) else float(agreement)

    def score(self, predictions, targets) -> float:
        """mAP50 of ``predictions`` against ``targets``, recording nothing (the verdict's bootstrap
        scores resampled photos with it)."""
        boxes = [p["boxes"] for p in predictions]
        truths = [[(str(b.label), b.x0, b.y0, b.x1, b.y1) for b in target] for target in targets]
        return mean_ap(truths, boxes, self.labels)[0]

    def refusal(self) -> str:
        """Why the candidate scored last must not be kept ("" when it may)."""
        if len(self.agreements) < 2:  # never the original itself
            return ""
        if self.agreement < self.min_agreement:
            return (
                f"rejected: it reproduces the original's boxes at {self.agreement:.0%} (AP50 against them "
                f"on the {self.noun}; at least {self.min_agreement:.0%} needed)"
            )
        if self.agreement_75 < self.min_agreement_75:
            return (
                f"rejected: its boxes sit less exactly where the original's do: {self.agreement_75:.0%} "
                f"(AP75 against them on the {self.noun}; at least {self.min_agreement_75:.0%} needed)"
            )
        return ""

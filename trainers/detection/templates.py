"""The object detection templates (the task registry points here)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from modeldesk.trainers.detection.features import DetectionNeck
from modeldesk.trainers.detection.graph import DECAY_IOU, DEDUPE_IOU
from modeldesk.trainers.detection.refine import RefineSpec
from modeldesk.trainers.detection.tta import check_test_views


@dataclass(frozen=True)
class DetectionTemplate:
    """A detection preset.

    Parameters
    ----------
    name, task, description, time_budget_s : as every template.
    backbone : registry name of the frozen backbone.
    neck : input size, grid stride and context of the per-cell features.
    views : training views (``"hflip"`` adds mirrored copies of every training image, ``"shrink"``
        copies at 75% of the size: scale jitter; see ``trainers.views``).
    test_views : the views the trained detector looks at each photo in, their boxes fused
        (``detection.tta``): ``"identity"`` first, then training views; ``("identity",)`` looks once.
    head_params : fixed :class:`~modeldesk.trainers.detection.head.CellHead` parameters.
    search_space : head parameter -> candidates, scored by mAP50 on the validation images while
        the time budget lasts (the first candidate is the default).
    encode : target parameters (``sigma``, ``positive``; see ``detection_head.encode``).
    negative_share : share of the background cells kept for fitting (all object cells are kept).
    hard_negatives : background cells the first fit scores highest, added for a second fit, per image.
    refine : how kept boxes are refined on the finer maps (``detection.refine``); None: not refined.
    dedupe_iou : after refinement, a box that a better one of its class overlaps by more than this is
        dropped (``detection.duplicates``); None: kept.
    decay_iou : ... and one it overlaps by more than this (but not ``dedupe_iou``) keeps 1 - that
        overlap of its score; None: its score is kept.
    small_objects_sizes : larger input sizes to train at when some class's boxes are small at
        ``neck.size`` (``detection.sizing``); empty: always ``neck.size``.
    small_classes : set by ``sizing.sized_for`` on the template it resized: (label, median box side in
        pixels at the original size) of each class that was small.
    """

    name: str
    task: str
    description: str
    backbone: str
    neck: DetectionNeck
    views: tuple = ("identity", "hflip")
    head_params: dict = field(default_factory=dict)
    search_space: dict = field(default_factory=dict)
    encode: dict = field(default_factory=dict)
    negative_share: float = 0.2
    hard_negatives: int = 8
    time_budget_s: float = 120.0
    refine: RefineSpec | None = None
    dedupe_iou: float | None = DEDUPE_IOU
    decay_iou: float | None = DECAY_IOU
    test_views: tuple = ("identity",)
    small_objects_sizes: tuple = ()
    small_classes: tuple = ()

    def __post_init__(self):
        check_test_views(self.test_views, self.views)

    def candidates(self) -> list[dict]:
        """Head parameter sets to try, the default first."""
        out = [dict(self.head_params)]
        for key, values in self.search_space.items():
            out += [
                {**self.head_params, key: value} for value in values if value != self.head_params.get(key)
            ]
        return out

    def at_size(self, size: int) -> DetectionTemplate:
        """The same recipe on a ``size`` x ``size`` letterbox."""
        return replace(self, neck=replace(self.neck, size=size))

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "task": self.task,
            "description": self.description,
            "backbone": self.backbone,
            "neck": asdict(self.neck),
            "input_size": self.neck.size,
            "views": list(self.views),
            "head": "cell-heatmap",
            "head_params": dict(self.head_params),
            "search_space": {k: list(v) for k, v in self.search_space.items()},
            "time_budget_s": self.time_budget_s,
            "refine": asdict(self.refine) if self.refine else None,
            "dedupe_iou": self.dedupe_iou,
            "decay_iou": self.decay_iou,
            "test_views": list(self.test_views),
            "small_objects_sizes": list(self.small_objects_sizes),
        }


FAST = DetectionTemplate(
    name="object-detection/fast",
    task="object-detection",
    description="Finds and boxes objects that take up a fair part of the photo; the quickest to "
    "train. Looks at each photo twice, as it is and smaller. Good for a first try.",
    backbone="efficientnet-lite0",
    neck=DetectionNeck(size=320, stride=16, levels=("stride16", "stride32"), context=3),
    # 4-fold CV on raccoon_voc (103 photos pooled, 90% bootstrap), box voting on: + the shrunk view
    # mAP50 0.773 -> 0.799, mAP 0.299 -> 0.328 (without either: 0.717 [0.65, 0.80], 0.260)
    views=("identity", "hflip", "shrink"),
    head_params={"l2": 1e-2, "max_iter": 60, "ridge": 0.1},
    time_budget_s=60.0,
    # scores weighed by the refined box's predicted IoU (4-fold CV on raccoon_voc, 103 photos pooled):
    # mAP 0.449 -> 0.460, AP75 0.395 -> 0.445, mAP50 0.863 -> 0.861. A cascade's second regression,
    # fitted on the first one's boxes (4-fold CV on the 78 photos outside the held-out quarter,
    # duplicates dropped, paired bootstrap): mAP 0.401 -> 0.431 (+0.030 [+0.015, +0.046]), mAP50
    # 0.873 -> 0.893, AP75 0.379 -> 0.405; a third step 0.427. bench/train_detect.py, cascade and
    # duplicates dropped against neither: CV above mAP 0.392 -> 0.431, mAP50 0.800 -> 0.893; held-out
    # quarter mAP 0.416 -> 0.479, mAP50 0.826 -> 0.948, AP75 0.453 -> 0.532
    refine=RefineSpec(rescore=0.5, steps=2, cascade=True),
    # the photo also looked at shrunk to 75%, boxes fused (detection.tta): 4-fold CV on the 78
    # photos outside the held-out quarter, paired bootstrap (90%): mAP 0.431 -> 0.462 (+0.031
    # [+0.015, +0.045]), mAP50 0.893 -> 0.905, AP75 0.405 -> 0.433, at twice the time per photo;
    # mirrored too: mAP 0.470, mAP50 0.904, AP75 0.442, at three times (bench/train_detect.py, 2026-12-06)
    test_views=("identity", "shrink"),
)

ACCURATE = DetectionTemplate(
    name="object-detection/accurate",
    task="object-detection",
    description="Sees more detail, tunes itself on your held-out photos and looks at each photo "
    "three times, more sharply when your objects are small; slower, usually finds more and boxes "
    "them better.",
    backbone="efficientnet-lite0",
    neck=DetectionNeck(size=320, stride=16, levels=("stride8", "stride16", "stride32"), context=3),
    # + the photo shrunk to 75% (scale jitter): 4-fold CV on raccoon_voc, pooled over its 103 photos,
    # 90% bootstrap intervals, box voting on: mAP50 0.749 -> 0.815 (+0.066 [+0.03, +0.11]),
    # mAP 0.312 -> 0.335; with box voting against without (both views + shrink): mAP 0.299 -> 0.335
    views=("identity", "hflip", "shrink"),
    # earlier 4-fold CV: + stride 8 detail and ridge 0.3 -> mAP50 0.765, mAP 0.307 (fast's: 0.752, 0.290)
    head_params={"l2": 1e-2, "max_iter": 80, "ridge": 0.3},
    search_space={"ridge": [0.3, 0.1]},
    time_budget_s=150.0,
    # box refiner (ridge 3, one step): 4-fold CV on raccoon_voc, pooled over its 103 photos (accurate
    # template's head): mAP 0.330 -> 0.427, AP75 0.218 -> 0.424, mAP50 0.831 -> 0.841; two steps
    # 0.434 / 0.430 / 0.814; ridge 1: 0.424; jitter 0.2: 0.421 (see bench/train_detect.py --folds)
    # + scores weighed by the refined box's predicted IoU (4-fold CV on raccoon_voc, 103 photos pooled,
    # every other photo trained on, no head search): mAP 0.446 -> 0.463, AP75 0.421 -> 0.469, mAP50
    # 0.860 -> 0.853 at rescore 0.5 (paired bootstrap: mAP +0.017 [+0.006, +0.028], AP75 +0.048
    # [-0.002, +0.092]); 0.3: 0.460 / 0.463 / 0.854; 0.7: 0.464 / 0.472 / 0.843. Under
    # bench/train_detect.py --folds 4 (head search on every 8th photo) the gain is smaller: mAP 0.425 ->
    # 0.429, AP75 0.421 -> 0.424, mAP50 0.854 -> 0.857. A cascade's second regression (4-fold CV on
    # the 78 photos outside the held-out quarter, duplicates dropped, paired bootstrap): mAP 0.415 ->
    # 0.437 (+0.022 [+0.010, +0.037]), AP75 0.407 -> 0.421, mAP50 0.891 -> 0.875 (-0.015 [-0.044,
    # +0.003]); a third step 0.436; its later steps' min IoU 0.5 / 0.7: 0.437 / 0.435; 8 or 32 boxes on
    # no object per photo for the IoU regression (rescore_background): 0.443 / 0.438.
    # bench/train_detect.py, cascade and duplicates dropped against neither: CV above mAP 0.393 ->
    # 0.437, mAP50 0.823 -> 0.875;
    # held-out quarter mAP 0.412 -> 0.471, mAP50 0.840 -> 0.948, AP75 0.455 -> 0.526
    refine=RefineSpec(rescore=0.5, steps=2, cascade=True),
    # mirrored and shrunk too, boxes fused (same CV): mAP 0.437 -> 0.466 (+0.029 [+0.016, +0.041]),
    # mAP50 0.875 -> 0.888, AP75 0.421 -> 0.431, at three times the time per photo; shrunk only:
    # mAP 0.468, mAP50 0.885, AP75 0.436
    test_views=("identity", "hflip", "shrink"),
    # at 480 or 640 px when a class's median box is under 24 px at 320 (detection.sizing): the first
    # size at which the smallest class's reaches 24 px, else 640. 4-fold CV, the same recipe at 320 /
    # 480 / 640 px: CamVid's cars and pedestrians (bench/train_detect.py --camvid; pedestrians 12 px
    # at 320) mAP50 0.075 / 0.153 / 0.224 [0.203, 0.249], pedestrians AP50 0.010 / 0.070 / 0.119,
    # cars 0.140 / 0.237 / 0.329; defects of every size (--tiles: 191 magnetic tiles, 220 boxes)
    # mAP50 0.366 [0.320, 0.431] / 0.403 [0.364, 0.463] / 0.406 [0.362, 0.464], mAP 0.202 / 0.220 /
    # 0.223, the small kind, blowholes (11 px at 320), AP50 0.289 / 0.556 / 0.634, the others: break
    # 0.430 / 0.345 / 0.297, crack (thin, 31 boxes) 0.163 / 0.033 / 0.047, fray 0.351 / 0.408 /
    # 0.414, uneven 0.594 / 0.672 / 0.636. Raccoons (186 px) stay at 320 (2026-12-06)
    small_objects_sizes=(480, 640),
)

SMALL_OBJECTS = replace(
    ACCURATE,
    name="object-detection/small-objects",
    description="For small things in the photo (cells, people far away, parts on a board): the "
    "accurate recipe on a sharper view of the photo; the slowest to train and to run.",
    # accurate's recipe at 480 px instead of 320. Small objects: CamVid's cars and pedestrians as
    # boxes (bench/train_detect.py --camvid: 221 frames, median pedestrian 8 x 24 px at 320), 4-fold
    # CV by contiguous frames: mAP50 0.075 [0.066, 0.090] -> 0.153 [0.139, 0.175], pedestrians 0.010 ->
    # 0.070, cars 0.140 -> 0.237; a stride-8 grid at 320 instead: 0.109. On raccoon_voc (large
    # objects, CV on the 78 photos outside the held-out quarter): mAP50 0.888 -> 0.872, mAP 0.466 ->
    # 0.465. Looking in the mirror only at 480: 0.133; once: 0.136. Held out (CamVid's 49 val
    # frames): mAP50 0.120 [0.083, 0.169] -> 0.255 [0.219, 0.308], mAP 0.036 -> 0.109, 36 -> 73 ms a
    # photo; raccoon_voc's held-out quarter: mAP50 0.948 -> 0.884, mAP 0.481 -> 0.495 (2026-12-06)
    neck=DetectionNeck(size=480, stride=16, levels=("stride8", "stride16", "stride32"), context=3),
    time_budget_s=300.0,
    small_objects_sizes=(640,),  # as sharp as accurate looks at objects this small
)

TEMPLATES = (FAST, ACCURATE, SMALL_OBJECTS)

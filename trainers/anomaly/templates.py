"""The anomaly detection templates (the task registry points here)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from modeldesk.trainers.anomaly.features import AnomalyNeck

GOOD_LABEL = "good"


@dataclass(frozen=True)
class AnomalyTemplate:
    """An anomaly detection preset.

    Parameters
    ----------
    name, task, description, time_budget_s : as every template.
    backbone : registry name of the frozen backbone.
    neck : input size and patch neighbourhood (see :class:`AnomalyNeck`).
    method : ``"memory-bank"`` (PatchCore-style: distance to the nearest kept good patch) or
        ``"gaussian"`` (distance of a patch to one Gaussian fitted on all good patches) or
        ``"position-gaussian"`` (PaDiM: to the Gaussian of the good patches at the same place in the
        photo; for parts photographed the same way every time).
    bank_size : most patches the memory bank keeps (greedy coreset subsample); also bounds memory.
    coreset_share : the bank keeps this share of all good patches (at least 1,000), up to ``bank_size``.
    shrink : a per-position Gaussian's shrinkage of its covariance towards its average variance.
    projection : random projection of the patch features to this many dimensions (None: none).
    top_k : image score = mean of the ``top_k`` highest patch scores (1: the highest).
    score_border : rings of cells along the photo's edge left out of the image score (the heatmap
        keeps them): where parts are photographed with their edges in view, the edge varies more
        among good parts than anything inside.
    smooth_sigma : the Gaussian smoothing of the patch scores before the image score and the heatmap,
        in cells of the stride-8 grid.
    false_alarm_rate : the default share of good parts the threshold lets be flagged.
    stride8_weight : how much the stride-8 map's channels weigh in a patch's distances against the
        stride-16 map's (1: as they come).
    """

    name: str
    task: str
    description: str
    backbone: str
    neck: AnomalyNeck
    method: str = "memory-bank"
    bank_size: int = 4000
    coreset_share: float = 0.1
    projection: int | None = None
    top_k: int = 1
    score_border: int = 0
    smooth_sigma: float = 0.75
    shrink: float = 0.05
    false_alarm_rate: float = 0.01
    time_budget_s: float = 120.0
    stride8_weight: float = 1.0

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "task": self.task,
            "description": self.description,
            "backbone": self.backbone,
            "neck": asdict(self.neck),
            "input_size": self.neck.size,
            "method": self.method,
            "bank_size": self.bank_size,
            "coreset_share": self.coreset_share,
            "projection": self.projection,
            "top_k": self.top_k,
            "score_border": self.score_border,
            "smooth_sigma": self.smooth_sigma,
            "shrink": self.shrink,
            "false_alarm_rate": self.false_alarm_rate,
            "time_budget_s": self.time_budget_s,
            "stride8_weight": self.stride8_weight,
        }


# Chosen on magnetic_tile by cross-validation over the bench's training goods (3 folds: normal learned
# from 4/5, scored on the 5th) against half of the defect photos; the held-out test part was not used.
# Memory bank, image AUROC (mean over folds): edge rings left out of the score 0 / 2 / 3: 0.816 /
# 0.900 / 0.907 (5 folds: 0.823 / 0.895 / 0.904, so the rule holds); top-k 1 / 3 / 5 / 10 at 3 rings
# and sigma 1.5: 0.911 / 0.914 / 0.915 / 0.913; smoothing sigma 0.75 -> 1.5 cells: image +0.007,
# pixel AUROC 0.753 -> 0.766 (2.0: 0.774, image -0.005). Not kept: the mean of k = 3 nearest bank
# patches (-0.010), 320 px (-0.003 to -0.026), tall photos turned and squashed to 320x192 (+0.001),
# grey levels normalised per photo (+0.007 image, -0.012 pixel), 5x5 neighbourhoods (image -0.025,
# pixel +0.045), each cell's score relative to that cell's usual score on held-back goods (+0.005).
# bench/cv_anomaly.py (same folds, pixel AUROC over goods and defects, 2026-12-04): the stride-8
# channels at half weight in the distances: image 0.927 -> 0.936 (+[0.004, 0.016], 90% paired
# bootstrap; every fold up), pixel 0.842 -> 0.849 (+[0.004, 0.016]); a quarter: pixel +[0.006, 0.021]
# but image [-0.001, +0.012]; double: image -0.019, pixel -0.024. Not kept: a 512 px input (pixel
# -0.040, image -0.021), each photo's median heat taken off its heatmap (pixel -0.116).
TEMPLATES = (
    AnomalyTemplate(
        name="anomaly-detection/accurate",
        task="anomaly-detection",
        description="Learns the good parts patch by patch and flags any patch unlike all of them, "
        "wherever it sits in the photo (small scratches and holes too); shows where. Needs only "
        "photos of good parts.",
        backbone="efficientnet-lite0",
        neck=AnomalyNeck(size=256),
        method="memory-bank",
        bank_size=4000,
        top_k=5,
        score_border=3,
        smooth_sigma=1.5,
        time_budget_s=120.0,
        stride8_weight=0.5,
    ),
    # One Gaussian per position (same folds): image AUROC 0.924 (0.900-0.938), pixel 0.783, against
    # 0.79 / 0.72 for one Gaussian over all positions; covariance shrink 0.2: 0.915; edge rings: 0.917.
    AnomalyTemplate(
        name="anomaly-detection/fast",
        task="anomaly-detection",
        description="Learns the usual look of each spot of the good parts (where parts are "
        "photographed the same way every time); quick to train and to run.",
        backbone="efficientnet-lite0",
        neck=AnomalyNeck(size=256),
        method="position-gaussian",
        projection=48,
        shrink=0.05,
        top_k=3,
        score_border=0,
        time_budget_s=60.0,
    ),
)

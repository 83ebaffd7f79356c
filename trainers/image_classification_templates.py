"""The image classification templates (the task registry points here)."""

from __future__ import annotations

from modeldesk.trainers.features import EMBEDDING, FeatureSpec, Pool
from modeldesk.trainers.templates import Template

GRID_S16X4_S32X3 = FeatureSpec("grid-s16x4-s32x3", (Pool("stride16", grid=4), Pool("stride32", grid=3)))

TEMPLATES = (
    Template(
        name="image-classification/fast",
        task="image-classification",
        description="Quick model from the image's overall look; trains in seconds. Good for a first try.",
        backbone="efficientnet-lite0",
        features=EMBEDDING,
        head="logistic",
        head_params={"l2": 1e-3, "max_iter": 300},
        time_budget_s=60.0,
    ),
    Template(
        name="image-classification/accurate",
        task="image-classification",
        description="Looks at where things are in the image (shapes, poses, gestures) and tunes itself "
                    "by cross-validation; slower, usually clearly more accurate.",
        backbone="efficientnet-lite0",
        features=GRID_S16X4_S32X3,
        head="logistic",
        head_params={"max_iter": 300},
        search_space={"l2": [3e-2, 1e-2, 1e-1], "views": [("identity",), ("identity", "hflip")]},
        cv_folds=3,
        time_budget_s=120.0,
    ),
)



"""The image tagging (multi-label) templates (the task registry points here)."""

from __future__ import annotations

from modeldesk.trainers.image.classification_templates import GRID_S16X4_S32X3
from modeldesk.trainers.templates import Template

TEMPLATES = (
    Template(
        name="image-multilabel/standard",
        task="image-multilabel",
        description="Finds every tag that applies to an image, looking at where things are; each tag "
        "gets its own yes/no threshold, tuned on your held-out images.",
        backbone="efficientnet-lite0",
        features=GRID_S16X4_S32X3,
        head="sigmoid",
        head_params={"l2": 3e-2, "class_weight": "balanced", "max_iter": 300},
        time_budget_s=90.0,
    ),
)

"""Training templates: declarative presets a non-expert picks by name.

A template fixes the backbone, the features, the views, the head and its search space, and a
default time budget. ``list_templates()`` and ``get_template(name)`` are what the app calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from modeldesk.trainers.features import EMBEDDING, FeatureSpec, Pool

GRID_S16X4_S32X3 = FeatureSpec("grid-s16x4-s32x3", (Pool("stride16", grid=4), Pool("stride32", grid=3)))


@dataclass(frozen=True)
class Template:
    """A training preset.

    Parameters
    ----------
    name : ``"<task>/<variant>"``.
    task : the project task it trains.
    description : one line for a non-expert.
    backbone : registry name of the frozen backbone.
    features : how backbone outputs are pooled into the vector the head sees.
    head : ``"logistic"`` or ``"mlp"``.
    head_params : fixed head parameters.
    search_space : head parameter -> candidate values, plus ``"views"``: candidate tuples of image
        views (``"identity"``, ``"hflip"``); a model with several views trains on all of them and
        averages its predictions over them (inside the exported graph too). The parameter grid is
        scored by cross-validation on the training split with the first view set, then the other
        view sets with the best parameters, while the time budget lasts.
    cv_folds : folds for that search (ignored when the space has a single point).
    time_budget_s : default training time budget in seconds.
    """

    name: str
    task: str
    description: str
    backbone: str
    features: FeatureSpec
    head: str = "logistic"
    head_params: dict = field(default_factory=dict)
    search_space: dict = field(default_factory=dict)
    cv_folds: int = 3
    time_budget_s: float = 120.0

    def candidate_views(self) -> list[tuple[str, ...]]:
        """The view sets the search tries, first one the default."""
        return [tuple(v) for v in self.search_space.get("views", [("identity",)])]

    def all_views(self) -> list[str]:
        """Every view any candidate needs features for."""
        return sorted({view for views in self.candidate_views() for view in views},
                      key=lambda v: (v != "identity", v))

    def to_dict(self) -> dict:
        """JSON-ready summary (for ``modeldesk templates`` and the model card)."""
        return {
            "name": self.name, "task": self.task, "description": self.description,
            "backbone": self.backbone, "features": self.features.name, "head": self.head,
            "head_params": dict(self.head_params),
            "search_space": {k: [list(v) if isinstance(v, tuple) else v for v in values]
                             for k, values in self.search_space.items()},
            "cv_folds": self.cv_folds, "time_budget_s": self.time_budget_s,
        }


_TEMPLATES = {t.name: t for t in (
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
)}


def list_templates(task: str | None = None) -> list[Template]:
    """Templates, optionally only those for ``task``, in a stable order."""
    return [t for t in _TEMPLATES.values() if task is None or t.task == task]


def get_template(name) -> Template:
    """The template called ``name`` (a Template passes through); ValueError listing the choices."""
    if isinstance(name, Template):
        return name
    try:
        return _TEMPLATES[name]
    except KeyError:
        raise ValueError(f"unknown template {name!r}; available: {', '.join(_TEMPLATES)}") from None

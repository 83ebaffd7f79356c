"""Training templates: declarative presets a non-expert picks by name.

Each task's template module lists its templates and the task registry points at it
(``Task.templates``). Every template has ``name`` (``"<task>/<variant>"``), ``task``,
``description``, ``time_budget_s`` and ``to_dict()``; :class:`Template` is the one the image
trainers use (backbone, features, views, head and search space). ``list_templates()`` and
``get_template(name)`` are what the app calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from modeldesk.errors import UserError
from modeldesk.trainers.features import FeatureSpec


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
        views (``"identity"``, ``"hflip"``, ``"zoom"``: see ``trainers.views``); a model with several views trains on all of them and
        averages its predictions over them (inside the exported graph too). The parameter grid is
        scored by cross-validation on the train and validation photos with the first view set, then the other
        view sets with the best parameters, while the time budget lasts.
    head_candidates : other heads the search tries last, with the best views, each a dict of
        changes such as ``{"head": "mlp", "hidden": 512}`` (``head`` names the kind).
    cv_folds : folds for that search (ignored when the space has a single point).
    cv_repeats : how many times that cross-validation runs, each with other folds, its scores
        averaged (one draw of folds can favour the worse choice).
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
    head_candidates: tuple = ()
    cv_folds: int = 3
    cv_repeats: int = 1
    time_budget_s: float = 120.0

    def candidate_views(self) -> list[tuple[str, ...]]:
        """The view sets the search tries, first one the default."""
        return [tuple(v) for v in self.search_space.get("views", [("identity",)])]

    def all_views(self) -> list[str]:
        """Every view any candidate needs features for."""
        return sorted(
            {view for views in self.candidate_views() for view in views}, key=lambda v: (v != "identity", v)
        )

    def to_dict(self) -> dict:
        """JSON-ready summary (for ``modeldesk templates`` and the model card)."""
        return {
            "name": self.name,
            "task": self.task,
            "description": self.description,
            "backbone": self.backbone,
            "features": self.features.name,
            "head": self.head,
            "head_params": dict(self.head_params),
            "search_space": {
                k: [list(v) if isinstance(v, tuple) else v for v in values]
                for k, values in self.search_space.items()
            },
            "head_candidates": [dict(c) for c in self.head_candidates],
            "cv_folds": self.cv_folds,
            "cv_repeats": self.cv_repeats,
            "time_budget_s": self.time_budget_s,
        }


def list_templates(task: str | None = None) -> list:
    """Templates of every registered task, or only those of ``task``, in a stable order."""
    from modeldesk.trainers.tasks import list_tasks, task_templates

    names = [task] if task is not None else [t.name for t in list_tasks()]
    known = {t.name for t in list_tasks()}
    return [template for name in names if name in known for template in task_templates(name)]


def get_template(name):
    """The template called ``name`` (a template object passes through); UserError listing the choices."""
    if not isinstance(name, str):
        return name
    templates = {t.name: t for t in list_templates()}
    try:
        return templates[name]
    except KeyError:
        raise UserError(f"unknown template {name!r}; available: {', '.join(templates)}") from None

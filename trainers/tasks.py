"""The task registry: which tasks exist, what they mean for data, how each one trains.

A task is one :class:`Task` entry. Its trainer and templates are lazy ``"module:attr"`` strings,
so importing the registry imports no trainer (the way napari's manifests name
``python_name: module:function``), and a task can be registered from outside the package, with
:func:`register_task` or an entry point in the ``modeldesk.tasks`` group that names a Task.

    from modeldesk.trainers.tasks import get_task, get_trainer
    get_task("image-classification").target
'label'
    result = get_trainer("image-classification").train(samples, template, out_dir, cache_dir)
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from modeldesk.datasets.records import KINDS, TARGETS
from modeldesk.errors import UserError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "modeldesk.tasks"

#: Below this many examples a class is too small to learn from reliably (a warning, not a refusal).
FEW_EXAMPLES = 10

Progress = Callable[[str, float, "float | None", "dict | None"], None]


@dataclass
class TrainResult:
    """What a training run produced: the artifact, its metrics, warnings, skipped files, the plan and
    notes (what the run chose that the user should know, e.g. a larger input for small objects)."""

    artifact_dir: Path
    metrics: dict
    warnings: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    plan: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


@runtime_checkable
class Trainer(Protocol):
    """What every task's trainer does. ``samples`` are ``trainers.data.LabeledSample`` items."""

    def check(self, samples: Sequence) -> None:
        """Raise UserError with one plain sentence when these samples cannot train a model."""

    def estimate(
        self,
        samples: Sequence,
        template,
        cache_dir,
        *,
        device: str = "auto",
        time_budget: float | None = None,
        cluster=None,
    ) -> dict:
        """``{"eta_s": seconds, "plan": {...}}`` before anything runs."""

    def train(
        self,
        samples: Sequence,
        template,
        out_dir,
        cache_dir,
        *,
        time_budget: float | None = None,
        device: str = "auto",
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
        model_id: str | None = None,
        cluster=None,
    ):
        """Train, evaluate and write a model artifact to ``out_dir``; returns a ``TrainResult``.

        ``cluster`` (a Dask scheduler address, ``{"address", "credentials"}`` or None) adds a
        cluster's workers to this machine's devices; a trainer that cannot use one ignores it.
        """

    def evaluate(self, artifact_path, samples: Sequence, *, progress=None) -> dict:
        """Metrics of an existing artifact on labeled samples it never saw."""


@dataclass(frozen=True)
class Task:
    """One task.

    Parameters
    ----------
    name : e.g. ``"image-classification"``.
    title, description : words for people (the New project dialog).
    input_kind : ``"image"``, ``"text"`` or ``"audio"`` (what a sample is).
    target : ``"label"``, ``"tags"``, ``"boxes"`` or ``"mask"`` (what a sample's annotation is).
    trainer : ``"module:attr"`` of the Trainer (a class or an instance), None while it cannot train.
    templates : ``"module:attr"`` of a sequence of templates.
    missing : one sentence saying why the task cannot train yet (when ``trainer`` is None).
    min_classes : how many different labels training needs.
    annotation : what the Label page edits when it is more than ``target`` (``"defect"``: a label and,
        optionally, where on the photo the defect is); None: the target itself.
    classes : the classes a new project starts with, so the Label page has their keys before any photo
        is labeled with them (anomaly detection: ``good`` and ``defect``).
    """

    name: str
    title: str
    description: str
    input_kind: str
    target: str
    trainer: str | None = None
    templates: str | None = None
    missing: str = ""
    min_classes: int = 2
    annotation: str | None = None
    classes: tuple[str, ...] = ()

    def __post_init__(self):
        if self.input_kind not in KINDS:
            raise ValueError(f"task {self.name!r}: input kind must be one of {', '.join(KINDS)}")
        if self.target not in TARGETS:
            raise ValueError(f"task {self.name!r}: target must be one of {', '.join(TARGETS)}")
        if self.trainer is None and not self.missing:
            raise ValueError(f"task {self.name!r} has no trainer: say why in `missing`")

    @property
    def trainable(self) -> bool:
        return self.trainer is not None

    def to_dict(self) -> dict:
        return {**asdict(self), "trainable": self.trainable, "few_examples": FEW_EXAMPLES}


_BUILTIN = (
    Task(
        "image-classification",
        "Sort images into classes",
        "Each image gets one label, e.g. 'cat' or 'dog', 'ripe' or 'unripe'.",
        "image",
        "label",
        trainer="modeldesk.trainers.image.classification:ImageClassificationTrainer",
        templates="modeldesk.trainers.image.classification_templates:TEMPLATES",
    ),
    Task(
        "image-multilabel",
        "Tag images",
        "Each image gets any number of tags, e.g. 'outdoor', 'person', 'dog'.",
        "image",
        "tags",
        trainer="modeldesk.trainers.image.multilabel:ImageMultilabelTrainer",
        templates="modeldesk.trainers.image.multilabel_templates:TEMPLATES",
    ),
    Task(
        "object-detection",
        "Find objects in images",
        "Draw boxes around things: the model finds and counts them in new images.",
        "image",
        "boxes",
        trainer="modeldesk.trainers.detection.trainer:ObjectDetectionTrainer",
        templates="modeldesk.trainers.detection.templates:TEMPLATES",
        min_classes=1,
    ),
    Task(
        "text-classification",
        "Sort texts into classes",
        "Each text gets one label, e.g. 'spam' or 'not spam', a review's sentiment.",
        "text",
        "label",
        trainer="modeldesk.trainers.text.trainer:TextClassificationTrainer",
        templates="modeldesk.trainers.text.templates:TEMPLATES",
    ),
    Task(
        "sound-classification",
        "Sort sounds into classes",
        "Each clip gets one label, e.g. a spoken word or a machine noise.",
        "audio",
        "label",
        trainer="modeldesk.trainers.sound.trainer:SoundClassificationTrainer",
        templates="modeldesk.trainers.sound.templates:TEMPLATES",
    ),
    Task(
        "anomaly-detection",
        "Find defects after seeing only good parts",
        "Show it photos of good parts; it flags photos unlike them and shows where (visual inspection).",
        "image",
        "label",
        trainer="modeldesk.trainers.anomaly.trainer:AnomalyDetectionTrainer",
        templates="modeldesk.trainers.anomaly.templates:TEMPLATES",
        min_classes=1,
        annotation="defect",
        classes=("good", "defect"),
    ),
    Task(
        "tabular-classification",
        "Predict a column's class from the others",
        "Each row of a table gets one class from its other columns, e.g. whether a customer will leave.",
        "row",
        "label",
        trainer="modeldesk.trainers.tabular.trainer:TabularClassificationTrainer",
        templates="modeldesk.trainers.tabular.templates:CLASSIFICATION_TEMPLATES",
    ),
    Task(
        "tabular-regression",
        "Predict a column's number from the others",
        "Each row of a table gets a number from its other columns, e.g. a price or a weight.",
        "row",
        "label",  # the number is stored as the row's label, written canonically ("4250", "3.5")
        trainer="modeldesk.trainers.tabular.trainer:TabularRegressionTrainer",
        templates="modeldesk.trainers.tabular.templates:REGRESSION_TEMPLATES",
        min_classes=1,
    ),
    Task(
        "segmentation",
        "Find the exact shape of things, pixel by pixel",
        "Paint each class on the photos (road, leaf, scratch...): the model colours every pixel, so "
        "you can measure areas and outlines.",
        "image",
        "mask",
        trainer="modeldesk.trainers.segmentation.trainer:SegmentationTrainer",
        templates="modeldesk.trainers.segmentation.templates:TEMPLATES",
    ),
)

_TASKS: dict[str, Task] = {task.name: task for task in _BUILTIN}
_LOADED: dict[str, object] = {}
_lock = threading.Lock()
_entry_points_loaded = False


def register_task(task: Task, *, replace: bool = False) -> Task:
    """Add ``task`` to the registry (``replace=True`` to override one of the same name)."""
    with _lock:
        if task.name in _TASKS and not replace and _TASKS[task.name] != task:
            raise ValueError(f"a task named {task.name!r} is already registered")
        _TASKS[task.name] = task
        _forget_loaded(task.name)
    return task


def unregister_task(name: str) -> None:
    """Remove a task (for tests and plugins that go away)."""
    with _lock:
        _TASKS.pop(name, None)
        _forget_loaded(name)


def _forget_loaded(name: str) -> None:
    """Drop the imported trainer and templates of a task (call with the lock held)."""
    for key in [k for k in _LOADED if k.startswith(name + "\0")]:
        del _LOADED[key]


def _load_entry_points() -> None:
    """Register the tasks that installed packages announce in the ``modeldesk.tasks`` group."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            task = entry.load()
            register_task(task() if callable(task) and not isinstance(task, Task) else task, replace=True)
        except Exception:  # a broken plugin must not take the app down
            log.exception("could not load the task plugin %s", entry.value)


def reload_entry_points() -> None:
    """Look for task plugins again (after a package was installed or a path added)."""
    global _entry_points_loaded
    _entry_points_loaded = False
    _load_entry_points()


def list_tasks() -> list[Task]:
    """Every registered task, built-in ones first."""
    _load_entry_points()
    return list(_TASKS.values())


def trainable_tasks() -> list[Task]:
    return [task for task in list_tasks() if task.trainable]


def get_task(name) -> Task:
    """The task called ``name``; UserError listing the choices when there is none."""
    if isinstance(name, Task):
        return name
    _load_entry_points()
    try:
        return _TASKS[name]
    except KeyError:
        raise UserError(f"unknown task {name!r}; choose one of: {', '.join(_TASKS)}") from None


def resolve(reference: str):
    """Import ``"package.module:attr"`` and return the attribute."""
    module_name, sep, attribute = reference.partition(":")
    if not sep:
        raise ValueError(f"{reference!r} must look like 'package.module:attr'")
    obj = importlib.import_module(module_name)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


def _loaded(task: Task, what: str):
    key = f"{task.name}\0{what}"
    with _lock:
        if key not in _LOADED:
            value = resolve(getattr(task, what))
            if what == "trainer" and isinstance(value, type):
                value = value()
            _LOADED[key] = value
        return _LOADED[key]


def get_trainer(name) -> Trainer:
    """The trainer of a task; UserError with the task's own sentence when it cannot train yet."""
    task = get_task(name)
    if not task.trainable:
        raise UserError(task.missing)
    return _loaded(task, "trainer")


def task_templates(name) -> list:
    """The templates of one task (an empty list when it has none)."""
    task = get_task(name)
    return list(_loaded(task, "templates")) if task.templates else []

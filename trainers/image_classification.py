"""The image-classification trainer: features from a frozen backbone, a small head, one ONNX model.

``train_image_classifier`` extracts (cached) features, searches the template's hyperparameters by
cross-validation on the training split within the time budget, trains the head with early stopping
on the validation split, evaluates on the test split and writes the artifact: ``model.onnx`` (the
backbone, the feature pooling, the head and any test-time views in one graph) and ``model.json``.
"""

from __future__ import annotations

import itertools
import logging
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import onnx
import onnxruntime

from modeldesk.deploy.artifact import new_model_id, save_artifact
from modeldesk.deploy.graph import prune_unused
from modeldesk.scheduler import CostModel
from modeldesk.trainers import heads
from modeldesk.trainers.label_samples import check_label_samples
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.cluster_features import ClusterExtraction, open_cluster, probe_for
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.metrics import classification_report, most_confident_mistakes
from modeldesk.trainers.report import write_html_report
from modeldesk.trainers.features import (FEATURES_OUTPUT, Cancelled, FeatureExtractor, extract_feature_views,
                                         plan_feature_extraction)
from modeldesk.trainers.image_graph import OUTPUT_NAME, build_classifier_graph, check_parity
from modeldesk.trainers.tasks import TrainResult
from modeldesk.trainers.templates import Template, get_template

log = logging.getLogger(__name__)

# Seconds per image and view for feature extraction on a CPU, used before anything was measured.
DEFAULT_SECONDS_PER_IMAGE = 0.006
PARITY_TOLERANCE = 1e-4
CACHE_TOLERANCE = 1e-3

Progress = Callable[[str, float, "float | None", "dict | None"], None]


def _make_head(template: Template, params: dict):
    merged = {**template.head_params, **params}
    if template.head == "logistic":
        return heads.LogisticRegressionHead(**merged)
    if template.head == "mlp":
        return heads.MLPHead(**merged)
    raise ValueError(f"template {template.name}: unknown head {template.head!r}")


def check_samples(samples: Sequence[LabeledSample]) -> tuple[list[LabeledSample], list[str], list[str]]:
    """(labeled samples, sorted labels, warnings); see ``trainers.label_samples``."""
    return check_label_samples(samples, "image")


class _Features:
    """Cached features of the usable samples for each view, row-aligned with ``samples``."""

    def __init__(self, samples, by_view: dict):
        self.samples = samples
        self.by_view = by_view

    def views(self, indices, views) -> np.ndarray:
        """Features of sample ``indices`` as a (n_views, n_samples, dim) array."""
        return np.stack([self.by_view[v][indices] for v in views])


def _fit_views(head, X_views, y, X_val=None, y_val=None):
    """Fit ``head`` on every view of every sample (and early-stop on every view of the validation ones)."""
    flat = X_views.reshape(-1, X_views.shape[-1])
    if X_val is None:
        return head.fit(flat, np.tile(y, X_views.shape[0]))
    return head.fit(flat, np.tile(y, X_views.shape[0]), X_val.reshape(-1, X_val.shape[-1]),
                    np.tile(y_val, X_val.shape[0]))


def _search(template, feats, y, train_idx, deadline, report) -> tuple[dict, tuple, list]:
    """Best (head params, views) by cross-validation on the training split; also the trials.

    Two stages: the head parameter grid with the default views, then every other view set with
    the best parameters. No new trial starts after ``deadline``; ties keep the earlier (cheaper) one.
    """
    space = {k: v for k, v in template.search_space.items() if k != "views"}
    grid = [dict(zip(space, values)) for values in itertools.product(*space.values())] or [{}]
    views_options = template.candidate_views()
    folds = heads.usable_folds(y[train_idx], template.cv_folds)
    if len(grid) + len(views_options) == 2 or folds < 2:
        return grid[0], views_options[0], []

    def score(params):
        params = dict(params)
        views = params.pop("views")
        return heads.cross_val_score(lambda: _make_head(template, params), feats.views(train_idx, views),
                                     y[train_idx], folds=folds).mean()

    result = heads.staged_search(
        [grid, [{"views": views} for views in views_options]], score, start={"views": views_options[0]},
        deadline=deadline, progress=lambda done, total, best: report(done / total, {"cv_accuracy": best}))
    trials = [{"params": {k: v for k, v in t["params"].items() if k != "views"},
               "views": list(t["params"]["views"]), "cv_accuracy": t["score"]} for t in result.trials]
    params = dict(result.best)
    return params, tuple(params.pop("views")), trials


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    try:
        modeldesk_version = version("modeldesk")
    except PackageNotFoundError:
        modeldesk_version = "unknown"
    return {"modeldesk": modeldesk_version, "onnxruntime": onnxruntime.__version__,
            "onnx": onnx.__version__, "numpy": np.__version__}


def _search_trials(template: Template) -> int:
    grid = 1
    for name, values in template.search_space.items():
        if name != "views":
            grid *= len(values)
    trials = grid + len(template.candidate_views()) - 1
    return 1 if trials == 1 else trials * template.cv_folds + 1


HEAD_WORK = "head-fitting"  # cost-model key: thousands of (sample x feature x trial) per second


def _head_units(n_samples: int, dim: int, trials: int) -> int:
    """The size of the search and final fit, in the unit the cost model measures head fitting in."""
    return max(1, n_samples * dim * trials // 1000)


def _head_seconds(cost: CostModel, units: int) -> float:
    """Measured on this machine once a model was trained, else a conservative prior (1e6 units/s)."""
    rate = cost.items_per_s(HEAD_WORK, "cpu", 1, 1)
    return units / rate if rate else units / 1000.0


def _uncached(cache: FeatureCache, backbone, template, keys) -> set:
    """The keys missing a vector in any view the template may use."""
    missing = set()
    for view in template.all_views():
        missing.update(cache.missing((backbone.key, template.features.name, view), keys))
    return missing


def estimate_training(samples, template, cache_dir, *, device: str = "auto", threads: int | None = None,
                      time_budget: float | None = None, cluster=None) -> dict:
    """The ETA and plan before training: uncached features (measured throughput when the scheduler
    has seen this work before, else a default per image) plus a rough figure for the head.
    With ``cluster`` (see ``features.extract_feature_views``) the plan covers its workers, each
    probed once on a few of these images the first time it is seen.

    Returns ``{"eta_s", "plan"}``; ``plan`` is the scheduler's plan for the feature extraction
    (``devices``, ``notes``...) with ``eta_s`` for the whole training and ``features_to_compute``.
    """
    template = get_template(template)
    backbone = get_backbone(template.backbone)
    cache = FeatureCache(cache_dir)
    labeled = [s for s in samples if s.target is not None]
    views = template.all_views()
    keys = [s.key for s in labeled]
    missing = _uncached(cache, backbone, template, keys)
    with open_cluster(cluster if missing else None, backbone.name) as backend:
        probe = None
        if backend is not None:
            todo = [(s.key, s.path) for s in labeled if s.key in missing]
            probe = probe_for(ClusterExtraction(FeatureExtractor(backbone, cache, features=template.features,
                                                                 views=views)), todo)
        plan = plan_feature_extraction(backbone, len(missing), cache, views=views, features=template.features,
                                       device=device, threads=threads, cluster=backend, probe=probe)
    features_s = plan.eta_s
    if features_s is None:
        per_image = DEFAULT_SECONDS_PER_IMAGE * (1 + 0.6 * (len(views) - 1))
        features_s = len(missing) * (per_image if device in ("auto", "cpu") else per_image / 4)
    budget = float(time_budget or template.time_budget_s)
    units = _head_units(len(labeled), template.features.dim(backbone), _search_trials(template))
    head_s = min(0.8 * budget, 1.0 + _head_seconds(CostModel(cache.root), units))
    eta = round(features_s + head_s + 1.0, 1)
    return {"eta_s": eta, "plan": {**plan.to_dict(), "eta_s": eta, "features_to_compute": len(missing)}}


def train_image_classifier(samples: Sequence[LabeledSample], template, out_dir, cache_dir, *,
                           time_budget: float | None = None, device: str = "auto",
                           threads: int | None = None, progress: Progress | None = None,
                           should_stop: Callable[[], bool] | None = None,
                           model_id: str | None = None, cluster=None) -> TrainResult:
    """Train an image classifier and write its artifact to ``out_dir``.

    Parameters
    ----------
    samples : LabeledSample items; unlabeled ones are ignored.
    template : a Template or its name (``"image-classification/accurate"``).
    out_dir : artifact folder to write (replaced atomically).
    cache_dir : the workspace feature cache folder (backbone graphs are cached there too).
    time_budget : seconds for the whole run (default: the template's); the hyperparameter search
        stops early when it runs out.
    device, threads : where features are computed (see ``deploy.runtime.create_session``).
    progress : ``progress(stage, fraction, eta_s, metrics)``.
    should_stop : polled regularly; when True, ``Cancelled`` is raised (finished features stay cached).
    model_id : id written to the model card (default: a new one).
    cluster : a Dask scheduler address, ``{"address", "credentials"}`` or a DaskBackend whose
        workers compute features beside this machine's devices (``None``: this machine only).

    Returns
    -------
    TrainResult with ``artifact_dir``, ``metrics`` (on the test split, else the validation split),
    ``warnings`` and ``skipped`` ([{file, reason}] for images that could not be decoded).
    """
    started = time.monotonic()
    template = get_template(template)
    budget = float(time_budget or template.time_budget_s)
    backbone = get_backbone(template.backbone)
    labeled, labels, warnings = check_samples(samples)
    cache = FeatureCache(cache_dir)
    estimate: dict = {}

    def report(stage, fraction, metrics=None):
        if should_stop is not None and should_stop():
            raise Cancelled("training was stopped")
        if progress is not None:
            elapsed = time.monotonic() - started
            if fraction > 0.05:
                eta = elapsed * (1 - fraction) / fraction
            else:
                eta = max(float(estimate["eta_s"]) - elapsed, 0.0)
            progress(stage, float(min(max(fraction, 0.0), 1.0)), eta, metrics)

    # 1. features for every view any candidate needs (0 .. 0.7 of the progress bar)
    views_needed = template.all_views()
    items = [(s.key, s.path) for s in labeled]
    # One cluster connection for the estimate and the extraction, none when every vector is cached.
    with open_cluster(cluster if _uncached(cache, backbone, template, [k for k, _ in items]) else None,
                      backbone.name) as backend:
        estimate.update(estimate_training(labeled, template, cache_dir, device=device, threads=threads,
                                          time_budget=budget, cluster=backend))
        extracted = extract_feature_views(
            backbone, items, cache, views=views_needed, features=template.features, device=device,
            threads=threads, should_stop=should_stop, cluster=backend,
            progress=lambda done, total: report("Extracting features", 0.7 * done / max(total, 1)))
    skipped = extracted[views_needed[0]].skipped
    extraction_plan = extracted[views_needed[0]].plan
    good = set(extracted[views_needed[0]].keys)
    bad_files = {entry["file"] for entry in skipped}
    labeled = [s for s in labeled if s.key in good and s.path not in bad_files]
    if not labeled:
        raise ValueError(f"none of the {len(items)} images could be read (first: {skipped[0]['reason']})")
    by_view = {}
    for view, result in extracted.items():
        index = {key: row for row, key in enumerate(result.keys)}
        by_view[view] = result.features[[index[s.key] for s in labeled]]
    if skipped:
        warnings.append(f"{len(skipped)} image(s) could not be read and were left out")
        labeled, labels, more = check_samples(labeled)
        warnings += [w for w in more if w not in warnings]
    feats = _Features(labeled, by_view)
    label_index = {label: i for i, label in enumerate(labels)}
    y = np.array([label_index[s.label] for s in labeled])
    split = np.array([s.split for s in labeled])
    train_idx, val_idx, test_idx = (np.flatnonzero(split == name) for name in ("train", "val", "test"))

    # 2. hyperparameter search by cross-validation on the training split (0.7 .. 0.9)
    head_started = time.monotonic()
    deadline = started + 0.8 * budget
    params, views, trials = _search(template, feats, y, train_idx, deadline,
                                    lambda f, m: report("Tuning", 0.7 + 0.2 * f, m))

    # 3. final head, early stopping on the validation split (0.9 .. 0.95)
    report("Training", 0.9)
    head = _make_head(template, params)
    if len(val_idx) and len(np.unique(y[val_idx])) > 1:
        _fit_views(head, feats.views(train_idx, views), y[train_idx], feats.views(val_idx, views), y[val_idx])
    else:
        _fit_views(head, feats.views(train_idx, views), y[train_idx])

    fits = len(trials) * template.cv_folds + 1 if trials else 1  # trials cut by the budget count less
    CostModel(cache.root).record(HEAD_WORK, "cpu", 1, 1, n_items=_head_units(len(labeled), template.features.dim(backbone), fits),
                                 seconds=max(time.monotonic() - head_started, 1e-3))

    # 4. evaluation on the test split, else the validation split (0.95)
    report("Evaluating", 0.95)
    eval_idx, eval_split = (test_idx, "test") if len(test_idx) else (val_idx, "val")
    if not len(eval_idx):
        warnings.append("no validation or test images: the metrics are measured on the training images")
        eval_idx, eval_split = train_idx, "train"
    eval_proba = heads.predict_views(head, feats.views(eval_idx, views))
    metrics = classification_report(y[eval_idx], eval_proba, labels)
    metrics["split"] = eval_split
    eval_keys = [feats.samples[i].key for i in eval_idx]
    metrics["mistakes"] = most_confident_mistakes(y[eval_idx], eval_proba, eval_keys, labels)
    if trials:
        metrics["search"] = {"trials": trials, "best": {"params": params, "views": list(views)}}

    # 5. one graph, checked against the training path, written as an artifact
    report("Exporting", 0.97)
    model = build_classifier_graph(backbone, template, head, views, cache.root / "graphs")
    parity, vs_cache = check_parity(model, backbone, template, head, [feats.samples[i].path for i in eval_idx[:4]],
                                    feats.views(eval_idx[:4], views), views, cache.root / "graphs")
    metrics["export_max_abs_diff"] = parity
    metrics["export_vs_training_features_max_abs_diff"] = vs_cache
    if parity > PARITY_TOLERANCE:
        raise RuntimeError(f"exported graph disagrees with the training path by {parity:.2e}")
    if vs_cache > CACHE_TOLERANCE:
        warnings.append(f"the features the model was trained on (device {device}) differ from the exported "
                        f"model's on the CPU by up to {vs_cache:.1e} in probability")
    card = {
        "id": model_id or new_model_id(),
        "task": "image-classification",
        "target": "label",
        "labels": labels,
        "preprocessing": backbone.spec.to_dict(),
        "template": template.name,
        "backbone": backbone.key,
        "features": template.features.name,
        "features_output": FEATURES_OUTPUT,  # what compression re-fits a head on
        "views": list(views),
        "head": {"kind": template.head, "params": {**template.head_params, **params}},
        "metrics": metrics,
        "versions": _versions(),
        "input_name": backbone.input_name,
        "output_name": OUTPUT_NAME,
        "warnings": warnings,
        "training": {"samples": {name: int(len(idx)) for name, idx in
                                 (("train", train_idx), ("val", val_idx), ("test", test_idx))},
                     "seconds": round(time.monotonic() - started, 2), "skipped": skipped},
    }
    # The backbone's ImageNet classifier is not needed behind the new head: ~5 MB less to ship.
    artifact_dir = save_artifact(out_dir, prune_unused(model), card)
    paths = {s.key: s.path for s in labeled}
    write_html_report(Path(artifact_dir) / "report.html", title=f"Model {card['id']}", metrics=metrics,
                      mistakes=metrics["mistakes"], thumbnails={m["key"]: paths[m["key"]] for m in metrics["mistakes"]},
                      model_card={"task": card["task"], "template": template.name, "backbone": backbone.key,
                                  "images": card["training"]["samples"]})
    elapsed = time.monotonic() - started
    report("Done", 1.0, {k: metrics[k] for k in ("accuracy", "macro_f1") if k in metrics})
    return TrainResult(artifact_dir=Path(artifact_dir), metrics=metrics, warnings=warnings, skipped=skipped,
                       plan={**estimate["plan"], **(extraction_plan or {}), "eta_s": estimate["eta_s"],
                             "actual_s": round(elapsed, 2)})


class ImageClassificationTrainer:
    """The image classification task's trainer (see ``trainers.tasks.Trainer``)."""

    def check(self, samples) -> None:
        check_samples(samples)

    def estimate(self, samples, template, cache_dir, *, device: str = "auto", time_budget=None, cluster=None) -> dict:
        return estimate_training(samples, template, cache_dir, device=device, time_budget=time_budget,
                                 cluster=cluster)

    def train(self, samples, template, out_dir, cache_dir, **options) -> TrainResult:
        return train_image_classifier(samples, template, out_dir, cache_dir, **options)

    def evaluate(self, artifact_path, samples, *, progress=None) -> dict:
        from modeldesk.trainers.evaluation import evaluate_labels

        return evaluate_labels(artifact_path, samples, progress=progress)

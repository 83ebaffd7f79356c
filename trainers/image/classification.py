"""The image-classification trainer: features from a frozen backbone, a small head, one ONNX model.

``train_image_classifier`` extracts (cached) features, chooses the template's head settings and views
by cross-validation on the train and validation photos within the time budget, evaluates that choice
on the test photos (with a 90% interval), refits it on every labeled photo (``image_selection``) and
writes the artifact: ``model.onnx`` (the backbone, the feature pooling, the head and any test-time
views in one graph) and ``model.json``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from modeldesk.deploy.artifact import new_model_id, save_artifact
from modeldesk.deploy.graph import prune_unused
from modeldesk.scheduler import CostModel
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.base import PARITY_TOLERANCE, TaskTrainer
from modeldesk.trainers.cluster_features import ClusterExtraction, open_cluster, probe_for
from modeldesk.trainers.data import LabeledSample
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.features import (
    FEATURES_OUTPUT,
    FeatureExtractor,
    extract_feature_views,
    plan_feature_extraction,
)
from modeldesk.trainers.heads.optim import one_blas_thread
from modeldesk.trainers.image.graph import OUTPUT_NAME, build_classifier_graph, check_parity
from modeldesk.trainers.image.selection import Features, make_head, planned_work, select_evaluate_refit
from modeldesk.trainers.label_samples import check_label_samples
from modeldesk.trainers.metrics import accuracy_interval, classification_report, most_confident_mistakes
from modeldesk.trainers.novelty import NoveltyReference
from modeldesk.trainers.progress import stage_reporter
from modeldesk.trainers.report import write_html_report
from modeldesk.trainers.tasks import TrainResult
from modeldesk.trainers.templates import get_template
from modeldesk.trainers.versions import versions

log = logging.getLogger(__name__)

# Seconds per image and view for feature extraction on a CPU, used before anything was measured.
DEFAULT_SECONDS_PER_IMAGE = 0.006
CACHE_TOLERANCE = 1e-3

Progress = Callable[[str, float, "float | None", "dict | None"], None]


def check_samples(samples: Sequence[LabeledSample]) -> tuple[list[LabeledSample], list[str], list[str]]:
    """(labeled samples, sorted labels, warnings); see ``trainers.label_samples``."""
    return check_label_samples(samples, "image")


def _evaluation(chosen, y, labels, keys, warnings) -> dict:
    """The metrics of the chosen configuration on its evaluation photos, with a 90% interval."""
    idx, proba = chosen.eval_idx, chosen.eval_proba
    metrics = classification_report(y[idx], proba, labels)
    metrics["split"] = chosen.eval_split
    metrics["mistakes"] = most_confident_mistakes(y[idx], proba, [keys[i] for i in idx], labels)
    interval = accuracy_interval(int(round(metrics["accuracy"] * metrics["n"])), metrics["n"])
    metrics["interval"] = interval
    metrics["final_model"] = {
        "samples": len(y),
        "text": f"The final model was trained on all {len(y)} labeled "
        "images, after this evaluation, so it has seen the test images too.",
    }
    if chosen.cv_accuracy is not None:
        metrics["cv_accuracy"] = chosen.cv_accuracy
    if chosen.trials:
        metrics["search"] = {
            "trials": chosen.trials,
            "best": {
                "params": {k: v for k, v in chosen.config.items() if k != "views"},
                "views": list(chosen.config["views"]),
            },
        }
    if interval["too_wide"] and chosen.eval_split != "train":
        warnings.append(
            f"only {metrics['n']} images were tested: the accuracy is somewhere between "
            f"{interval['text']}, too wide to tell apart two models a few points apart; "
            "label more images or move more of them to the test split"
        )
    return metrics


HEAD_WORK = "head-fitting"  # cost-model key: thousands of (sample x feature x trial) per second


def _head_units(n_samples: int, dim: int, work: float) -> int:
    """The size of the search and final fits (``work``: see ``image_selection.config_work``), in the
    unit the cost model measures head fitting in: thousands of sample x feature x logistic fits."""
    return max(1, int(n_samples * dim * work // 1000))


# Units a second before this machine has fitted a template's head, measured on 2 cores with
# bench/train_image.py: 3,200 for accurate; 4,800 to 7,200 for best (its MLP and views fit faster per
# unit), whose prior sits near the slower end so that a first ETA errs long rather than short.
HEAD_PRIORS = {"image-classification/best": 5000.0}
HEAD_PRIOR = 3000.0


def _head_key(template) -> str:
    return f"{HEAD_WORK}/{template.name}"


def _head_seconds(cost: CostModel, units: int, template) -> float:
    """Measured on this machine once the template was trained here, else its prior."""
    rate = cost.items_per_s(_head_key(template), "cpu", 1, 1) or HEAD_PRIORS.get(template.name, HEAD_PRIOR)
    return units / rate


FINISH_WORK = "export-and-report"  # cost-model key: seconds from the chosen head to the written artifact
FINISH_PRIOR_S = 3.0  # the graph built and checked, the "not sure" references, the report (2 busy cores)


def _finish_key(template) -> str:
    return f"{FINISH_WORK}/{template.features.name}"


def _finish_seconds(cost: CostModel, template) -> float:
    """The export stage (graph, parity check, novelty references, report): measured here, else a prior."""
    rate = cost.items_per_s(_finish_key(template), "cpu", 1, 1)
    return 1.0 / rate if rate else FINISH_PRIOR_S


def _report_title(template, metrics) -> str:
    """``Accurate model, 2 Dec 17:07, 99%``: how people tell models apart (the id is in the card below)."""
    recipe = template.name.rsplit("/", 1)[-1].replace("-", " ").capitalize()
    accuracy = metrics.get("accuracy")
    now = time.localtime()
    parts = [f"{recipe} model", f"{now.tm_mday} {time.strftime('%b %H:%M', now)}"]
    if isinstance(accuracy, (int, float)):
        parts.append(f"{accuracy:.0%}")
    return ", ".join(parts)


def _uncached(cache: FeatureCache, backbone, template, keys) -> set:
    """The keys missing a vector in any view the template may use."""
    missing = set()
    for view in template.all_views():
        missing.update(cache.missing((backbone.key, template.features.name, view), keys))
    return missing


def estimate_training(
    samples,
    template,
    cache_dir,
    *,
    device: str = "auto",
    threads: int | None = None,
    time_budget: float | None = None,
    cluster=None,
) -> dict:
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
            probe = probe_for(
                ClusterExtraction(FeatureExtractor(backbone, cache, features=template.features, views=views)),
                todo,
            )
        plan = plan_feature_extraction(
            backbone,
            len(missing),
            cache,
            views=views,
            features=template.features,
            device=device,
            threads=threads,
            cluster=backend,
            probe=probe,
        )
    features_s = plan.eta_s
    if features_s is None:
        per_image = DEFAULT_SECONDS_PER_IMAGE * (1 + 0.6 * (len(views) - 1))
        features_s = len(missing) * (per_image if device in ("auto", "cpu") else per_image / 4)
    budget = float(time_budget or template.time_budget_s)
    units = _head_units(len(labeled), template.features.dim(backbone), planned_work(template))
    cost = CostModel(cache.root)
    head_s = min(0.8 * budget, 1.0 + _head_seconds(cost, units, template))
    eta = round(features_s + head_s + _finish_seconds(cost, template), 1)
    return {"eta_s": eta, "plan": {**plan.to_dict(), "eta_s": eta, "features_to_compute": len(missing)}}


def train_image_classifier(
    samples: Sequence[LabeledSample],
    template,
    out_dir,
    cache_dir,
    *,
    time_budget: float | None = None,
    device: str = "auto",
    threads: int | None = None,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
    model_id: str | None = None,
    cluster=None,
) -> TrainResult:
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

    # 1. features for every view any candidate needs (0 .. 0.7 of the progress bar)
    views_needed = template.all_views()
    items = [(s.key, s.path) for s in labeled]
    # One cluster connection for the estimate and the extraction, none when every vector is cached.
    with open_cluster(
        cluster if _uncached(cache, backbone, template, [k for k, _ in items]) else None, backbone.name
    ) as backend:
        estimate = estimate_training(
            labeled, template, cache_dir, device=device, threads=threads, time_budget=budget, cluster=backend
        )
        report = stage_reporter(started, estimate["eta_s"], progress, should_stop)
        extracted = extract_feature_views(
            backbone,
            items,
            cache,
            views=views_needed,
            features=template.features,
            device=device,
            threads=threads,
            should_stop=should_stop,
            cluster=backend,
            progress=lambda done, total: report("Extracting features", 0.7 * done / max(total, 1)),
        )
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
    feats = Features(labeled, by_view)
    label_index = {label: i for i, label in enumerate(labels)}
    y = np.array([label_index[s.label] for s in labeled])
    split = np.array([s.split for s in labeled])

    # 2. select by cross-validation on train + val, evaluate on test, refit on all (0.7 .. 0.95)
    head_started = time.monotonic()
    with one_blas_thread():
        chosen = select_evaluate_refit(
            template,
            feats,
            y,
            split,
            deadline=started + 0.8 * budget,
            progress=lambda f, m: report("Tuning", 0.7 + 0.2 * f, m),
        )
    head, views, eval_idx = chosen.head, tuple(chosen.config["views"]), chosen.eval_idx
    warnings += chosen.warnings
    head_units = _head_units(len(labeled), template.features.dim(backbone), chosen.work)
    head_seconds = max(time.monotonic() - head_started, 1e-3)
    CostModel(cache.root).record(_head_key(template), "cpu", 1, 1, n_items=head_units, seconds=head_seconds)

    # 3. the evaluation of the chosen configuration on photos the selection did not use (0.95)
    report("Evaluating", 0.95)
    metrics = _evaluation(chosen, y, labels, [s.key for s in labeled], warnings)

    # 4. "unlike anything it was trained on": references and a threshold from the first view's features
    report("Exporting", 0.97)
    finish_started = time.monotonic()
    with one_blas_thread():
        novelty = NoveltyReference().fit(feats.by_view[views[0]])
    metrics["novelty"] = {
        "held_out_familiar": float(np.mean(novelty.held_out_similarity_ >= novelty.similarity_threshold_))
    }

    # 5. one graph, checked against the training path, written as an artifact
    model = build_classifier_graph(backbone, template, head, views, cache.root / "graphs", novelty=novelty)
    parity, vs_cache = check_parity(
        model,
        backbone,
        template,
        head,
        [labeled[i].path for i in eval_idx[:4]],
        feats.views(eval_idx[:4], views),
        views,
        cache.root / "graphs",
    )
    metrics["export_max_abs_diff"] = parity
    metrics["export_vs_training_features_max_abs_diff"] = vs_cache
    if parity > PARITY_TOLERANCE:
        raise RuntimeError(f"exported graph disagrees with the training path by {parity:.2e}")
    if vs_cache > CACHE_TOLERANCE:
        warnings.append(
            f"the features the model was trained on (device {device}) differ from the exported "
            f"model's on the CPU by up to {vs_cache:.1e} in probability"
        )
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
        "head": {"kind": chosen.config["head"], "params": make_head(template, chosen.config).get_params()},
        "novelty": novelty.card(),  # the "not sure" rule; compression re-fits it with the head
        "metrics": metrics,
        "versions": versions(),
        "input_name": backbone.input_name,
        "output_name": OUTPUT_NAME,
        "warnings": warnings,
        "training": {
            "samples": {name: int(np.sum(split == name)) for name in ("train", "val", "test")},
            "final_fit": len(labeled),
            "seconds": round(time.monotonic() - started, 2),
            "skipped": skipped,
        },
    }
    # The backbone's ImageNet classifier is not needed behind the new head: ~5 MB less to ship.
    artifact_dir = save_artifact(out_dir, prune_unused(model), card)
    paths = {s.key: s.path for s in labeled}
    write_html_report(
        Path(artifact_dir) / "report.html",
        title=_report_title(template, metrics),
        metrics=metrics,
        mistakes=metrics["mistakes"],
        thumbnails={m["key"]: paths[m["key"]] for m in metrics["mistakes"]},
        model_card={
            "model": card["id"],
            "task": card["task"],
            "template": template.name,
            "backbone": backbone.key,
            "images": card["training"]["samples"],
        },
    )
    CostModel(cache.root).record(
        _finish_key(template), "cpu", 1, 1, n_items=1, seconds=max(time.monotonic() - finish_started, 1e-3)
    )
    elapsed = time.monotonic() - started
    report("Done", 1.0, {k: metrics[k] for k in ("accuracy", "macro_f1") if k in metrics})
    return TrainResult(
        artifact_dir=Path(artifact_dir),
        metrics=metrics,
        warnings=warnings,
        skipped=skipped,
        plan={
            **estimate["plan"],
            **(extraction_plan or {}),
            "eta_s": estimate["eta_s"],
            "actual_s": round(elapsed, 2),
        },
    )


class ImageClassificationTrainer(TaskTrainer):
    """The image classification task's trainer (see ``trainers.tasks.Trainer``)."""

    def check(self, samples) -> None:
        check_samples(samples)

    def estimate(
        self, samples, template, cache_dir, *, device: str = "auto", time_budget=None, cluster=None
    ) -> dict:
        return estimate_training(
            samples, template, cache_dir, device=device, time_budget=time_budget, cluster=cluster
        )

    def train(self, samples, template, out_dir, cache_dir, **options) -> TrainResult:
        return train_image_classifier(samples, template, out_dir, cache_dir, **options)

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
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from modeldesk.scheduler import CostModel
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.base import PARITY_TOLERANCE, Run, TaskTrainer
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
from modeldesk.trainers.report import write_html_report
from modeldesk.trainers.tasks import TrainResult
from modeldesk.trainers.templates import get_template

log = logging.getLogger(__name__)

# Seconds per image and view for feature extraction on a CPU, used before anything was measured, in the
# priors' units (app.calibration): the session's start, decoding and the backbone; a fresh workspace took
# 1.14 s for 100 sign digits (1 view) and 1.35 s (2 views) at probe slowdown 0.93 (bench/estimates.py
# --stages, 2026-12-04): 17 and 13 ms a photo and view in those units.
DEFAULT_SECONDS_PER_IMAGE = 0.012
CACHE_TOLERANCE = 1e-3


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
HEAD_START_S = 0.1


def _head_key(template) -> str:
    return f"{HEAD_WORK}/{template.name}"


def _head_seconds(cost: CostModel, units: int, template) -> float:
    """Measured on this machine once the template was trained here, else its prior."""
    rate = cost.items_per_s(_head_key(template), "cpu", 1, 1) or HEAD_PRIORS.get(template.name, HEAD_PRIOR)
    return units / rate


FINISH_WORK = "export-and-report"  # cost-model key: seconds from the chosen head to the written artifact
#: the graph built and checked, the "not sure" references, the report, in the priors' units: 0.26 s (fast),
#: 0.56 s (accurate), 0.89 s (best) at probe slowdown 0.93, i.e. 0.4-1.3 s (bench/estimates.py --stages,
#: 2026-12-04); 3 s was a time measured on a machine ~5x busier, taken as it was
FINISH_PRIOR_S = 1.0


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
    # the head's setup is small: a fast recipe's whole "Tuning" took 0.05 s (100 photos, slowdown 0.93)
    head_s = min(0.8 * budget, HEAD_START_S + _head_seconds(cost, units, template))
    finish_s = _finish_seconds(cost, template)
    eta = round(features_s + head_s + finish_s, 1)
    parts = {"features": round(features_s, 2), "head": round(head_s, 2), "export": round(finish_s, 2)}
    return {
        "eta_s": eta,
        "plan": {**plan.to_dict(), "eta_s": eta, "features_to_compute": len(missing), "seconds": parts},
    }


def train_image_classifier(
    samples: Sequence[LabeledSample], template, out_dir, cache_dir, **options
) -> TrainResult:
    """Train an image classifier and write its artifact to ``out_dir``.

    ``options`` are ``TaskTrainer.train``'s (``time_budget``, ``device``, ``progress``, ``should_stop``,
    ``model_id``) and ``threads`` and ``cluster``: a Dask scheduler address, ``{"address",
    "credentials"}`` or a DaskBackend whose workers compute features beside this machine's devices.
    The hyperparameter search stops early when the time budget runs out; the metrics are measured on
    the test split, else the validation split; ``skipped`` lists the images that could not be decoded.
    """
    return ImageClassificationTrainer().train(samples, template, out_dir, cache_dir, **options)


class ImageClassificationTrainer(TaskTrainer):
    """The image classification task's trainer (see ``trainers.tasks.Trainer`` and ``TaskTrainer.train``)."""

    train_options = {"threads": None, "cluster": None}

    def check(self, samples) -> None:
        check_samples(samples)

    def estimate(
        self, samples, template, cache_dir, *, device: str = "auto", time_budget=None, cluster=None
    ) -> dict:
        return estimate_training(
            samples, template, cache_dir, device=device, time_budget=time_budget, cluster=cluster
        )

    def prepare(self, run: Run, samples) -> tuple[list, list[str]]:
        labeled, labels, warnings = check_samples(samples)
        run.warnings += warnings
        return labeled, labels

    def plan(self, run: Run) -> dict:
        # One cluster connection for the estimate and the extraction, none when every vector is cached.
        template, cache = run.template, FeatureCache(run.cache_dir)
        backbone = get_backbone(template.backbone)
        uncached = _uncached(cache, backbone, template, [s.key for s in run.labeled])
        run.options["cluster"] = run.resources.enter_context(
            open_cluster(run.options["cluster"] if uncached else None, backbone.name)
        )
        return estimate_training(
            run.labeled,
            template,
            run.cache_dir,
            device=run.device,
            threads=run.options["threads"],
            time_budget=run.budget,
            cluster=run.options["cluster"],
        )

    def features(self, run: Run) -> Features:
        """Features for every view any candidate needs (0 .. 0.7 of the progress bar)."""
        template, cache = run.template, FeatureCache(run.cache_dir)
        backbone = get_backbone(template.backbone)
        views_needed = template.all_views()
        items = [(s.key, s.path) for s in run.labeled]
        extracted = extract_feature_views(
            backbone,
            items,
            cache,
            views=views_needed,
            features=template.features,
            device=run.device,
            threads=run.options["threads"],
            should_stop=run.should_stop,
            cluster=run.options["cluster"],
            progress=lambda done, total: run.report("Extracting features", 0.7 * done / max(total, 1)),
        )
        run.resources.close()  # the cluster connection: every feature is extracted
        first = extracted[views_needed[0]]
        run.skipped, run.extraction = first.skipped, first.plan or {}
        bad_files = {entry["file"] for entry in first.skipped}
        labeled = [s for s in run.labeled if s.key in set(first.keys) and s.path not in bad_files]
        if not labeled:
            raise ValueError(
                f"none of the {len(items)} images could be read (first: {first.skipped[0]['reason']})"
            )
        by_view = {}
        for view, result in extracted.items():
            index = {key: row for row, key in enumerate(result.keys)}
            by_view[view] = result.features[[index[s.key] for s in labeled]]
        if first.skipped:
            run.warnings.append(f"{len(first.skipped)} image(s) could not be read and were left out")
            labeled, run.labels, more = check_samples(labeled)
            run.warnings += [w for w in more if w not in run.warnings]
        run.labeled = labeled
        return Features(labeled, by_view)

    def fit(self, run: Run):
        """Select by cross-validation on train + val, evaluate on test, refit on all (0.7 .. 0.95)."""
        template, feats = run.template, run.data
        run.report("Tuning", 0.7)
        label_index = {label: i for i, label in enumerate(run.labels)}
        y = np.array([label_index[s.label] for s in run.labeled])
        with one_blas_thread():
            chosen = select_evaluate_refit(
                template,
                feats,
                y,
                np.array([s.split for s in run.labeled]),
                deadline=run.deadline(0.8),
                progress=lambda f, m: run.report("Tuning", 0.7 + 0.2 * f, m),
            )
        run.warnings += chosen.warnings
        dim = template.features.dim(get_backbone(template.backbone))
        CostModel(FeatureCache(run.cache_dir).root).record(
            _head_key(template),
            "cpu",
            1,
            1,
            n_items=_head_units(len(run.labeled), dim, chosen.work),
            seconds=run.since("Tuning"),
        )
        return chosen

    def measure(self, run: Run) -> dict:
        """The chosen configuration on photos the selection did not use."""
        chosen = run.fitted
        label_index = {label: i for i, label in enumerate(run.labels)}
        y = np.array([label_index[s.label] for s in run.labeled])
        return _evaluation(chosen, y, run.labels, [s.key for s in run.labeled], run.warnings)

    def build_graph(self, run: Run):
        """The backbone, the views, the head and the "not sure" rule in one graph."""
        chosen, template = run.fitted, run.template
        views = tuple(chosen.config["views"])
        # "unlike anything it was trained on": references and a threshold from the first view's features
        with one_blas_thread():
            chosen.novelty = NoveltyReference().fit(run.data.by_view[views[0]])
        run.metrics["novelty"] = {
            "held_out_familiar": float(
                np.mean(chosen.novelty.held_out_similarity_ >= chosen.novelty.similarity_threshold_)
            )
        }
        backbone = get_backbone(template.backbone)
        graphs = FeatureCache(run.cache_dir).root / "graphs"
        return build_classifier_graph(backbone, template, chosen.head, views, graphs, novelty=chosen.novelty)

    def check_export(self, run: Run, model) -> None:
        chosen, template = run.fitted, run.template
        views, probe = tuple(chosen.config["views"]), chosen.eval_idx[:4]
        parity, vs_cache = check_parity(
            model,
            get_backbone(template.backbone),
            template,
            chosen.head,
            [run.labeled[i].path for i in probe],
            run.data.views(probe, views),
            views,
            FeatureCache(run.cache_dir).root / "graphs",
        )
        run.metrics["export_max_abs_diff"] = parity
        run.metrics["export_vs_training_features_max_abs_diff"] = vs_cache
        if parity > PARITY_TOLERANCE:
            raise RuntimeError(f"exported graph disagrees with the training path by {parity:.2e}")
        if vs_cache > CACHE_TOLERANCE:
            run.warnings.append(
                f"the features the model was trained on (device {run.device}) differ from the exported "
                f"model's on the CPU by up to {vs_cache:.1e} in probability"
            )

    def card_fields(self, run: Run) -> dict:
        chosen, template = run.fitted, run.template
        backbone = get_backbone(template.backbone)
        return {
            "preprocessing": backbone.spec.to_dict(),
            "backbone": backbone.key,
            "features": template.features.name,
            "features_output": FEATURES_OUTPUT,  # what compression re-fits a head on
            "views": list(chosen.config["views"]),
            "head": {
                "kind": chosen.config["head"],
                "params": make_head(template, chosen.config).get_params(),
            },
            "novelty": chosen.novelty.card(),  # the "not sure" rule; compression re-fits it with the head
            "input_name": backbone.input_name,
            "output_name": OUTPUT_NAME,
        }

    def training(self, run: Run) -> dict:
        return {**super().training(run), "final_fit": len(run.labeled)}

    def finish(self, run: Run, card: dict, artifact_dir: Path) -> None:
        metrics, template = run.metrics, run.template
        paths = {s.key: s.path for s in run.labeled}
        write_html_report(
            artifact_dir / "report.html",
            title=_report_title(template, metrics),
            metrics=metrics,
            mistakes=metrics["mistakes"],
            thumbnails={m["key"]: paths[m["key"]] for m in metrics["mistakes"]},
            model_card={
                "model": card["id"],
                "task": card["task"],
                "template": template.name,
                "backbone": card["backbone"],
                "images": card["training"]["samples"],
            },
        )
        CostModel(FeatureCache(run.cache_dir).root).record(
            _finish_key(template), "cpu", 1, 1, n_items=1, seconds=run.since("Exporting")
        )

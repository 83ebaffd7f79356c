"""The image tagging (multi-label) trainer: frozen backbone features, one sigmoid per tag.

Each tag's decision threshold is chosen on the validation split (best F1 for that tag); the card
carries the thresholds, so the predictor, the service and the bundle return the same tags.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np

from modeldesk.deploy.artifact import new_model_id, save_artifact
from modeldesk.deploy.graph import prune_unused
from modeldesk.errors import UserError
from modeldesk.trainers import heads
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.base import TaskTrainer, evaluation_split, split_counts
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.features import extract_feature_views
from modeldesk.trainers.image.classification import TrainResult, estimate_training
from modeldesk.trainers.image.graph import build_classifier_graph
from modeldesk.trainers.metrics import mean_average_precision, multilabel_report
from modeldesk.trainers.progress import stage_reporter
from modeldesk.trainers.templates import get_template
from modeldesk.trainers.versions import versions

DEFAULT_THRESHOLD = 0.5


def check_tag_samples(samples) -> tuple[list, list[str]]:
    """(tagged samples, sorted tags); UserError when they cannot teach anything."""
    tagged = [s for s in samples if s.target]
    if not tagged:
        raise UserError("none of the images has a tag: tag some images first")
    counts = Counter(tag for s in tagged for tag in set(s.target))
    if len(counts) < 2:
        (only,) = counts
        raise UserError(
            f"every tagged image has only the tag {only!r}: add a second tag, so the model "
            "sees images with and without each tag"
        )
    return tagged, sorted(counts)


def best_thresholds(Y: np.ndarray, proba: np.ndarray) -> np.ndarray:
    """Per column, the probability cut with the best F1 (0.5 where the column has no positive)."""
    thresholds = np.full(Y.shape[1], DEFAULT_THRESHOLD)
    for c in range(Y.shape[1]):
        positives = Y[:, c].sum()
        if positives == 0:
            continue
        best = -1.0
        for cut in np.unique(proba[:, c]):
            predicted = proba[:, c] >= cut
            tp = np.sum(predicted & (Y[:, c] == 1))
            f1 = 2 * tp / (predicted.sum() + positives)
            if f1 > best:
                best, thresholds[c] = f1, cut
        # halfway to the next lower score, so a slightly lower score on new images still counts
        lower = proba[:, c][proba[:, c] < thresholds[c]]
        if len(lower):
            thresholds[c] = (thresholds[c] + lower.max()) / 2
    return thresholds


class ImageMultilabelTrainer(TaskTrainer):
    """The image tagging task's trainer (see ``trainers.tasks.Trainer``)."""

    evaluator = "modeldesk.trainers.evaluation:evaluate_tags"

    def check(self, samples) -> None:
        check_tag_samples(samples)

    def estimate(
        self, samples, template, cache_dir, *, device: str = "auto", time_budget=None, cluster=None
    ) -> dict:
        return estimate_training(
            samples, template, cache_dir, device=device, time_budget=time_budget, cluster=cluster
        )

    def train(
        self,
        samples,
        template,
        out_dir,
        cache_dir,
        *,
        time_budget=None,
        device: str = "auto",
        progress=None,
        should_stop=None,
        model_id=None,
        cluster=None,
    ) -> TrainResult:
        """Extract features, fit one sigmoid per tag, pick thresholds on validation, evaluate, export."""
        started = time.monotonic()
        template = get_template(template)
        backbone = get_backbone(template.backbone)
        tagged, tags = check_tag_samples(samples)
        cache = FeatureCache(cache_dir)
        estimate = self.estimate(tagged, template, cache_dir, device=device, cluster=cluster)
        warnings: list[str] = []

        report = stage_reporter(started, estimate.get("eta_s"), progress, should_stop)

        extracted = extract_feature_views(
            backbone,
            [(s.key, s.path) for s in tagged],
            cache,
            views=("identity",),
            features=template.features,
            device=device,
            should_stop=should_stop,
            cluster=cluster,
            progress=lambda done, total: report("Extracting features", 0.8 * done / max(total, 1)),
        )
        result = extracted["identity"]
        index = {key: row for row, key in enumerate(result.keys)}
        tagged = [s for s in tagged if s.key in index]
        if not tagged:
            raise UserError(f"none of the images could be read (first: {result.skipped[0]['reason']})")
        if result.skipped:
            warnings.append(f"{len(result.skipped)} image(s) could not be read and were left out")
        X = result.features[[index[s.key] for s in tagged]]
        Y = np.array([[tag in s.target for tag in tags] for s in tagged], dtype=np.float64)
        split = np.array([s.split for s in tagged])
        train, val, test = (np.flatnonzero(split == name) for name in ("train", "val", "test"))
        if not len(train):
            train, val, test = np.arange(len(tagged)), np.array([], int), np.array([], int)
            warnings.append("no training split: every image was used for training")

        report("Training", 0.85)
        head = heads.SigmoidHead(**template.head_params).fit(X[train], Y[train])
        tune = val if len(val) else train
        if not len(val):
            warnings.append("no validation images: the tag thresholds were tuned on the training images")
        thresholds = best_thresholds(Y[tune], head.predict_proba(X[tune]))

        report("Evaluating", 0.93)
        evaluated, where = evaluation_split(test, val, train)
        proba = head.predict_proba(X[evaluated])
        metrics = multilabel_report(Y[evaluated].astype(int), proba, tags, thresholds)
        metrics.update(mean_average_precision(Y[evaluated], proba, tags))
        metrics["split"] = where

        report("Exporting", 0.97)
        model = build_classifier_graph(backbone, template, head, ("identity",), cache.root / "graphs")
        card = {
            "id": model_id or new_model_id(),
            "task": template.task,
            "target": "tags",
            "labels": tags,
            "thresholds": {tag: float(t) for tag, t in zip(tags, thresholds)},
            "preprocessing": backbone.spec.to_dict(),
            "template": template.name,
            "backbone": backbone.key,
            "features": template.features.name,
            "views": ["identity"],
            "head": {"kind": "sigmoid", "params": dict(template.head_params)},
            "metrics": metrics,
            "versions": versions(),
            "input_name": backbone.input_name,
            "output_name": "probabilities",
            "warnings": warnings,
            "training": {
                "samples": split_counts(train, val, test),
                "seconds": round(time.monotonic() - started, 2),
                "skipped": result.skipped,
            },
        }
        artifact_dir = save_artifact(out_dir, prune_unused(model), card)
        report("Done", 1.0, {"micro_f1": metrics["micro_f1"], "map": metrics["map"]})
        return TrainResult(
            artifact_dir=Path(artifact_dir),
            metrics=metrics,
            warnings=warnings,
            skipped=result.skipped,
            plan={
                **estimate["plan"],
                **(result.plan or {}),
                "eta_s": estimate["eta_s"],
                "actual_s": round(time.monotonic() - started, 2),
            },
        )

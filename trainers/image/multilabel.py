"""The image tagging (multi-label) trainer: frozen backbone features, one sigmoid per tag.

Each tag's decision threshold is chosen on the validation split (best F1 for that tag); the card
carries the thresholds, so the predictor, the service and the bundle return the same tags.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from modeldesk.errors import UserError
from modeldesk.trainers import heads
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.base import Run, TaskTrainer, evaluation_split, split_counts
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.features import extract_feature_views
from modeldesk.trainers.image.classification import ImageClassificationTrainer
from modeldesk.trainers.image.graph import build_classifier_graph
from modeldesk.trainers.metrics import mean_average_precision, multilabel_report

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


@dataclass
class _Tagged:
    """The features and tag matrix of the readable images, and the split they train, tune and test on."""

    X: np.ndarray
    Y: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


class ImageMultilabelTrainer(TaskTrainer):
    """The image tagging task's trainer (see ``trainers.tasks.Trainer`` and ``TaskTrainer.train``):
    one sigmoid per tag, thresholds picked on the validation images."""

    evaluator = "modeldesk.trainers.evaluation:evaluate_tags"
    target = "tags"
    train_options = {"cluster": None}

    def check(self, samples) -> None:
        check_tag_samples(samples)

    # the same backbone features as image classification, so the same plan and ETA
    estimate = ImageClassificationTrainer.estimate

    def prepare(self, run: Run, samples) -> tuple[list, list[str]]:
        return check_tag_samples(samples)

    def plan(self, run: Run) -> dict:
        return self.estimate(
            run.labeled, run.template, run.cache_dir, device=run.device, cluster=run.options["cluster"]
        )

    def features(self, run: Run) -> _Tagged:
        template = run.template
        result = extract_feature_views(
            get_backbone(template.backbone),
            [(s.key, s.path) for s in run.labeled],
            FeatureCache(run.cache_dir),
            views=("identity",),
            features=template.features,
            device=run.device,
            should_stop=run.should_stop,
            cluster=run.options["cluster"],
            progress=lambda done, total: run.report("Extracting features", 0.8 * done / max(total, 1)),
        )["identity"]
        index = {key: row for row, key in enumerate(result.keys)}
        tagged = [s for s in run.labeled if s.key in index]
        if not tagged:
            raise UserError(f"none of the images could be read (first: {result.skipped[0]['reason']})")
        run.skipped, run.extraction = result.skipped, result.plan or {}
        if result.skipped:
            run.warnings.append(f"{len(result.skipped)} image(s) could not be read and were left out")
        run.labeled = tagged
        split = np.array([s.split for s in tagged])
        train, val, test = (np.flatnonzero(split == name) for name in ("train", "val", "test"))
        if not len(train):
            train, val, test = np.arange(len(tagged)), np.array([], int), np.array([], int)
            run.warnings.append("no training split: every image was used for training")
        return _Tagged(
            X=result.features[[index[s.key] for s in tagged]],
            Y=np.array([[tag in s.target for tag in run.labels] for s in tagged], dtype=np.float64),
            train=train,
            val=val,
            test=test,
        )

    def fit(self, run: Run) -> tuple:
        """(the sigmoid head, each tag's threshold)."""
        run.report("Training", 0.85)
        d = run.data
        head = heads.SigmoidHead(**run.template.head_params).fit(d.X[d.train], d.Y[d.train])
        tune = d.val if len(d.val) else d.train
        if not len(d.val):
            run.warnings.append("no validation images: the tag thresholds were tuned on the training images")
        return head, best_thresholds(d.Y[tune], head.predict_proba(d.X[tune]))

    def measure(self, run: Run) -> dict:
        d, (head, thresholds) = run.data, run.fitted
        evaluated, where = evaluation_split(d.test, d.val, d.train)
        proba = head.predict_proba(d.X[evaluated])
        metrics = multilabel_report(d.Y[evaluated].astype(int), proba, run.labels, thresholds)
        metrics.update(mean_average_precision(d.Y[evaluated], proba, run.labels))
        metrics["split"] = where
        return metrics

    def build_graph(self, run: Run):
        backbone = get_backbone(run.template.backbone)
        graphs = FeatureCache(run.cache_dir).root / "graphs"
        return build_classifier_graph(backbone, run.template, run.fitted[0], ("identity",), graphs)

    def card_fields(self, run: Run) -> dict:
        template, backbone = run.template, get_backbone(run.template.backbone)
        return {
            "thresholds": {tag: float(t) for tag, t in zip(run.labels, run.fitted[1])},
            "preprocessing": backbone.spec.to_dict(),
            "backbone": backbone.key,
            "features": template.features.name,
            "views": ["identity"],
            "head": {"kind": "sigmoid", "params": dict(template.head_params)},
            "input_name": backbone.input_name,
            "output_name": "probabilities",
        }

    def sample_counts(self, run: Run) -> dict:
        return split_counts(run.data.train, run.data.val, run.data.test)

    def summary(self, metrics: dict) -> dict:
        return {"micro_f1": metrics["micro_f1"], "map": metrics["map"]}

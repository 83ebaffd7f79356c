"""The sound classification trainer: frozen speech embeddings pooled over time, a linear head, one graph.

Clips are decoded and resampled to 16 kHz by ``deploy.audio_input`` (the exported model's users run
the same module), turned into feature vectors by ``trainers.backbones.sound``'s graph (with augmented
copies of the training clips when there are few), a logistic regression head is tuned by
cross-validation and fitted, and the head is appended to the feature graph: ``model.onnx`` maps a
float32 16 kHz waveform (1, samples) straight to ``probabilities`` (1, classes).
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modeldesk.deploy.audio_input import AudioDecodeError, AudioSpec, load_waveform
from modeldesk.deploy.runtime import create_session
from modeldesk.errors import UserError
from modeldesk.trainers import heads
from modeldesk.trainers.backbones.sound import FEATURES, INPUT_NAME, MIN_SAMPLES, feature_nodes, make_model
from modeldesk.trainers.base import PARITY_TOLERANCE, Run, TaskTrainer, evaluation_split
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.label_samples import check_label_samples
from modeldesk.trainers.metrics import classification_report, most_confident_mistakes
from modeldesk.trainers.report import write_html_report
from modeldesk.trainers.sound.features import (
    PLAIN_VIEWS,
    SoundFeatureExtractor,
    estimate_seconds,
    noise_view,
    views_per_second,
)
from modeldesk.trainers.templates import get_template

OUTPUT_NAME = "probabilities"
BACKGROUND_WORDS = ("background", "noise", "silence")
#: the head's fits, in the priors' units (2 busy cores): seconds per clip and setting of the search (200
#: spoken digits x 3 settings took 0.3 s at probe slowdown 0.9, 2026-12-04), and the seconds of
#: evaluating, exporting and writing the model (0.1 s then)
FIT_S_PER_CLIP = 0.001
FIXED_S = 0.2


def is_background(label: str) -> bool:
    """Whether a class holds background sound (mixed into the other classes' augmented copies)."""
    return any(word in str(label).lower() for word in BACKGROUND_WORDS)


def check_clips(samples: Sequence) -> tuple[list, list[str], list[str]]:
    """(labeled clips, sorted labels, warnings); see ``trainers.label_samples``."""
    return check_label_samples(
        samples,
        "clip",
        one_class_hint="; record or import a second one (a "
        "'background' class of room noise is a good choice)",
    )


def _spec(template) -> AudioSpec:
    spec = AudioSpec(min_seconds=template.min_seconds, max_seconds=template.max_seconds)
    if spec.min_samples < MIN_SAMPLES:
        raise ValueError(f"template {template.name}: min_seconds must be at least {MIN_SAMPLES / 16000:.2f}")
    return spec


def plan_views(labeled, template) -> tuple[dict, list[str]]:
    """Views to compute per clip key, and the background clips' paths per noise view.

    Training clips get augmented views when the template asks for them (``"auto"``: when a class
    has fewer than ``augment_below`` training clips); every other clip only ``identity``.
    """
    train = [s for s in labeled if s.split == "train"]
    counts = Counter(s.label for s in train)
    augment = template.augment == "always" or (
        template.augment == "auto" and counts and min(counts.values()) < template.augment_below
    )
    backgrounds = sorted({s.key: s.path for s in train if is_background(s.label)}.items())
    views = {s.key: ("identity",) for s in labeled}
    if augment:
        for s in train:
            extra = list(PLAIN_VIEWS[1:])
            if backgrounds and not is_background(s.label):
                index = int(hashlib.sha1(s.key.encode()).hexdigest()[:8], 16) % len(backgrounds)
                extra.append(noise_view(backgrounds[index][0]))
            views[s.key] = ("identity", *extra)
    return views, [path for _, path in backgrounds] if augment else []


def _cv_score(template, l2, X_views, y, train_idx, folds) -> float:
    """Accuracy by stratified k-fold CV: fit on every view of the fold's training clips, score the
    identity view of its held-out ones (augmented copies never leak into a score)."""
    scores = []
    for fit, held in heads.stratified_folds(y[train_idx], folds):
        fit_idx, held_idx = train_idx[fit], train_idx[held]
        X, yy = _stack(X_views, fit_idx, y)
        head = heads.LogisticRegressionHead(**{**template.head_params, "l2": l2}).fit(X, yy)
        scores.append(np.mean(head.predict(X_views["identity"][held_idx]) == y[held_idx]))
    return float(np.mean(scores))


def _stack(X_views: dict, idx, y) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``idx`` in every view they have (NaN rows are views a clip does not have)."""
    rows, labels = [], []
    for X in X_views.values():
        part = X[idx]
        keep = ~np.isnan(part[:, 0])
        rows.append(part[keep])
        labels.append(y[idx][keep])
    return np.concatenate(rows), np.concatenate(labels)


def build_graph(template, head):
    """One graph: ``waveform`` (1, samples) -> backbone -> pooling -> head -> ``probabilities`` (1, C)."""
    nodes, inits = feature_nodes(template.features)
    h_nodes, h_inits = head.to_onnx(FEATURES, OUTPUT_NAME, prefix="head/")
    return make_model(
        nodes + h_nodes,
        inits + h_inits,
        [(OUTPUT_NAME, [1, len(head.classes_)])],
        "modeldesk_sound_classifier",
    )


@dataclass
class _Clips:
    """The readable clips' features per view (NaN rows: views a clip does not have), their classes and
    splits, and the clips and scores the metrics were measured on."""

    spec: AudioSpec
    backbone: str  # the feature cache namespace of the identity view
    views: dict  # views computed per clip key
    X_views: dict
    y: np.ndarray
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    eval_idx: np.ndarray | None = None
    eval_proba: np.ndarray | None = None


class SoundClassificationTrainer(TaskTrainer):
    """The sound classification task's trainer (see ``trainers.tasks.Trainer`` and ``TaskTrainer.train``)."""

    train_options = {"threads": 2}

    def check(self, samples) -> None:
        check_clips(samples)

    def estimate(
        self, samples, template, cache_dir, *, device: str = "auto", time_budget=None, threads: int = 2
    ) -> dict:
        template = get_template(template)
        labeled = [s for s in samples if s.label not in (None, "")]
        views, _ = plan_views(labeled, template)
        extractor = SoundFeatureExtractor(
            template.features, _spec(template), FeatureCache(cache_dir), device=device, threads=threads
        )
        todo = extractor.missing_count([(s.key, s.path, views[s.key]) for s in labeled])
        parts = {
            "features": estimate_seconds(extractor.cache, todo, device=device, threads=threads),
            "head": FIT_S_PER_CLIP * len(labeled) * len(template.search_space.get("l2", [0])),
            "export": FIXED_S,
        }
        eta = round(sum(parts.values()), 1)
        # the views' throughput: what scoring every clip for label suggestions reads by (app.run_time)
        rate = views_per_second(extractor.cache, device=device, threads=threads)
        return {
            "eta_s": eta,
            "plan": {
                "devices": [{"name": device, "threads": threads, "items_per_s": round(rate, 1)}],
                "eta_s": eta,
                "features_to_compute": todo,
                "seconds": {k: round(v, 2) for k, v in parts.items()},
            },
        }

    def prepare(self, run: Run, samples) -> tuple[list, list[str]]:
        labeled, labels, warnings = check_clips(samples)
        run.warnings += warnings
        return labeled, labels

    def plan(self, run: Run) -> dict:
        return self.estimate(
            run.labeled, run.template, run.cache_dir, device=run.device, threads=run.options["threads"]
        )

    def features(self, run: Run) -> _Clips:
        """Features of every clip and view (0 .. 0.75)."""
        template, spec, threads = run.template, _spec(run.template), run.options["threads"]
        views, background_paths = plan_views(run.labeled, template)
        backgrounds = {}
        for path, key in ((s.path, s.key) for s in run.labeled if s.path in background_paths):
            try:
                backgrounds[noise_view(key)] = load_waveform(path, spec)
            except AudioDecodeError:
                pass
        views = {
            k: tuple(v for v in vs if not v.startswith("noise-") or v in backgrounds)
            for k, vs in views.items()
        }
        extractor = SoundFeatureExtractor(
            template.features, spec, FeatureCache(run.cache_dir), device=run.device, threads=threads
        )
        result = extractor.extract(
            [(s.key, s.path, views[s.key]) for s in run.labeled],
            backgrounds=backgrounds,
            should_stop=run.should_stop,
            progress=lambda d, t: run.report("Listening to the clips", 0.75 * d / max(t, 1)),
        )
        good = set(result.keys)
        labeled = [s for s in run.labeled if s.key in good]
        if not labeled:
            raise UserError(f"none of the clips could be read (first: {result.skipped[0]['reason']})")
        run.skipped = result.skipped
        if result.skipped:
            run.warnings.append(f"{len(result.skipped)} clip(s) could not be read and were left out")
            labeled, run.labels, more = check_clips(labeled)
            run.warnings += [w for w in more if w not in run.warnings]
        run.labeled = labeled
        index = {label: i for i, label in enumerate(run.labels)}
        X_views = {}
        for view, vectors in result.by_view.items():
            X = np.full((len(labeled), template.features.dim), np.nan, np.float32)
            for row, s in enumerate(labeled):
                if s.key in vectors:
                    X[row] = vectors[s.key]
            X_views[view] = X
        split = np.array([s.split for s in labeled])
        train_idx, val_idx, test_idx = (np.flatnonzero(split == name) for name in ("train", "val", "test"))
        return _Clips(
            spec=spec,
            backbone=extractor.namespace("identity")[0],
            views=views,
            X_views=X_views,
            y=np.array([index[s.label] for s in labeled]),
            train_idx=train_idx,
            val_idx=val_idx,
            test_idx=test_idx,
        )

    def fit(self, run: Run) -> tuple:
        """(the head, its L2 penalty, the search's trials): the penalty by cross-validation on the
        training clips (0.75 .. 0.9); then, after a search, the head refitted on training and validation
        clips with the chosen setting, without one early-stopped on the validation clips (0.9)."""
        template, d = run.template, run.data
        X_views, y, train_idx, val_idx = d.X_views, d.y, d.train_idx, d.val_idx
        grid = list(template.search_space.get("l2", [])) or [template.head_params.get("l2", 1e-2)]
        folds = heads.usable_folds(y[train_idx], template.cv_folds)
        trials, best_l2 = [], grid[0]
        if len(grid) > 1 and folds >= 2:
            deadline = run.deadline(0.8)
            for i, l2 in enumerate(grid):
                if trials and time.monotonic() > deadline:
                    run.warnings.append("the time budget ran out before every setting was tried")
                    break
                trials.append(
                    {
                        "params": {"l2": l2},
                        "cv_accuracy": _cv_score(template, l2, X_views, y, train_idx, folds),
                    }
                )
                run.report(
                    "Tuning",
                    0.75 + 0.15 * (i + 1) / len(grid),
                    {"cv_accuracy": max(t["cv_accuracy"] for t in trials)},
                )
            best_l2 = max(trials, key=lambda t: t["cv_accuracy"])["params"]["l2"]  # ties keep the first

        run.report("Training", 0.9)
        head = heads.LogisticRegressionHead(**{**template.head_params, "l2": best_l2})
        X_fit, y_fit = _stack(X_views, train_idx, y)
        if trials and len(val_idx):
            X_fit = np.concatenate([X_fit, X_views["identity"][val_idx]])
            y_fit = np.concatenate([y_fit, y[val_idx]])
            head.fit(X_fit, y_fit)
        elif len(val_idx) and len(np.unique(y[val_idx])) > 1 and set(y[val_idx]) <= set(y_fit):
            head.fit(X_fit, y_fit, X_views["identity"][val_idx], y[val_idx])
        else:
            head.fit(X_fit, y_fit)
        return head, best_l2, trials

    def measure(self, run: Run) -> dict:
        """The test clips, else the validation clips, else the training clips."""
        d, (head, best_l2, trials) = run.data, run.fitted
        eval_idx, eval_split = evaluation_split(
            d.test_idx,
            d.val_idx,
            d.train_idx,
            run.warnings,
            "no validation or test clips: the metrics are measured on the training clips",
        )
        proba = head.predict_proba(d.X_views["identity"][eval_idx])
        d.eval_idx, d.eval_proba = eval_idx, proba
        metrics = classification_report(d.y[eval_idx], proba, run.labels)
        metrics["split"] = eval_split
        metrics["mistakes"] = most_confident_mistakes(
            d.y[eval_idx], proba, [run.labeled[i].key for i in eval_idx], run.labels
        )
        if trials:
            metrics["search"] = {"trials": trials, "best": {"params": {"l2": best_l2}}}
        metrics["augmented_views"] = sorted({v for vs in d.views.values() for v in vs} - {"identity"})
        return metrics

    def build_graph(self, run: Run):
        return build_graph(run.template, run.fitted[0])

    def check_export(self, run: Run, model) -> None:
        """The graph against the training path on a few clips."""
        d = run.data
        session = create_session(model.SerializeToString(), device="cpu")
        check = d.eval_idx[:4]
        exported = (
            np.concatenate(
                [
                    session.run(
                        [OUTPUT_NAME], {INPUT_NAME: load_waveform(run.labeled[i].path, d.spec)[None]}
                    )[0]
                    for i in check
                ]
            )
            if len(check)
            else np.zeros((0, len(run.labels)))
        )
        parity = float(np.abs(exported - d.eval_proba[: len(check)]).max()) if len(check) else 0.0
        run.metrics["export_vs_training_features_max_abs_diff"] = parity
        if parity > PARITY_TOLERANCE and run.device in ("auto", "cpu"):
            raise RuntimeError(f"exported graph disagrees with the training path by {parity:.2e}")

    def card_fields(self, run: Run) -> dict:
        template = run.template
        return {
            "preprocessing": run.data.spec.to_dict(),
            "backbone": run.data.backbone,
            "features": template.features.name,
            "views": ["identity"],
            "head": {"kind": "logistic", "params": {**template.head_params, "l2": run.fitted[1]}},
            "input_name": INPUT_NAME,
            "output_name": OUTPUT_NAME,
        }

    def finish(self, run: Run, card: dict, artifact_dir: Path) -> None:
        write_html_report(
            artifact_dir / "report.html",
            title=f"Model {card['id']}",
            metrics=run.metrics,
            mistakes=run.metrics["mistakes"],
            model_card={
                "task": card["task"],
                "template": run.template.name,
                "clips": card["training"]["samples"],
            },
            noun="clips",
        )

"""The anomaly detection trainer: learn "normal" from good photos only, choose the threshold, export.

Good photos of the train split fill the model of normal (a coreset memory bank of their patch features,
or one Gaussian over them); good photos held out (the validation split, else every fifth training one)
set the threshold at the false-alarm rate the template allows; labeled defect photos are never
learned from, only used to measure. The exported graph is evaluated through the predictor, as users
run it, and its scores are checked against the ones training computed from the cached maps.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modeldesk.errors import UserError
from modeldesk.trainers.anomaly.bank import MAX_POOL
from modeldesk.trainers.anomaly.crossfit import (
    FOLDS,
    FOLDS_END,
    MIN_BANK,
    NormalFitter,
    fold_numbers,
    out_of_fold_scores,
)
from modeldesk.trainers.anomaly.evaluation import evaluate_anomaly, is_good, predict_scores
from modeldesk.trainers.anomaly.features import PatchComputer, extract_maps, weighted_projection
from modeldesk.trainers.anomaly.graph import (
    FLAG_OUTPUT,
    GRID_OUTPUT,
    HEATMAP_OUTPUT,
    SCORE_OUTPUT,
    SIZE_INPUT,
    SIZES_OUTPUT,
    build_anomaly_graph,
    scoring_model,
)
from modeldesk.trainers.anomaly.scoring import (
    auroc,
    false_alarm_plan,
    false_alarm_threshold,
    promise_sentence,
)
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.base import Run, TaskTrainer
from modeldesk.trainers.detection.features import maps_feature_spec
from modeldesk.trainers.features import plan_feature_extraction, staged_estimate
from modeldesk.trainers.templates import get_template

log = logging.getLogger(__name__)

SECONDS_PER_IMAGE = 0.02  # backbone at 256 px on a CPU, before anything was measured here
#: seconds per million (pool row x bank row) steps of the greedy search, in the priors' units: since the
#: search measures distances in SEARCH_DIM dimensions, 40,000 x 4,000 takes 0.85 s at probe slowdown 1.24
#: (0.005 s a million; 0.006 in those units, 2026-12-04)
CORESET_S_PER_MILLION = 0.006
#: a Gaussian per patch position, fitted batch by batch, in the priors' units: 0.31 s for 50 tiles at probe
#: slowdown 0.93 (bench/estimates.py --stages, 2026-12-04; it was left out: 0 s planned)
POSITION_GAUSSIAN_S_PER_PHOTO = 0.01
#: choosing the threshold, exporting and setting up the evaluation, in the priors' units: with 0.01 s a
#: photo evaluated, 0.5-0.9 s for 50 tiles at probe slowdown 0.93 (0.8-1.4 s in those units; 2026-12-04)
FIXED_S = 1.0
#: the same for a per-position Gaussian, whose evaluation is a product, not a search: 0.36 s for 50 tiles
#: on a quiet machine (0.5 s in those units, of which 0.01 s a photo; 2026-12-04)
GAUSSIAN_FIXED_S = 0.3
#: the cross-fitted threshold (``crossfit``), in the priors' units: a fold's per-position Gaussian
#: whitened (Cholesky, 1024 x 48 x 48: 0.13 s on the loaded 2-core machine, 2026-12-04) and each bank
#: photo scored once more by its fold's model (as the export's 0.01 s a photo evaluated)
FOLD_WHITENING_S = 0.1  # 5 folds and 50 tiles' scores took 0.86 s in those units on a quiet machine
OUT_OF_FOLD_S_PER_PHOTO = 0.01
#: the folds' running sums of a per-position Gaussian may take this much memory (the fast template's: 90 MiB)
MAX_FOLD_BYTES = 512 << 20
PARITY_TOLERANCE = 1e-3  # relative: the exported graph's scores against training's
CROSS_FIT_STAGE = "Checking the threshold on every good photo"
NO_HELD_OUT = (
    "too few good photos to hold some back: the threshold was set on the training photos, "
    "so it will raise more false alarms than planned"
)


def split_roles(samples) -> tuple[list, list, list, list[str]]:
    """(bank goods, threshold goods, photos to measure on, warnings) from the labeled samples."""
    goods = [s for s in samples if is_good(s.target)]
    defects = [s for s in samples if not is_good(s.target)]
    warnings = []
    bank = [s for s in goods if s.split == "train"]
    held = [s for s in goods if s.split == "val"]
    test_goods = [s for s in goods if s.split == "test"]
    if not bank:
        bank, held, test_goods = goods, [], []
    if not held and len(bank) >= 5:
        # every fifth training photo by content hash, so the choice is stable across runs
        held = [s for s in bank if int(hashlib.sha1(s.key.encode()).hexdigest()[:8], 16) % 5 == 0]
        bank = [s for s in bank if s not in held]
    if not held:
        held = list(bank)
        warnings.append(NO_HELD_OUT)
    if defects and not test_goods:
        test_goods = held
        warnings.append(
            "no good photos in the test split: false alarms were counted on the photos that set the "
            "threshold, so they look rarer than they will be"
        )
    return bank, held, test_goods + defects, warnings


@dataclass
class _Photos:
    """The readable photos' cached feature maps (a row per key) and the photos of each role."""

    backbone: object
    cache: object  # the workspace's FeatureCache (the backbone's graph is kept beside it)
    features: np.ndarray
    row: dict  # sample key -> row of ``features``
    usable: list
    bank: list  # good photos the model of normal is fitted on
    held: list  # good photos that set the threshold
    measured: list  # photos the metrics are measured on (may be empty)

    def maps_of(self, chosen) -> np.ndarray:
        return self.features[[self.row[s.key] for s in chosen]]


@dataclass
class _Normal:
    """The fitted model of normal, training's scorer and the threshold chosen with it."""

    projection: np.ndarray | None
    normal: dict  # {"bank"} or {"mean", "whiten"}
    scorer: _Scorer
    threshold: float
    heat_range: list
    promise: dict  # the false-alarm rate the threshold can promise (``scoring.false_alarm_plan``)
    threshold_photos: dict  # the good photos that set the threshold, by kind, and the folds' seconds
    scores: dict  # {"held": the held-out photos' scores, "out_of_fold": the bank's (aligned) or None}


class AnomalyDetectionTrainer(TaskTrainer):
    """The anomaly detection task's trainer (see ``trainers.tasks.Trainer`` and ``TaskTrainer.train``):
    extract maps, fit the model of normal, choose the threshold, export, evaluate the graph."""

    evaluator = "modeldesk.trainers.anomaly.evaluation:evaluate_anomaly"
    target = "anomaly"
    #: ``defect_masks``: sample key -> defect mask (a file or an (H, W) bool array), the project's stored
    #: masks: the pixel AUROC is measured with the rest and saved
    train_options = {"cluster": None, "defect_masks": None}
    evaluates_export = True

    def check(self, samples) -> None:
        goods = [s for s in samples if s.target is not None and is_good(s.target)]
        if len(goods) < 2:
            raise UserError(
                "anomaly detection learns from photos of good parts: label at least 2 photos 'good' "
                "(import a folder named good/, or on the Label page click good or press the number key "
                "shown beside it)"
            )

    def estimate(self, samples, template, cache_dir, *, device: str = "auto", time_budget=None) -> dict:
        from modeldesk.trainers.feature_cache import FeatureCache

        template = get_template(template)
        backbone = get_backbone(template.backbone)
        cache = FeatureCache(cache_dir)
        keys = [s.key for s in samples if s.target is not None]
        missing = cache.missing((backbone.key, template.neck.maps_name, "identity"), keys)
        plan = plan_feature_extraction(
            backbone,
            len(missing),
            cache,
            views=("identity",),
            features=maps_feature_spec(template.neck),
            device=device,
            batch_size=16,
        )
        features_s = plan.eta_s if plan.eta_s is not None else len(missing) * SECONDS_PER_IMAGE
        fit_s = folds_s = 0.0
        if template.method == "memory-bank":
            patches = len(keys) * template.neck.grid**2
            pool = min(MAX_POOL, patches)
            bank = min(template.bank_size, max(1000, int(template.coreset_share * patches)), pool)
            fit_s = pool * bank / 1e6 * CORESET_S_PER_MILLION
            # a fold searches 4/5 of the pool for 4/5 of the bank (``crossfit.NormalFitter``)
            folds_s = FOLDS * ((FOLDS - 1) / FOLDS) ** 2 * fit_s
        elif template.method == "position-gaussian":
            fit_s = len(keys) * POSITION_GAUSSIAN_S_PER_PHOTO
            folds_s = FOLDS * FOLD_WHITENING_S
        budget = float(time_budget or template.time_budget_s)
        parts = {
            "features": features_s,
            "bank": min(fit_s, 0.7 * budget),
            "export": 0.01 * len(keys)
            + (GAUSSIAN_FIXED_S if template.method == "position-gaussian" else FIXED_S),
        }
        if len(keys) >= MIN_BANK:  # each bank photo scored again, by its fold's model; cut at FOLDS_END
            folds_s += OUT_OF_FOLD_S_PER_PHOTO * len(keys)
            parts["threshold folds"] = min(folds_s, max(FOLDS_END * budget - features_s - parts["bank"], 0.0))
        return staged_estimate(plan, parts, len(missing))

    def evaluate(self, artifact_path, samples, *, progress=None, masks=None) -> dict:
        return evaluate_anomaly(artifact_path, samples, progress=progress, masks=masks)

    def prepare(self, run: Run, samples) -> tuple[list, list[str]]:
        labeled = [s for s in samples if s.target is not None]
        self.check(labeled)
        return labeled, ["good", "defect"]

    def features(self, run: Run) -> _Photos:
        """The readable photos' feature maps (0 .. 0.6) and their roles (see ``split_roles``)."""
        from modeldesk.trainers.feature_cache import FeatureCache

        template = run.template
        backbone = get_backbone(template.backbone)
        cache = FeatureCache(run.cache_dir)
        readable = run.readable_photos()
        extracted = extract_maps(
            backbone,
            template.neck,
            [(s.key, s.path) for s in readable],
            cache,
            device=run.device,
            should_stop=run.should_stop,
            progress=lambda done, total: run.report("Extracting features", 0.6 * done / max(total, 1)),
        )["identity"]
        run.skipped += extracted.skipped
        run.extraction = extracted.plan or {}
        row = {key: r for r, key in enumerate(extracted.keys)}
        usable = [s for s in readable if s.key in row]
        if run.skipped:
            run.warnings.append(f"{len(run.skipped)} photo(s) could not be read and were left out")
        bank, held, measured, notes = split_roles(usable)
        run.warnings += notes
        if len(bank) < 1:
            raise UserError("none of the good photos could be read")
        return _Photos(backbone, cache, extracted.features, row, usable, bank, held, measured)

    def fit(self, run: Run) -> _Normal:
        """The model of normal on every bank photo (0.6 .. 0.72), each bank photo's score against a model
        fitted without its fold (.. 0.85, ``crossfit``), then the threshold on those and the held-out
        good photos' scores (the held-out ones alone when the time budget runs out first)."""
        template, photos = run.template, run.data
        run.report("Learning the good parts", 0.62)
        dim = template.neck.dim(photos.backbone)
        first = photos.backbone.outputs[template.neck.levels[0]]  # the finest map's channels come first
        projection = weighted_projection(dim, template.projection, first, template.stride8_weight)
        width = dim if projection is None else projection.shape[1]
        computer = PatchComputer(template.neck, photos.backbone, projection)
        folds = fold_numbers([s.key for s in photos.bank])
        sums = FOLDS * template.neck.grid**2 * width**2 * 8  # a per-position Gaussian's running sums per fold
        if folds is not None and template.method == "position-gaussian" and sums > MAX_FOLD_BYTES:
            folds = None
            run.warnings.append(
                f"a Gaussian per spot in {width} dimensions is too large to fit {FOLDS} times in memory: "
                f"the held-back good photos alone set the threshold"
            )
        fitter = NormalFitter(
            template,
            computer,
            photos.maps_of,
            photos.bank,
            np.zeros(len(photos.bank), int) if folds is None else folds,
        )
        normal, notes = fitter.fit(np.random.default_rng(0), deadline=run.deadline(0.8))
        run.warnings += notes
        scorer = _Scorer(template, normal, width, computer)
        out_of_fold, started = None, time.monotonic()
        if folds is not None:
            out_of_fold = out_of_fold_scores(
                fitter,
                photos.bank,
                lambda fold_normal, chosen: _Scorer(template, fold_normal, width, computer)(
                    photos.maps_of(chosen)
                )[0],
                deadline=run.deadline(FOLDS_END),
                report=lambda done, total: run.report(CROSS_FIT_STAGE, 0.72 + 0.12 * done / total),
            )
        folds_s = round(time.monotonic() - started, 2)
        run.report("Choosing the threshold", 0.85)
        held_scores, held_grids = scorer(photos.maps_of(photos.held))
        # photos of the bank itself (too few good ones to hold some back) promise nothing
        banked = {s.key for s in photos.bank}
        unseen = held_scores[[s.key not in banked for s in photos.held]]
        if out_of_fold is not None:
            threshold_scores = np.concatenate([out_of_fold, unseen])
            if NO_HELD_OUT in run.warnings:  # every bank photo was scored out of fold instead
                run.warnings.remove(NO_HELD_OUT)
        else:
            threshold_scores = held_scores if not len(unseen) else unseen
            if folds is not None:
                run.warnings.append(
                    f"the time budget ran out before every good photo could be checked by a model that "
                    f"had not learned from it: the threshold was set on the {len(unseen)} held-back good "
                    f"photos alone (with a longer time budget all {len(unseen) + len(photos.bank)} set it)"
                )
        threshold = false_alarm_threshold(threshold_scores, template.false_alarm_rate)
        checked = 0 if out_of_fold is None else len(out_of_fold)
        promise = {
            **false_alarm_plan(len(unseen) + checked, template.false_alarm_rate),
            "held": len(unseen),
            "out_of_fold": checked,
        }
        if promise["promised"] > promise["asked"]:
            run.warnings.append(promise_sentence(promise))
        photos_used = {
            "held": len(unseen),
            "out_of_fold": checked,
            "folds": FOLDS if out_of_fold is not None else 0,
            "seconds": folds_s,
            # the crossfit module's check: 0.5 or more when out-of-fold scores run at or above the final
            # model's scores of photos it never saw
            "out_of_fold_above_held": (
                auroc([True] * checked + [False] * len(unseen), threshold_scores) if checked else None
            ),
        }
        # a defect's heat is full at the threshold; the usual patch of a good photo is no heat at all
        low = float(np.median(held_grids))
        return _Normal(
            projection,
            normal,
            scorer,
            threshold,
            [low, max(threshold, low + 1e-6)],
            promise,
            photos_used,
            {"held": held_scores, "out_of_fold": out_of_fold},
        )

    def build_graph(self, run: Run):
        template, photos, fitted = run.template, run.data, run.fitted
        return build_anomaly_graph(
            photos.backbone,
            template.neck,
            fitted.projection,
            fitted.normal,
            template.top_k,
            fitted.threshold,
            photos.cache.root / "graphs",
            template.score_border,
            sigma=template.smooth_sigma,
        )

    def card_fields(self, run: Run) -> dict:
        template, photos, fitted = run.template, run.data, run.fitted
        return {
            "defect_kinds": sorted({str(s.target) for s in photos.usable if not is_good(s.target)}),
            "preprocessing": template.neck.spec.to_dict(),
            "backbone": photos.backbone.key,
            "method": template.method,
            "bank_patches": len(fitted.normal["bank"]) if "bank" in fitted.normal else None,
            "threshold": float(fitted.threshold),
            "false_alarm_rate_planned": template.false_alarm_rate,
            "false_alarm_promise": fitted.promise,
            "threshold_photos": fitted.threshold_photos,
            "heatmap_range": fitted.heat_range,
            "input_name": photos.backbone.input_name,
            "size_input": SIZE_INPUT,
            "output_name": SCORE_OUTPUT,
            "flag_output": FLAG_OUTPUT,
            "heatmap_output": HEATMAP_OUTPUT,
            "sizes_output": SIZES_OUTPUT,
        }

    def measure_export(self, run: Run, artifact_dir: Path) -> dict:
        """The saved graph on the test photos (else the held-out good ones), through the predictor, and
        its scores against the ones training computes from the cached maps (a warning past
        ``PARITY_TOLERANCE``)."""
        photos = run.data
        where = "test" if photos.measured else "held-out good"
        chosen = photos.measured or photos.held
        metrics = evaluate_anomaly(artifact_dir, chosen, masks=run.options.get("defect_masks"))
        metrics["split"] = where
        if not any(not is_good(s.target) for s in photos.usable):
            run.warnings.append(
                "no defect photos were labeled: the catch rate could not be measured, only false alarms"
            )
        app_scores, _ = run.fitted.scorer(photos.maps_of(chosen[:8]))
        graph_scores = np.array([r["score"] for r in predict_scores(artifact_dir, chosen[:8])])
        metrics["export_max_rel_diff"] = float(
            np.max(np.abs(app_scores - graph_scores) / np.maximum(np.abs(app_scores), 1e-6))
        )
        if metrics["export_max_rel_diff"] > PARITY_TOLERANCE:
            run.warnings.append(
                f"the exported graph's scores differ from training's by up to "
                f"{100 * metrics['export_max_rel_diff']:.2f}%"
            )
        metrics["held_out_good"] = len(photos.held)
        return metrics

    def sample_counts(self, run: Run) -> dict:
        """The good photos of the bank and of the threshold, and the photos measured on."""
        photos = run.data
        return {
            "bank": len(photos.bank),
            "threshold": len(photos.held),
            "measured": len(photos.measured or photos.held),
        }

    def summary(self, metrics: dict) -> dict:
        return {"auroc": metrics.get("auroc"), "catch_rate": metrics.get("catch_rate")}


class _Scorer:
    """Training's scorer: cached maps -> patches -> the scoring nodes of the exported graph."""

    def __init__(self, template, normal, dim, computer):
        from modeldesk.deploy.runtime import create_session

        self.computer = computer
        model = scoring_model(
            template.neck,
            int(dim),
            normal,
            template.top_k,
            0.0,
            template.score_border,
            sigma=template.smooth_sigma,
        )
        self.session = create_session(model.SerializeToString(), device="cpu")

    def __call__(self, flat, batch: int = 8) -> tuple[np.ndarray, np.ndarray]:
        scores, grids = [], []
        for start in range(0, len(flat), batch):
            patches = self.computer(flat[start : start + batch])
            score, grid = self.session.run([SCORE_OUTPUT, GRID_OUTPUT], {"patches": patches})
            scores.append(score), grids.append(grid)
        if not scores:
            return np.zeros(0, np.float32), np.zeros((0, 1, 1), np.float32)
        return np.concatenate(scores), np.concatenate(grids)

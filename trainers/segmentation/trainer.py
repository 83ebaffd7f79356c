"""The segmentation trainer: a class for every pixel, learned on the frozen backbone's stride maps.

The backbone's maps of every photo (and its mirror image) are cached; the neck brings them to one
grid of per-pixel features; a head (1x1 convolutions, fitted with numpy on grid points sampled from
the training photos, rare classes drawn more often) says each point's class; the logits are resized
to the photo's size. The head stops training where the held-out photos' loss is lowest (the
validation split, else the last frames of each sequence of training photos, since neighbouring frames
look alike); the test split is then measured through the exported graph, as users run it, with
intervals over photos. Memory stays bounded: the head sees at most ``template.rows`` points, the
graph one photo at a time at a fixed input size.
"""

from __future__ import annotations

import logging
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from modeldesk.deploy.mask_output import slot_color
from modeldesk.deploy.mask_tiles import blend_tiles, grid_to_mask, tile_tensor
from modeldesk.deploy.preprocess import image_size, image_to_tensor, load_image
from modeldesk.deploy.runtime import create_session
from modeldesk.errors import UserError
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.base import Run, TaskTrainer
from modeldesk.trainers.detection.features import maps_feature_spec
from modeldesk.trainers.features import plan_feature_extraction, staged_estimate
from modeldesk.trainers.heads.linear import LogisticRegressionHead
from modeldesk.trainers.heads.mlp import MLPHead
from modeldesk.trainers.segmentation.calibration import class_offsets, with_offsets
from modeldesk.trainers.segmentation.evaluation import confusion, evaluate_segmentation, mean_iou, truth_mask
from modeldesk.trainers.segmentation.features import FeatureGrid, edge_points, extract_maps, label_grid
from modeldesk.trainers.segmentation.graph import (
    IMAGE,
    LOGITS,
    MASK_OUTPUT,
    SCALED,
    SCORES_OUTPUT,
    SIZE_INPUT,
    build_segmentation_graph,
    head_layers,
    head_logits,
    mean_of_scales,
    scale_model,
    tail_model,
)
from modeldesk.trainers.segmentation.tiles import TILES, TiledPhotos, unit_keys
from modeldesk.trainers.templates import get_template

log = logging.getLogger(__name__)

#: the backbone at 512 px on a CPU, before anything was measured here, in the priors' units: 40 views of
#: 20 CamVid photos took 3.7 s at 512 px and 5.2 s at 640 px at probe slowdown 2.0 (2.9 and 4.1 s in
#: those units; 2026-12-04)
SECONDS_PER_IMAGE = 0.07
FLOPS = 4e9  # numpy's multiply-adds per second in the head's fit, until measured here (``measured_flops``)
HELD_SHARE = 0.15  # of each sequence's training frames, when there is no validation split
PARITY_AGREEMENT = 0.999  # share of pixels the exported graph's masks must share with training's
VAL_ROWS = 20_000
#: the head's multiply-adds a second, for the estimate, in the priors' units (app.calibration): 20 CamVid
#: photos, 2026-12-04, load 4 (slowdown 1.27 in those units): a fast pass over the points (3.6e10) took
#: 1.56 s, an accurate one (3.1e10) 1.34 s, and the accurate recipe's principal directions (1.9e11) 4.0 s
ESTIMATE_FLOPS = 3.0e10
#: the share of its passes a head makes: patience stops it early (6 of 25 in every run above)
PASSES_SHARE = 0.25
#: choosing the points: seconds per photo and view at a 64 x 64 grid, in the priors' units (1.9 s for
#: 20 photos mirrored at 64 x 64, 2.5 s at 80 x 80, 2026-12-04)
ROWS_S = 0.045
#: the held-out check and the export, in the priors' units: 0.3-1.6 s at probe slowdown 0.93 (2026-12-04)
EXPORT_S = 1.5


_MEASURED: list[float] = []


def measured_flops() -> float:
    """Multiply-adds per second numpy does here now, on the head's kind of matrices (measured once per
    process in about 0.1 s: a busy or slow machine gets an ETA to match)."""
    if not _MEASURED:
        rng = np.random.default_rng(0)
        a, b = rng.random((512, 256), np.float32), rng.random((256, 256), np.float32)
        started, rounds = time.perf_counter(), 0
        while time.perf_counter() - started < 0.1:
            a @ b
            rounds += 1
        rate = rounds * 512 * 256 * 256 * 2 / (time.perf_counter() - started)
        _MEASURED.append(min(max(rate, 1e8), 4 * FLOPS))
    return _MEASURED[0]


def _sequence(source: str) -> str:
    """The sequence a frame belongs to: its file name without the trailing frame number."""
    return re.sub(r"\d+$", "", Path(source).stem)


def _name(sample) -> str:
    return getattr(sample, "name", "") or sample.source


def split_roles(samples) -> tuple[list, list, list, list[str]]:
    """(train, held-out for stopping, test, warnings). Without a validation split, the last frames of
    each sequence of training photos are held out (contiguous, not at random: neighbours look alike)."""
    train = [s for s in samples if s.split == "train"]
    val = [s for s in samples if s.split == "val"]
    test = [s for s in samples if s.split == "test"]
    warnings = []
    if not train:
        train, val = val, []
    if not test and val:
        test, val = val, []
        warnings.append("no test split: the validation photos measure the model, the training photos stop it")
    if not val:
        groups = defaultdict(list)
        for s in sorted(train, key=_name):
            groups[_sequence(_name(s))].append(s)
        for frames in groups.values():
            k = int(round(HELD_SHARE * len(frames)))
            if len(frames) >= 4 and k:
                val += frames[-k:]
        if not val and len(train) >= 3:
            val = sorted(train, key=_name)[-1:]
        held = {s.key for s in val}
        train = [s for s in train if s.key not in held] or train
    if not test:
        test = val or train
        warnings.append(
            "no photos were left to test on: the metrics come from photos the training saw or stopped on, "
            "so they are optimistic"
        )
    return train, val, test, warnings


def principal_directions(X: np.ndarray, k: int, sample: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """(mean (D,), directions (D, k)): the ``k`` main directions of the rows of ``X`` (PCA)."""
    rows = X[np.linspace(0, len(X) - 1, min(sample, len(X))).astype(np.int64)].astype(np.float64)
    mean = rows.mean(axis=0)
    values, vectors = np.linalg.eigh(np.cov(rows - mean, rowvar=False))
    return mean.astype(np.float32), np.ascontiguousarray(vectors[:, ::-1][:, :k], np.float32)


def project(X: np.ndarray, projection) -> np.ndarray:
    mean, directions = projection
    out = np.empty((len(X), directions.shape[1]), np.float32)
    for start in range(0, len(X), 8192):
        out[start : start + 8192] = (X[start : start + 8192] - mean) @ directions
    return out


def fold_projection(layers: list, projection) -> list:
    """The head's layers with the projection folded into the first: ``(x - m) P W + b = x (P W) + (b - m P W)``."""
    if projection is None:
        return layers
    mean, directions = (np.asarray(a, np.float64) for a in projection)
    W, b = layers[0]
    return [(directions @ W, b - (mean @ directions) @ W), *layers[1:]]


@dataclass
class _Photos:
    """The readable photos' cached maps per view, the neck that makes their grids, and their roles."""

    backbone: object
    cache: object  # the workspace's FeatureCache (the backbone's graph is kept beside it)
    extracted: dict  # view -> the extraction's result (``features``, ``keys``)
    rows_of: dict  # view -> {sample key: row of that view's features}
    grid: FeatureGrid
    train: list
    held: list  # photos the head's training stops on
    test: list  # photos the metrics are measured on
    tiles: TiledPhotos | None = None  # the large photos' tiles (``tiles.py``)

    def features(self, sample, view: str = "identity") -> np.ndarray:
        """One photo's (or tile's) per-pixel features at the model's grid, from its cached maps."""
        result = self.extracted[view]
        return self.grid(result.features[[self.rows_of[view][sample.key]]])[0]

    def units(self, samples) -> list:
        """The photos, each large one replaced by its tiles (what the head's rows are drawn from)."""
        return self.tiles.units(samples) if self.tiles is not None else list(samples)


@dataclass
class _Fitted:
    """The head's layers (the projection folded in), the graph's tails, and the held-out check."""

    layers: list
    tails: dict  # refine (bool) -> the tail's session
    rows: int  # grid points the head learned from
    epochs: int
    refine: bool = False
    held_scores: dict = field(default_factory=dict)  # (scaled, refine) -> mean IoU on the held-out photos
    scaled: bool = False  # the extra input sizes are averaged in
    scale_session: object = None  # the extra sizes' part of the graph (``graph.scale_model``)
    offsets: list = field(default_factory=list)  # per class, folded into the head's last bias


def class_color_field(labeled, labels) -> dict:
    """``{"colors": [#rrggbb per class]}``: the colours the project keeps with its classes, which the
    model's masks are drawn in everywhere (empty when the samples carry none)."""
    slots = getattr(labeled[0].target, "slots", ()) if labeled else ()
    return {"colors": [slot_color(s) for s in slots]} if len(slots) == len(labels) else {}


def _logits(template, layers, features, unit) -> np.ndarray:
    """The head's (1, C, G, G) logits on a photo or tile (with the mirrored one's, when the template
    looks at both)."""
    logits = head_logits(layers, features(unit)[None])
    if template.flip_test:
        mirrored = head_logits(layers, features(unit, "hflip")[None])[..., ::-1]
        logits = 0.5 * (logits + mirrored)
    return logits


def softmax(logits: np.ndarray) -> np.ndarray:
    """Class probabilities over axis 1 (ONNX ``Softmax``, the graph's ``class_scores``)."""
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


class SegmentationTrainer(TaskTrainer):
    """The segmentation task's trainer (see ``trainers.tasks.Trainer`` and ``TaskTrainer.train``):
    extract maps, fit the per-pixel head, export one graph, measure it on the test photos."""

    evaluator = "modeldesk.trainers.segmentation.evaluation:evaluate_segmentation"
    target = "mask"
    train_options = {"cluster": None}
    evaluates_export = True
    stage_at = {"Exporting": 0.8, "Evaluating": 0.85}

    def check(self, samples) -> None:
        labeled = [s for s in samples if s.target is not None]
        if len(labeled) < 2:
            raise UserError(
                "segmentation learns from photos with masks: paint the classes on at least 2 photos "
                "(Label page), or import photos with their masks"
            )
        present = set().union(*(set(s.target.present) for s in labeled))
        if len(present) < 2:
            raise UserError(
                f"the masks show only {', '.join(map(repr, sorted(present))) or 'no class'}: paint at "
                "least two classes (the background can be one)"
            )

    def estimate(
        self, samples, template, cache_dir, *, device: str = "auto", time_budget=None, cluster=None
    ) -> dict:
        from modeldesk.trainers.feature_cache import FeatureCache

        template = get_template(template)
        backbone = get_backbone(template.backbone)
        cache = FeatureCache(cache_dir)
        keys = unit_keys([s for s in samples if s.target is not None], template.neck.size)  # tiles too
        missing = {
            key
            for view in template.views
            for key in cache.missing((backbone.key, template.neck.maps_name, view), keys)
        }
        plan = plan_feature_extraction(
            backbone,
            len(missing),
            cache,
            views=template.views,
            features=maps_feature_spec(template.neck),
            device=device,
            batch_size=8,
        )
        per_image = SECONDS_PER_IMAGE * (template.neck.size / 512) ** 2  # until measured here
        features_s = plan.eta_s if plan.eta_s is not None else len(missing) * len(template.views) * per_image
        budget = float(time_budget or template.time_budget_s)
        # in the priors' units: a time measured now (measured_flops) would count the load twice (app.calibration)
        passes = PASSES_SHARE * self._fit_flops(template, backbone, len(keys))
        fit_s = min(
            (passes + self._projection_flops(template, backbone, len(keys))) / ESTIMATE_FLOPS, 0.6 * budget
        )
        # rows: the neck on every photo and view; evaluation: a third of the photos through the graph
        area = (template.neck.grid / 64) ** 2
        grid_s = ROWS_S * len(keys) * (2 if template.flip_train else 1) * area
        sizes = 1 + sum((s / template.neck.size) ** 2 for s in template.extra_sizes)  # backbone passes
        passes_per_photo = (2 if template.flip_test else 1) * (1.5 if template.refine else 1) * sizes
        eval_s = len(keys) / 3 * per_image * 1.5 * passes_per_photo
        parts = {
            "features": features_s,
            "head": fit_s,
            "rows": grid_s,
            "evaluation": eval_s,
            "export": EXPORT_S,
        }
        return staged_estimate(plan, parts, len(missing))

    @staticmethod
    def _fit_rows(template, n_photos: int) -> int:
        """The grid points the head is fitted on (``template.rows`` at most)."""
        return min(template.rows, n_photos * template.neck.grid**2)

    @classmethod
    def _fit_flops(cls, template, backbone, n_photos: int) -> float:
        """Multiply-adds of the head's fit, all its epochs."""
        rows = cls._fit_rows(template, n_photos)
        width = template.hidden or len(backbone.outputs)
        dim = min(template.neck.dim(backbone), template.components or 10**9)
        return rows * dim * width * 6 * template.epochs

    @classmethod
    def _projection_flops(cls, template, backbone, n_photos: int) -> float:
        """Multiply-adds of the principal directions the head learns on (none without ``components``)."""
        dim = template.neck.dim(backbone)
        if not template.components or template.components >= dim:
            return 0.0
        return cls._fit_rows(template, n_photos) * dim * (dim + template.components)

    @classmethod
    def _fit_seconds(cls, template, backbone, n_photos: int) -> float:
        return cls._fit_flops(template, backbone, n_photos) / measured_flops()

    def evaluate(self, artifact_path, samples, *, progress=None) -> dict:
        return evaluate_segmentation(artifact_path, samples, progress=progress)

    def prepare(self, run: Run, samples) -> tuple[list, list[str]]:
        labeled = [s for s in samples if s.target is not None]
        self.check(labeled)
        return labeled, list(labeled[0].target.classes)

    def features(self, run: Run) -> _Photos:
        """The readable photos' feature maps per view (0 .. 0.5) and their roles (see ``split_roles``)."""
        from modeldesk.trainers.feature_cache import FeatureCache

        template = run.template
        backbone = get_backbone(template.backbone)
        cache = FeatureCache(run.cache_dir)
        readable = run.readable_photos()
        tiles = TiledPhotos(readable, template.neck.size, Path(run.cache_dir) / "segtiles")
        run.resources.callback(tiles.close)

        def missing(keys):
            namespaces = [(backbone.key, template.neck.maps_name, view) for view in template.views]
            return set().union(*(cache.missing(namespace, keys) for namespace in namespaces))

        extracted = extract_maps(
            backbone,
            template.neck,
            tiles.items(readable, missing),
            cache,
            views=template.views,
            device=run.device,
            should_stop=run.should_stop,
            progress=lambda done, total: run.report("Extracting features", 0.5 * done / max(total, 1)),
        )
        identity = extracted["identity"]
        run.skipped += identity.skipped
        run.extraction = identity.plan or {}
        rows_of = {view: {key: r for r, key in enumerate(result.keys)} for view, result in extracted.items()}
        usable = [s for s in readable if all(u.key in rows_of["identity"] for u in tiles.units([s]))]
        if run.skipped:
            run.warnings.append(f"{len(run.skipped)} photo(s) could not be read and were left out")
        train, held, test, notes = split_roles(usable)
        run.warnings += notes
        return _Photos(
            backbone,
            cache,
            extracted,
            rows_of,
            FeatureGrid(template.neck, backbone),
            train,
            held,
            test,
            tiles,
        )

    def fit(self, run: Run) -> _Fitted:
        """The head on grid points of the training photos (0.5 .. 0.75), then whether the refining
        tail does better on the held-out photos (0.75 .. 0.8)."""
        template, photos, classes = run.template, run.data, run.labels
        backbone, neck, train, held = photos.backbone, template.neck, photos.train, photos.held
        features = photos.features
        # the head's rows: grid points of the training photos (and their mirror images), rare classes drawn more
        run.report("Choosing the points to learn from", 0.52)
        train_views = [
            (s, v)
            for s in photos.units(train)
            for v in (("identity", "hflip") if template.flip_train else ("identity",))
        ]
        X, y = self._rows(
            train_views,
            features,
            neck.grid,
            len(classes),
            template.rows,
            template.balance,
            run.report,
            edges=template.edges,
        )
        held_views = [(s, "identity") for s in photos.units(held)]
        X_val, y_val = (
            self._rows(held_views, features, neck.grid, len(classes), VAL_ROWS, 0.0, None)
            if held
            else (None, None)
        )
        if X_val is not None:
            keep = np.isin(y_val, np.unique(y))  # a class the training rows lack cannot be scored
            X_val, y_val = (X_val[keep], y_val[keep]) if keep.any() else (None, None)
        run.report("Learning the classes of pixels", 0.6)
        projection = None
        if template.components and template.components < X.shape[1]:
            projection = principal_directions(X, template.components)
            X = project(X, projection)
            X_val = None if X_val is None else project(X_val, projection)
        spent = time.monotonic() - run.started
        epoch_s = self._fit_seconds(template, backbone, len(train)) / template.epochs
        epochs = int(max(3, min(template.epochs, (0.85 * run.budget - spent) / max(epoch_s, 1e-6))))
        if template.hidden:
            head = MLPHead(
                hidden=template.hidden,
                l2=1e-4,
                dropout=0.1,
                lr=2e-3,
                epochs=epochs,
                batch_size=512,
                patience=3,
                random_state=0,
            )
        else:  # a linear per-pixel head (the plain reference)
            head = LogisticRegressionHead(l2=1e-3, max_iter=30 * epochs, patience=10)
        head.fit(X, y, X_val, y_val)
        if template.hidden and head.n_iter_ >= epochs and epochs < template.epochs:
            run.warnings.append(
                f"the time budget allowed {epochs} of {template.epochs} passes over the points"
            )
        layers = fold_projection(head_layers(head, len(classes)), projection)
        del X, X_val

        run.report("Checking on the held-out photos", 0.75)
        tails = {
            refine: create_session(
                tail_model(len(classes), neck, refine=refine).SerializeToString(), device="cpu"
            )
            for refine in ((False, True) if template.refine else (False,))
        }
        fitted = _Fitted(layers, tails, rows=int(len(y)), epochs=int(getattr(head, "n_iter_", 0)))
        choices = [(False, refine) for refine in tails]
        if held and template.extra_sizes:
            fitted.scale_session = self._scale_session(run, layers)
            choices += [(True, refine) for refine in tails]
        self._choose(run, fitted, choices)
        if fitted.scaled:  # the extra sizes' graph with the offsets folded in, as the export has it
            fitted.scale_session = self._scale_session(run, fitted.layers)
        else:
            fitted.scale_session = None
        return fitted

    @staticmethod
    def _scale_session(run: Run, layers):
        template, photos = run.template, run.data
        model = scale_model(
            photos.backbone,
            template.neck,
            template.extra_sizes,
            layers,
            photos.cache.root / "graphs",
            flip=template.flip_test,
        )
        return create_session(model.SerializeToString(), device="cpu")

    def _choose(self, run: Run, fitted: _Fitted, choices) -> None:
        """Set ``fitted``'s offsets (with ``template.calibrate``), extra sizes and refinement to the
        choice with the best mean IoU on the held-out photos (the first, simplest, on a tie)."""
        template, held, classes = run.template, run.data.held, run.labels
        if not held:
            return
        truths = [truth_mask(s, classes) for s in held]
        grid = template.neck.grid
        logits = {False: [], True: []}  # scaled -> per held photo: [(unit, logits (1, C, G, G))]
        for sample in held:
            main = self._unit_logits(run, fitted, sample, scaled=False)
            logits[False].append(main)
            if any(scaled for scaled, _ in choices):
                logits[True].append(self._unit_logits(run, fitted, sample, scaled=True, main=main))
        best, scores, offsets_of = None, {}, {}
        for scaled, refine in choices:
            if scaled not in offsets_of:
                offsets = np.zeros(len(classes), np.float32)
                if template.calibrate:
                    pairs = [pair for photo in logits[scaled] for pair in photo]
                    offsets, before, after = class_offsets(
                        [lg[0] for _, lg in pairs],
                        [label_grid(unit.target.read(), grid) for unit, _ in pairs],
                        len(classes),
                    )
                    log.info("class offsets %s: grid mean IoU %.4f -> %.4f", offsets.round(2), before, after)
                offsets_of[scaled] = offsets.reshape(1, -1, 1, 1)
            total = sum(
                confusion(
                    truth,
                    self._mask(
                        run, fitted, sample, [(u, lg + offsets_of[scaled]) for u, lg in photo], refine
                    ),
                    len(classes),
                )
                for sample, truth, photo in zip(held, truths, logits[scaled])
            )
            scores[scaled, refine] = round(mean_iou(total), 4)
            if best is None or scores[scaled, refine] > scores[best]:
                best = (scaled, refine)
        fitted.scaled, fitted.refine = best
        fitted.held_scores = scores
        fitted.offsets = [round(float(v), 4) for v in offsets_of[best[0]].ravel()]
        fitted.layers = with_offsets(fitted.layers, offsets_of[best[0]].ravel())

    @staticmethod
    def _inputs(run: Run, sample) -> list:
        """The model's input tensors (3, S, S) of a photo: the whole one, or each of its tiles."""
        spec = run.template.neck.spec
        plan = run.data.tiles.plans.get(sample.key) if run.data.tiles is not None else None
        image = load_image(sample.path)
        if plan is None:
            return [image_to_tensor(image, spec)]
        return [tile_tensor(image, box, spec) for box in plan.boxes]

    def _unit_logits(self, run: Run, fitted: _Fitted, sample, *, scaled=None, main=None) -> list:
        """[(unit, logits (1, C, G, G))] of a photo, or of each of its tiles, as the exported graph
        computes them: the cached maps' (``main``, when already computed), the extra sizes' averaged in."""
        template, features = run.template, run.data.features
        units = run.data.units([sample])
        if main is None:
            main = [(unit, _logits(template, fitted.layers, features, unit)) for unit in units]
        if not (fitted.scaled if scaled is None else scaled):
            return main
        tensors = self._inputs(run, sample)
        n = len(template.extra_sizes)
        return [
            (unit, mean_of_scales(lg, fitted.scale_session.run([SCALED], {IMAGE: tensor[None]})[0], n))
            for (unit, lg), tensor in zip(main, tensors)
        ]

    def _mask(self, run: Run, fitted: _Fitted, sample, unit_logits, refine: bool) -> np.ndarray:
        """A photo's mask from its (or its tiles') logits, as the exported graph's tail (or the
        predictor's blending of tiles) makes it."""
        plan = run.data.tiles.plans.get(sample.key) if run.data.tiles is not None else None
        if plan is not None:  # a large photo: its tiles' probabilities blended as the predictor does
            scores = [softmax(lg)[0] for _, lg in unit_logits]
            return grid_to_mask(blend_tiles(plan, scores), plan.width, plan.height)
        width, height = image_size(sample.path)
        feeds = {
            LOGITS: np.ascontiguousarray(unit_logits[0][1], np.float32),
            SIZE_INPUT: np.array([[width, height]], np.float32),
        }
        if refine:
            feeds[IMAGE] = self._inputs(run, sample)[0][None]
        return fitted.tails[refine].run([MASK_OUTPUT], feeds)[0][0]

    def _app_mask(self, run: Run, fitted: _Fitted, sample, refine: bool) -> np.ndarray:
        """The mask the training path gives: cached maps -> neck -> head (the extra sizes' part of the
        graph averaged in) -> the graph's tail."""
        return self._mask(run, fitted, sample, self._unit_logits(run, fitted, sample), refine)

    def build_graph(self, run: Run):
        template, photos, fitted = run.template, run.data, run.fitted
        return build_segmentation_graph(
            photos.backbone,
            template.neck,
            fitted.layers,
            len(run.labels),
            photos.cache.root / "graphs",
            flip=template.flip_test,
            refine=fitted.refine,
            sizes=template.extra_sizes if fitted.scaled else (),
        )

    def card_fields(self, run: Run) -> dict:
        template, backbone = run.template, run.data.backbone
        return {
            "preprocessing": template.neck.spec.to_dict(),
            "backbone": backbone.key,
            "input_name": backbone.input_name,
            "size_input": SIZE_INPUT,
            "output_name": MASK_OUTPUT,
            "scores_output": SCORES_OUTPUT,
            "grid": template.neck.grid,
            "flip_test": template.flip_test,
            "refined": run.fitted.refine,
            "extra_sizes": list(run.template.extra_sizes) if run.fitted.scaled else [],
            **class_color_field(run.labeled, run.labels),
            "tiles": dict(TILES),
        }

    def measure_export(self, run: Run, artifact_dir: Path) -> dict:
        """The saved graph on the test photos (0.85 .. 0.98), and its masks against the training path's
        on a few of them (a warning below ``PARITY_AGREEMENT``)."""
        test, fitted = run.data.test, run.fitted
        refine, scaled, held_scores = fitted.refine, fitted.scaled, fitted.held_scores
        metrics = evaluate_segmentation(
            artifact_dir,
            test,
            progress=lambda done, total, _m="": run.report("Evaluating", 0.85 + 0.13 * done / max(total, 1)),
        )
        metrics["split"] = (
            "test"
            if any(s.split == "test" for s in test)
            else ("val" if any(s.split == "val" for s in test) else "train")
        )
        metrics["held_out_miou"] = held_scores.get((scaled, refine))
        metrics["refined"] = refine
        if (scaled, not refine) in held_scores:
            metrics["held_out_miou_unrefined"] = held_scores[scaled, False]
        if run.template.extra_sizes and held_scores:
            metrics["extra_sizes"] = list(run.template.extra_sizes) if scaled else []
            metrics["held_out_miou_one_size"] = held_scores.get((False, refine))
        if run.template.calibrate:
            metrics["class_offsets"] = dict(zip(run.labels, fitted.offsets))
        # the app's masks against the exported graph's, on a few test photos
        from modeldesk.deploy import Predictor

        predictor = Predictor(artifact_dir, device="cpu")
        agree = [
            float(np.mean(self._app_mask(run, fitted, s, refine) == predictor.predict([s.path])[0]["mask"]))
            for s in test[:3]
        ]
        metrics["export_agreement"] = round(min(agree), 6) if agree else None
        if agree and min(agree) < PARITY_AGREEMENT:
            run.warnings.append(
                f"the exported model's masks differ from training's on {100 * (1 - min(agree)):.2f}% of pixels"
            )
        return metrics

    def training(self, run: Run) -> dict:
        photos, fitted = run.data, run.fitted
        return {
            "samples": {"train": len(photos.train), "held_out": len(photos.held), "test": len(photos.test)},
            "rows": fitted.rows,
            "epochs": fitted.epochs,
            "seconds": run.elapsed(),
            "skipped": run.skipped,
        }

    def summary(self, metrics: dict) -> dict:
        return {"miou": metrics.get("miou"), "pixel_accuracy": metrics.get("pixel_accuracy")}

    @staticmethod
    def _rows(
        photo_views, features, grid: int, n_classes: int, limit: int, balance: float, report, edges=0.0
    ):
        """(X (rows, D) float32, y (rows,)): grid points drawn from the photos' views, a point of a class
        with ``n`` points weighted ``n ** -balance``, times ``1 + edges`` on a class edge."""
        from modeldesk.datasets.masks import VOID

        labels = []
        for sample, view in photo_views:
            points = label_grid(sample.target.read(), grid)
            labels.append(points[:, ::-1] if view == "hflip" else points)
        flat = np.stack(labels).reshape(len(labels), -1) if labels else np.zeros((0, grid * grid), np.uint8)
        counts = np.bincount(flat[flat != VOID].astype(np.int64), minlength=n_classes)[:n_classes]
        weight = np.zeros(256)
        weight[:n_classes] = np.where(counts > 0, np.maximum(counts, 1).astype(np.float64) ** -balance, 0.0)
        p = weight[flat.ravel()]
        if edges:
            p = p * (1.0 + edges * np.stack([edge_points(points) for points in labels]).ravel())
        if p.sum() <= 0:
            raise UserError("the masks have no labeled pixels at the model's grid: paint larger areas")
        rng = np.random.default_rng(0)
        n = int(min(limit, np.count_nonzero(p)))
        chosen = np.sort(rng.choice(p.size, size=n, replace=False, p=p / p.sum()))
        by_photo = np.searchsorted(np.arange(1, len(labels) + 1) * grid * grid, chosen, side="right")
        X, y, start = None, np.empty(n, np.int64), 0
        for k in np.unique(by_photo):
            picks = chosen[by_photo == k] - k * grid * grid
            sample, view = photo_views[k]
            grid_features = features(sample, view)
            rows = grid_features.reshape(grid_features.shape[0], -1)[:, picks].T
            if X is None:
                X = np.empty((n, rows.shape[1]), np.float32)
            X[start : start + len(picks)] = rows
            y[start : start + len(picks)] = flat[k, picks]
            start += len(picks)
            if report is not None:
                report("Choosing the points to learn from", 0.52 + 0.08 * (k + 1) / len(photo_views))
        return X, y

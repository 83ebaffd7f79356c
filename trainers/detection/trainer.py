"""The object detection trainer: frozen backbone maps, an anchor-free head per cell, one ONNX graph.

Each photo is letterboxed (aspect ratio kept), its backbone maps are cached per view (the photo, its
mirror image and, for scale jitter, the photo at 75% of its size), the neck turns them into one
feature vector per grid cell, and a
:class:`~modeldesk.trainers.detection.head.CellHead` learns a heatmap score and a box per cell on
all object cells, a share of the background cells and the background cells a first fit mistook
for objects (hard negatives). A :class:`~modeldesk.trainers.detection.refine.BoxRefiner` then learns
to move the sides of a box onto the object from the finer maps inside it. Head parameters are chosen
by mAP50 on the validation photos, and the score threshold by the best F1 there. The exported graph (``detection_graph``) is evaluated on the
test photos through the predictor, as users will run it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modeldesk.deploy.preprocess import image_size, letterbox_scale
from modeldesk.errors import UserError
from modeldesk.scheduler import CostModel
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.base import Run, TaskTrainer, evaluation_split, split_counts
from modeldesk.trainers.detection.compression import boxed_photos
from modeldesk.trainers.detection.duplicates import drop_duplicates
from modeldesk.trainers.detection.features import (
    CellComputer,
    extract_maps,
    maps_batch_size,
    maps_feature_spec,
)
from modeldesk.trainers.detection.graph import (
    DEDUPE_IOU,
    IOU_THRESHOLD,
    MAX_PER_CLASS,
    MIN_SCORE,
    OUTPUT_NAME,
    SIZE_INPUT,
    SIZES_OUTPUT,
    VOTE_IOU,
    build_detector_graph,
)
from modeldesk.trainers.detection.head import CellHead, cell_points, decode_boxes, encode, nms, view_boxes
from modeldesk.trainers.detection.metrics import best_threshold, box_iou, mean_ap
from modeldesk.trainers.detection.refine import BoxRefiner, RefineComputer, feature_dim, rescore
from modeldesk.trainers.detection.sizing import sized_for, small_objects_note
from modeldesk.trainers.detection.tta import fused_predictions, view_back, view_size
from modeldesk.trainers.feature_cache import FeatureCache
from modeldesk.trainers.features import plan_feature_extraction, staged_estimate
from modeldesk.trainers.templates import get_template

log = logging.getLogger(__name__)

# Priors for a workspace that has measured nothing yet, from cold runs on raccoon_voc (77 photos, 2 cores):
# 231 maps in about 6 s with the session's set-up; the fast and accurate heads fitted at 10,800 and
# 13,700 units a second (the old prior, 2,000, made a first ETA 3-5x too long). Kept a little low.
#: decoding and the backbone at 320 px per image and view, in the priors' units (app.calibration), before
#: anything was measured here: 30 raccoon photos x 3 views took 3.95 s at probe slowdown 0.93 (0.065 s in
#: those units; the photos are large JPEGs, bench/estimates.py --stages, 2026-12-04); 1.55 s in a later
#: run on a quiet machine (0.025 s in those units): 0.04
SECONDS_PER_IMAGE = 0.04
#: head units a second before one was measured here, in the priors' units: the fast recipe's 30 photos
#: (24,800 units) took 0.84 s at probe slowdown 0.93, i.e. 1.3 s in those units, and 0.52 s in a later
#: quiet run (0.73 s in those units; 2026-12-04)
HEAD_UNITS_PER_S = 20000.0
HEAD_WORK = "detection-head"  # cost-model key: thousands of (cell row x feature x fit) per second
#: multiply-adds a second of the box refiner's normal equations (BLAS), in the priors' units: 1,600 rows of
#: 3,800 features (4.2e10) took 2.4 s at probe slowdown 0.93, 3.6 s in those units (2026-12-04); with the
#: cascade's second step, the fast and accurate refiners planned 8.8 s took 5.5 and 4.5 s in those units
#: (30 raccoon photos, quiet, bench/estimates.py --stages, 2026-12-04)
REFINE_FLOPS_PER_S = 1.8e10
REFINE_S_PER_BOX = 4e-5  # RoiAlign of one jittered box on the cached maps
#: choosing the threshold, exporting and evaluating the exported graph, in the priors' units: 0.37-0.42 s
#: for 30 photos at probe slowdown 0.93 (0.6 s in those units; 2026-12-04)
EXPORT_S = 0.6
PARITY_TOLERANCE = 0.05  # pixels: graph boxes against the numpy decoding of the same head


def check_box_samples(samples) -> tuple[list, list[str]]:
    """(samples with boxes, sorted labels); UserError when there is nothing to learn from."""
    boxed = boxed_photos(samples)
    if not boxed:
        raise UserError("none of the images has a box: draw boxes around the objects first")
    labels = sorted({str(box.label) for s in boxed for box in s.target})
    return boxed, labels


def _truth(sample) -> list:
    return [(str(b.label), float(b.x0), float(b.y0), float(b.x1), float(b.y1)) for b in sample.target]


def detect_numpy(
    scores,
    sides,
    points,
    stride,
    size,
    width,
    height,
    labels,
    *,
    min_score=MIN_SCORE,
    iou_threshold=IOU_THRESHOLD,
    max_per_class=MAX_PER_CLASS,
    vote_iou=VOTE_IOU,
) -> list[dict]:
    """The numpy twin of the graph's decoding for one image: boxes in its original pixels (voted when
    ``vote_iou`` is set, see ``detection_graph.decode_nodes``)."""
    boxes = decode_boxes(sides, points, stride) / letterbox_scale(width, height, size)
    boxes = np.minimum(np.maximum(boxes, 0), [width, height, width, height])
    out = []
    for c, label in enumerate(labels):
        mask = np.flatnonzero(scores[:, c] > min_score)
        for i in mask[nms(boxes[mask], scores[mask, c], iou_threshold, max_per_class)]:
            box = boxes[i]
            if vote_iou is not None:
                weight = scores[mask, c] * (box_iou(box[None], boxes[mask])[0] >= vote_iou)
                box = (weight[:, None] * boxes[mask]).sum(axis=0) / max(weight.sum(), 1e-9)
            out.append({"label": label, "score": float(scores[i, c]), "box": box.tolist()})
    return sorted(out, key=lambda p: -p["score"])


class _Photos:
    """The usable samples with their sizes, letterbox boxes, class indices and cached maps per view."""

    def __init__(self, samples, labels, neck, maps_by_view):
        index = {label: i for i, label in enumerate(labels)}
        self.samples, self.neck, self.labels = samples, neck, labels
        self.sizes = [image_size(s.path) for s in samples]
        self.classes = [np.array([index[str(b.label)] for b in s.target], int) for s in samples]
        self.boxes = [
            np.array([[b.x0, b.y0, b.x1, b.y1] for b in s.target], float).reshape(-1, 4)
            * letterbox_scale(*size, neck.size)
            for s, size in zip(samples, self.sizes)
        ]
        self.maps = maps_by_view
        self.split = np.array([s.split for s in samples])

    def view_boxes(self, i: int, view: str) -> np.ndarray:
        return view_boxes(self.boxes[i], view, self.neck.size)


class _Fitter:
    """Builds cell rows (targets, negative sampling, hard negatives) and fits and scores heads."""

    def __init__(self, photos: _Photos, computer: CellComputer, template, rng):
        self.photos, self.computer, self.template, self.rng = photos, computer, template, rng
        neck = photos.neck
        self.points = cell_points(neck.grid, neck.stride)
        self.refiner = None
        self.refine_computer = None

    def fit_refiner(self, indices) -> BoxRefiner | None:
        """The template's box refiner fitted on the true boxes of ``indices`` in every view (None
        without one); later :meth:`predictions` refine their boxes with it."""
        spec = self.template.refine
        if spec is None:
            return None
        computer = RefineComputer(spec, self.photos.neck, self.computer.backbone)
        images = [
            (self.photos.maps[view][i], self.photos.view_boxes(i, view))
            for i in indices
            for view in self.template.views
        ]
        self.refiner = BoxRefiner(spec).fit(computer, images, np.random.default_rng(1))
        computer.set_weights(
            self.refiner.weight_, self.refiner.bias_, self.refiner.quality_, later=self.refiner.later_
        )
        self.refine_computer = computer
        return self.refiner

    def cells(self, i: int, view: str) -> np.ndarray:
        """Photo ``i``'s cell features in ``view``, computed from its cached maps each time: kept for
        every photo they took 2.2x the maps' memory, the largest part of a run's peak, and computing
        them again costs a few milliseconds a photo."""
        return self.computer(self.photos.maps[view][i : i + 1])[0]

    def rows(self, indices, head=None):
        """Cell rows of ``indices`` in every view: object cells, sampled and (with ``head``) hard negatives."""
        t, neck = self.template, self.photos.neck
        X, H, S, W, weight = [], [], [], [], []
        for i in indices:
            for view in t.views:
                cells = self.cells(i, view)
                heat, sides, side_w = encode(
                    self.photos.view_boxes(i, view),
                    self.photos.classes[i],
                    len(self.photos.labels),
                    self.points,
                    neck.stride,
                    **t.encode,
                )
                background = heat.max(axis=1) < 0.02
                keep = ~background | (self.rng.random(len(cells)) < t.negative_share)
                w = np.where(background, 1.0 / t.negative_share, 1.0)
                if head is not None and t.hard_negatives:
                    score = head.predict(cells)[0].max(axis=1)
                    candidates = np.flatnonzero(background & ~keep)
                    hard = candidates[np.argsort(-score[candidates])[: t.hard_negatives]]
                    keep[hard], w[hard] = True, 1.0
                X.append(cells[keep]), H.append(heat[keep]), S.append(sides[keep])
                W.append(side_w[keep]), weight.append(w[keep])
        return (
            np.concatenate(X),
            np.concatenate(H),
            np.concatenate(S),
            np.concatenate(W),
            np.concatenate(weight),
        )

    def fit(self, indices, params: dict) -> CellHead:
        X, H, S, W, weight = self.rows(indices)
        head = CellHead(**params).fit(X, H, S, W, weight)
        if self.template.hard_negatives:
            X, H, S, W, weight = self.rows(indices, head)
            head = CellHead(**params).fit(X, H, S, W, weight)
        return head

    def predictions(self, head: CellHead, indices) -> list[list[dict]]:
        """The boxes the exported graph gives each photo of ``indices``: looked at in every one of the
        template's test views and fused (``detection.tta``), from the cached maps."""
        views, out = self.template.test_views, []
        for i in indices:
            per_view = [self._look(head, i, view) for view in views]
            out.append(
                per_view[0]
                if len(views) == 1
                else fused_predictions(
                    per_view, self.template.dedupe_iou or DEDUPE_IOU, self.template.decay_iou
                )
            )
        return out

    def _look(self, head: CellHead, i: int, view: str) -> list[dict]:
        """Photo ``i``'s boxes in one ``view``, brought back onto the photo."""
        neck = self.photos.neck
        width, height = self.photos.sizes[i]
        view_width, view_height = view_size(view, width, height, neck.size)
        scores, sides = head.predict(self.cells(i, view))
        boxes = detect_numpy(
            scores, sides, self.points, neck.stride, neck.size, view_width, view_height, self.photos.labels
        )
        if self.refine_computer is not None and boxes:
            moved, iou = self.refine_computer.refine_scored(
                self.photos.maps[view][i], [b["box"] for b in boxes], view_width, view_height
            )
            scores = [b["score"] for b in boxes]
            if iou is not None:
                scores = rescore(self.refiner.spec, scores, iou).tolist()
            boxes = [
                {**b, "box": box.tolist(), "score": float(sc)} for b, box, sc in zip(boxes, moved, scores)
            ]
            boxes.sort(key=lambda p: -p["score"])
        if self.template.dedupe_iou is not None:
            # with several views, scores are lowered once, after the views' boxes are fused
            decay = self.template.decay_iou if len(self.template.test_views) == 1 else None
            boxes = drop_duplicates(boxes, self.template.dedupe_iou, decay=decay)
        if view != "identity" and boxes:
            placed = view_back([b["box"] for b in boxes], view, width, height)
            boxes = [{**b, "box": box.tolist()} for b, box in zip(boxes, placed)]
        return boxes

    def truths(self, indices) -> list:
        return [_truth(self.photos.samples[i]) for i in indices]


def estimate_detection(samples, template, cache_dir, *, device: str = "auto", time_budget=None) -> dict:
    """ETA and plan before training: uncached maps (measured throughput, else a default) plus the head."""
    boxed = boxed_photos(samples)
    template = sized_for(get_template(template), boxed)
    backbone = get_backbone(template.backbone)
    cache = FeatureCache(cache_dir)
    keys = [s.key for s in boxed]
    missing = set()
    for view in template.views:
        missing.update(cache.missing((backbone.key, template.neck.maps_name, view), keys))
    plan = plan_feature_extraction(
        backbone,
        len(missing),
        cache,
        views=template.views,
        features=maps_feature_spec(template.neck),
        device=device,
        batch_size=maps_batch_size(template.neck),
    )
    features_s = plan.eta_s
    if features_s is None:
        features_s = len(missing) * SECONDS_PER_IMAGE * len(template.views) * (template.neck.size / 320) ** 2
    rate = CostModel(cache.root).items_per_s(HEAD_WORK, "cpu", 1, 1)
    units = _head_units(len(keys), template)
    budget = float(time_budget or template.time_budget_s)
    head_s = min(0.8 * budget, units / (rate or HEAD_UNITS_PER_S))
    refine_s = _refine_seconds(samples, template, backbone)
    # the exported graph is evaluated once per test view of each photo (detection.tta)
    parts = {
        "features": features_s,
        "refine": refine_s,
        "head": head_s,
        "export": EXPORT_S * len(template.test_views),
    }
    return staged_estimate(plan, parts, len(missing))


def _refine_seconds(samples, template, backbone) -> float:
    """Seconds to fit the box refiner: RoiAlign of the jittered boxes, then its normal equations."""
    from modeldesk.trainers.detection.refine import MAX_ROWS

    spec = template.refine
    if spec is None:
        return 0.0
    boxes = sum(len(s.target) for s in boxed_photos(samples))
    rows = min(MAX_ROWS, boxes * len(template.views) * spec.copies)
    reads, fits = rows, rows
    if spec.rescore > 0:  # the IoU regression's own jittered boxes, read and fitted as many again
        reads, fits = 2 * rows, 2 * rows
    if spec.cascade:  # cascade step k reads each box k + 1 times (k moves, then its own features)
        reads += rows * sum(k + 1 for k in range(1, spec.steps))
        fits += rows * (spec.steps - 1)
    dim = feature_dim(spec, backbone.outputs)
    solves = 1 + (spec.steps - 1 if spec.cascade else 0)  # (the priors were measured with one)
    return reads * REFINE_S_PER_BOX + (fits * dim * dim + solves * dim**3 / 3) / REFINE_FLOPS_PER_S


def _head_units(n_images: int, template) -> int:
    backbone = get_backbone(template.backbone)
    rows = n_images * len(template.views) * template.neck.grid**2 * (0.1 + template.negative_share)
    fits = len(template.candidates()) * (2 if template.hard_negatives else 1)
    return max(1, int(rows * template.neck.dim(backbone) * fits // 1000))


@dataclass
class _Boxed:
    """The readable photos, the fitter of their cell rows and the split they train, tune and test on."""

    photos: _Photos
    fitter: _Fitter
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


@dataclass
class _Chosen:
    """The head the validation photos chose, its parameters, the search's trials and the score threshold."""

    head: CellHead
    params: dict
    trials: list
    threshold: float


class ObjectDetectionTrainer(TaskTrainer):
    """The object detection task's trainer (see ``trainers.tasks.Trainer`` and ``TaskTrainer.train``):
    its metrics are measured on the exported graph, through the predictor, as users will run it."""

    evaluator = "modeldesk.trainers.detection.evaluation:evaluate_boxes"
    target = "boxes"
    evaluates_export = True

    def check(self, samples) -> None:
        check_box_samples(samples)

    def estimate(self, samples, template, cache_dir, *, device: str = "auto", time_budget=None) -> dict:
        return estimate_detection(samples, template, cache_dir, device=device, time_budget=time_budget)

    def prepare(self, run: Run, samples) -> tuple[list, list[str]]:
        """The boxed samples and their labels; the template resized when its objects are small."""
        boxed, labels = check_box_samples(samples)
        sized = sized_for(run.template, boxed)
        if sized.small_classes and sized.neck.size == run.template.neck.size:
            run.warnings.append(small_objects_note(sized.small_classes, sized.neck.size, None))
        elif sized.small_classes:
            run.notes.append(small_objects_note(sized.small_classes, run.template.neck.size, sized.neck.size))
            if run.budget == run.template.time_budget_s:  # the template's own budget, not one asked for
                run.budget = sized.time_budget_s
        run.template = sized
        return boxed, labels

    def features(self, run: Run) -> _Boxed:
        """The backbone maps of every readable photo in every view (0 .. 0.6)."""
        template, backbone = run.template, get_backbone(run.template.backbone)
        readable = run.readable_photos()
        extracted = extract_maps(
            backbone,
            template.neck,
            [(s.key, s.path) for s in readable],
            FeatureCache(run.cache_dir),
            views=template.views,
            device=run.device,
            should_stop=run.should_stop,
            progress=lambda done, total: run.report("Extracting features", 0.6 * done / max(total, 1)),
        )
        first = extracted[template.views[0]]
        run.skipped += first.skipped
        run.extraction = first.plan or {}
        good = set(first.keys)
        usable = [s for s in readable if s.key in good]
        if not usable:
            raise UserError(f"none of the images could be read (first: {run.skipped[0]['reason']})")
        if run.skipped:
            run.warnings.append(f"{len(run.skipped)} image(s) could not be read and were left out")
        run.labeled = usable
        maps = {}
        for view, result in extracted.items():
            row = {key: r for r, key in enumerate(result.keys)}
            maps[view] = result.features[[row[s.key] for s in usable]]
        photos = _Photos(usable, run.labels, template.neck, maps)
        train, val, test = (np.flatnonzero(photos.split == name) for name in ("train", "val", "test"))
        if not len(train):
            train, val, test = np.arange(len(usable)), np.array([], int), np.array([], int)
            run.warnings.append("no training split: every image was used for training")
        fitter = _Fitter(photos, CellComputer(template.neck, backbone), template, np.random.default_rng(0))
        if template.refine is not None:
            run.report("Learning to place boxes", 0.6)
            fitter.fit_refiner(train)
        return _Boxed(photos, fitter, train, val, test)

    def fit(self, run: Run) -> _Chosen:
        """Head parameters by mAP50 on the validation photos, while the budget lasts (0.6 .. 0.85); the
        score threshold by the best F1 there (0.85 .. 0.9)."""
        template, d = run.template, run.data
        fitter, train, val = d.fitter, d.train, d.val
        head_started = time.monotonic()
        candidates = template.candidates() if len(val) else template.candidates()[:1]
        trials, best = [], None
        for n, params in enumerate(candidates):
            if n and time.monotonic() > run.deadline(0.75):
                run.warnings.append(f"the time budget allowed {n} of {len(candidates)} head settings")
                break
            run.report("Training", 0.6 + 0.25 * n / len(candidates))
            head = fitter.fit(train, params)
            score = (
                mean_ap(fitter.truths(val), fitter.predictions(head, val), run.labels)[0]
                if len(val)
                else None
            )
            trials.append({"params": params, "val_map50": score})
            if best is None or (score is not None and score > best[0]):
                best = (score if score is not None else -1.0, params, head)
        _, params, head = best
        CostModel(FeatureCache(run.cache_dir).root).record(
            HEAD_WORK,
            "cpu",
            1,
            1,
            n_items=max(
                1, _head_units(len(run.labeled), template) * len(trials) // len(template.candidates())
            ),
            seconds=max(time.monotonic() - head_started, 1e-3),
        )

        run.report("Choosing the score threshold", 0.87)
        tune = val if len(val) else train
        if not len(val):
            run.warnings.append("no validation images: the score threshold was chosen on the training images")
        threshold = best_threshold(fitter.truths(tune), fitter.predictions(head, tune))
        return _Chosen(head, params, trials, float(threshold))

    def build_graph(self, run: Run):
        template = run.template
        graphs = FeatureCache(run.cache_dir).root / "graphs"
        return build_detector_graph(
            get_backbone(template.backbone),
            template.neck,
            run.fitted.head,
            len(run.labels),
            graphs,
            refiner=run.data.fitter.refiner,
            dedupe_iou=template.dedupe_iou,
            decay_iou=template.decay_iou,
            test_views=template.test_views,
        )

    def card_fields(self, run: Run) -> dict:
        template, chosen = run.template, run.fitted
        backbone = get_backbone(template.backbone)
        return {
            "preprocessing": template.neck.spec.to_dict(),
            "backbone": backbone.key,
            "neck": template.neck.name,
            "views": list(template.views),
            "test_views": list(template.test_views),
            "small_classes": dict(template.small_classes),
            "head": {"kind": "cell-heatmap", "params": chosen.params},
            "refine": template.to_dict()["refine"],
            "score_threshold": chosen.threshold,
            "input_name": backbone.input_name,
            "size_input": SIZE_INPUT,
            "output_name": OUTPUT_NAME,
            "sizes_output": SIZES_OUTPUT,
        }

    def measure_export(self, run: Run, artifact_dir: Path) -> dict:
        """The exported graph on the test photos, else the validation photos (0.9 .. 1), and its boxes
        against the numpy decoding of the same head."""
        from modeldesk.trainers.detection.evaluation import evaluate_boxes, predict_boxes

        d, chosen = run.data, run.fitted
        evaluated, where = evaluation_split(d.test, d.val, d.train)
        photos = [run.labeled[i] for i in evaluated]
        metrics = evaluate_boxes(artifact_dir, photos)
        metrics["split"] = where
        metrics["search"] = {"trials": chosen.trials, "best": chosen.params}
        graph_predictions = predict_boxes(artifact_dir, photos[:4], threshold=MIN_SCORE)
        metrics["export_max_abs_diff_px"] = _parity(
            graph_predictions, d.fitter.predictions(chosen.head, evaluated[:4])
        )
        if metrics["export_max_abs_diff_px"] > PARITY_TOLERANCE:
            run.warnings.append(
                f"the exported graph's boxes differ from training's by up to "
                f"{metrics['export_max_abs_diff_px']:.2f} pixels"
            )
        return metrics

    def sample_counts(self, run: Run) -> dict:
        return split_counts(run.data.train, run.data.val, run.data.test)

    def summary(self, metrics: dict) -> dict:
        return {"map50": metrics["map50"], "map": metrics["map"]}


def _parity(graph: list, numpy_: list) -> float:
    """Largest box coordinate difference between matching boxes of two prediction lists (inf on a count mismatch)."""
    worst = 0.0
    for a, b in zip(graph, numpy_):
        a = sorted(a["boxes"] if isinstance(a, dict) else a, key=lambda p: -p["score"])
        b = sorted(b, key=lambda p: -p["score"])
        strong_a = [p for p in a if p["score"] > MIN_SCORE + 1e-3]
        strong_b = [p for p in b if p["score"] > MIN_SCORE + 1e-3]
        if len(strong_a) != len(strong_b):
            return float("inf")
        for p, q in zip(strong_a, strong_b):
            worst = max(worst, float(np.abs(np.subtract(p["box"], q["box"])).max()))
    return worst

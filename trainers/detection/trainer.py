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
from pathlib import Path

import numpy as np

from modeldesk.deploy.artifact import new_model_id, save_artifact
from modeldesk.deploy.graph import prune_unused
from modeldesk.deploy.preprocess import ImageDecodeError, image_size, letterbox_scale
from modeldesk.errors import UserError
from modeldesk.scheduler import CostModel
from modeldesk.trainers.backbones import get_backbone
from modeldesk.trainers.base import TaskTrainer, evaluation_split, split_counts
from modeldesk.trainers.detection.features import CellComputer, extract_maps, maps_feature_spec
from modeldesk.trainers.detection.graph import (
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
from modeldesk.trainers.detection.refine import BoxRefiner, RefineComputer, feature_dim
from modeldesk.trainers.features import plan_feature_extraction
from modeldesk.trainers.progress import stage_reporter
from modeldesk.trainers.tasks import TrainResult
from modeldesk.trainers.templates import get_template
from modeldesk.trainers.versions import versions

log = logging.getLogger(__name__)

# Priors for a workspace that has measured nothing yet, from cold runs on raccoon_voc (77 photos, 2 cores):
# 231 maps in about 6 s with the session's set-up; the fast and accurate heads fitted at 10,800 and
# 13,700 units a second (the old prior, 2,000, made a first ETA 3-5x too long). Kept a little low.
SECONDS_PER_IMAGE = 0.025  # backbone at 320 px per image and view on a CPU
HEAD_UNITS_PER_S = 8000.0
HEAD_WORK = "detection-head"  # cost-model key: thousands of (cell row x feature x fit) per second
REFINE_FLOPS_PER_S = 3e9  # multiply-adds a second of the box refiner's normal equations (BLAS), 2 busy cores
REFINE_S_PER_BOX = 4e-5  # RoiAlign of one jittered box on the cached maps
PARITY_TOLERANCE = 0.05  # pixels: graph boxes against the numpy decoding of the same head


def check_box_samples(samples) -> tuple[list, list[str]]:
    """(samples with boxes, sorted labels); UserError when there is nothing to learn from."""
    boxed = [s for s in samples if s.target and not isinstance(s.target, str)]
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
        self._cells: dict = {}
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
        computer.set_weights(self.refiner.weight_, self.refiner.bias_)
        self.refine_computer = computer
        return self.refiner

    def cells(self, i: int, view: str) -> np.ndarray:
        key = (i, view)
        if key not in self._cells:
            self._cells[key] = self.computer(self.photos.maps[view][i : i + 1])[0]
        return self._cells[key]

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
        neck, out = self.photos.neck, []
        for i in indices:
            scores, sides = head.predict(self.cells(i, "identity"))
            boxes = detect_numpy(
                scores,
                sides,
                self.points,
                neck.stride,
                neck.size,
                *self.photos.sizes[i],
                self.photos.labels,
            )
            if self.refine_computer is not None and boxes:
                moved = self.refine_computer.refine(
                    self.photos.maps["identity"][i], [b["box"] for b in boxes], *self.photos.sizes[i]
                )
                boxes = [{**b, "box": box.tolist()} for b, box in zip(boxes, moved)]
            out.append(boxes)
        return out

    def truths(self, indices) -> list:
        return [_truth(self.photos.samples[i]) for i in indices]


def estimate_detection(samples, template, cache_dir, *, device: str = "auto", time_budget=None) -> dict:
    """ETA and plan before training: uncached maps (measured throughput, else a default) plus the head."""
    from modeldesk.trainers.feature_cache import FeatureCache

    template = get_template(template)
    backbone = get_backbone(template.backbone)
    cache = FeatureCache(cache_dir)
    keys = [s.key for s in samples if s.target]
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
        batch_size=16,
    )
    features_s = plan.eta_s
    if features_s is None:
        features_s = len(missing) * SECONDS_PER_IMAGE * len(template.views) * (template.neck.size / 320) ** 2
    rate = CostModel(cache.root).items_per_s(HEAD_WORK, "cpu", 1, 1)
    units = _head_units(len(keys), template)
    budget = float(time_budget or template.time_budget_s)
    head_s = min(0.8 * budget, units / (rate or HEAD_UNITS_PER_S))
    eta = round(features_s + head_s + _refine_seconds(samples, template, backbone) + 3.0, 1)
    return {"eta_s": eta, "plan": {**plan.to_dict(), "eta_s": eta, "features_to_compute": len(missing)}}


def _refine_seconds(samples, template, backbone) -> float:
    """Seconds to fit the box refiner: RoiAlign of the jittered boxes, then its normal equations."""
    from modeldesk.trainers.detection.refine import MAX_ROWS

    spec = template.refine
    if spec is None:
        return 0.0
    boxes = sum(len(s.target) for s in samples if s.target and not isinstance(s.target, str))
    rows = min(MAX_ROWS, boxes * len(template.views) * spec.copies)
    dim = feature_dim(spec, backbone.outputs)
    return rows * REFINE_S_PER_BOX + (rows * dim * dim + dim**3 / 3) / REFINE_FLOPS_PER_S


def _head_units(n_images: int, template) -> int:
    backbone = get_backbone(template.backbone)
    rows = n_images * len(template.views) * template.neck.grid**2 * (0.1 + template.negative_share)
    fits = len(template.candidates()) * (2 if template.hard_negatives else 1)
    return max(1, int(rows * template.neck.dim(backbone) * fits // 1000))


class ObjectDetectionTrainer(TaskTrainer):
    """The object detection task's trainer (see ``trainers.tasks.Trainer``)."""

    evaluator = "modeldesk.trainers.detection.evaluation:evaluate_boxes"

    def check(self, samples) -> None:
        check_box_samples(samples)

    def estimate(self, samples, template, cache_dir, *, device: str = "auto", time_budget=None) -> dict:
        return estimate_detection(samples, template, cache_dir, device=device, time_budget=time_budget)

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
    ) -> TrainResult:
        """Extract maps, fit and select the head, pick the threshold, export, evaluate the graph."""
        from modeldesk.trainers.detection.evaluation import evaluate_boxes, predict_boxes
        from modeldesk.trainers.feature_cache import FeatureCache

        started = time.monotonic()
        template = get_template(template)
        budget = float(time_budget or template.time_budget_s)
        backbone = get_backbone(template.backbone)
        boxed, labels = check_box_samples(samples)
        cache = FeatureCache(cache_dir)
        estimate = self.estimate(boxed, template, cache_dir, device=device, time_budget=budget)
        warnings: list[str] = []

        report = stage_reporter(started, estimate["eta_s"], progress, should_stop)

        readable, skipped = [], []
        for s in boxed:
            try:
                image_size(s.path)
                readable.append(s)
            except (ImageDecodeError, OSError) as exc:
                skipped.append({"file": str(s.path), "reason": str(exc)})
        extracted = extract_maps(
            backbone,
            template.neck,
            [(s.key, s.path) for s in readable],
            cache,
            views=template.views,
            device=device,
            should_stop=should_stop,
            progress=lambda done, total: report("Extracting features", 0.6 * done / max(total, 1)),
        )
        skipped += extracted[template.views[0]].skipped
        good = set(extracted[template.views[0]].keys)
        usable = [s for s in readable if s.key in good]
        if not usable:
            raise UserError(f"none of the images could be read (first: {skipped[0]['reason']})")
        if skipped:
            warnings.append(f"{len(skipped)} image(s) could not be read and were left out")
        maps = {}
        for view, result in extracted.items():
            row = {key: r for r, key in enumerate(result.keys)}
            maps[view] = result.features[[row[s.key] for s in usable]]
        photos = _Photos(usable, labels, template.neck, maps)
        train, val, test = (np.flatnonzero(photos.split == name) for name in ("train", "val", "test"))
        if not len(train):
            train, val, test = np.arange(len(usable)), np.array([], int), np.array([], int)
            warnings.append("no training split: every image was used for training")
        fitter = _Fitter(photos, CellComputer(template.neck, backbone), template, np.random.default_rng(0))
        if template.refine is not None:
            report("Learning to place boxes", 0.6)
            fitter.fit_refiner(train)

        # head parameters by mAP50 on the validation photos, while the budget lasts (0.6 .. 0.85)
        head_started = time.monotonic()
        candidates = template.candidates() if len(val) else template.candidates()[:1]
        trials, best = [], None
        for n, params in enumerate(candidates):
            if n and time.monotonic() - started > 0.75 * budget:
                warnings.append(f"the time budget allowed {n} of {len(candidates)} head settings")
                break
            report("Training", 0.6 + 0.25 * n / len(candidates))
            head = fitter.fit(train, params)
            score = (
                mean_ap(fitter.truths(val), fitter.predictions(head, val), labels)[0] if len(val) else None
            )
            trials.append({"params": params, "val_map50": score})
            if best is None or (score is not None and score > best[0]):
                best = (score if score is not None else -1.0, params, head)
        _, params, head = best
        CostModel(cache.root).record(
            HEAD_WORK,
            "cpu",
            1,
            1,
            n_items=max(1, _head_units(len(usable), template) * len(trials) // len(template.candidates())),
            seconds=max(time.monotonic() - head_started, 1e-3),
        )

        # the score threshold: best F1 on the validation photos (0.85 .. 0.9)
        report("Choosing the score threshold", 0.87)
        tune = val if len(val) else train
        if not len(val):
            warnings.append("no validation images: the score threshold was chosen on the training images")
        threshold = best_threshold(fitter.truths(tune), fitter.predictions(head, tune))

        report("Exporting", 0.9)
        model = prune_unused(
            build_detector_graph(
                backbone, template.neck, head, len(labels), cache.root / "graphs", refiner=fitter.refiner
            )
        )
        card = {
            "id": model_id or new_model_id(),
            "task": template.task,
            "target": "boxes",
            "labels": labels,
            "preprocessing": template.neck.spec.to_dict(),
            "template": template.name,
            "backbone": backbone.key,
            "neck": template.neck.name,
            "views": list(template.views),
            "head": {"kind": "cell-heatmap", "params": params},
            "refine": template.to_dict()["refine"],
            "score_threshold": float(threshold),
            "input_name": backbone.input_name,
            "size_input": SIZE_INPUT,
            "output_name": OUTPUT_NAME,
            "sizes_output": SIZES_OUTPUT,
            "versions": versions(),
            "warnings": warnings,
            "metrics": {},
        }
        artifact_dir = Path(save_artifact(out_dir, model, card))

        # metrics of the exported graph on the test photos, else the validation photos (0.9 .. 1)
        evaluated, where = evaluation_split(test, val, train)
        chosen = [usable[i] for i in evaluated]
        report("Evaluating", 0.93)
        metrics = evaluate_boxes(artifact_dir, chosen)
        metrics["split"] = where
        metrics["search"] = {"trials": trials, "best": params}
        graph_predictions = predict_boxes(artifact_dir, chosen[:4], threshold=MIN_SCORE)
        metrics["export_max_abs_diff_px"] = _parity(
            graph_predictions, fitter.predictions(head, evaluated[:4])
        )
        if metrics["export_max_abs_diff_px"] > PARITY_TOLERANCE:
            warnings.append(
                f"the exported graph's boxes differ from training's by up to "
                f"{metrics['export_max_abs_diff_px']:.2f} pixels"
            )
        card["metrics"], card["warnings"] = metrics, warnings
        card["training"] = {
            "samples": split_counts(train, val, test),
            "seconds": round(time.monotonic() - started, 2),
            "skipped": skipped,
        }
        save_artifact(artifact_dir, model, card)
        report("Done", 1.0, {"map50": metrics["map50"], "map": metrics["map"]})
        return TrainResult(
            artifact_dir=artifact_dir,
            metrics=metrics,
            warnings=warnings,
            skipped=skipped,
            plan={
                **estimate["plan"],
                **(extracted[template.views[0]].plan or {}),
                "eta_s": estimate["eta_s"],
                "actual_s": round(time.monotonic() - started, 2),
            },
        )


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

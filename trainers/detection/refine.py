"""Box refinement: a second look at each kept box, on the finer backbone maps, that moves its sides.

The cell head proposes boxes from the features of a box's centre, so its sides land near the object but
seldom on it (AP at IoU 0.75 of 0.22 against 0.83 at 0.5, 4-fold CV on raccoon_voc). The refiner reads
the stride 8 and 16 maps inside each kept box, enlarged so that its edges are seen (ONNX ``RoiAlign``
to an R x R grid per map), and a ridge regression turns those features into the moves of the four
sides relative to the box's width and height (R-CNN's box regression, fitted in closed form on
jittered copies of the true boxes of every training view). ``steps`` > 1 runs it again from the
moved box; with ``cascade`` each later step has its own regression, fitted on the boxes the steps
before it moved (Cascade R-CNN: the second regression learns the small corrections the first leaves,
on boxes as close to the object as the first one brings them). With ``rescore`` > 0 the moved box
is read once more and a second ridge regression predicts its IoU with the object (fitted on more
widely jittered true boxes); the box's score becomes ``score ** (1 - rescore) * IoU ** rescore``,
so that well-placed boxes rank first (COCO mAP at IoU 0.5:0.95 counts the order). In the exported
graph it follows NMS and box voting; training runs the same nodes on the cached maps
(:class:`RefineComputer`), so the two compute the same boxes and scores.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.detection.features import STRIDES, DetectionNeck, split_maps

MIN_QUALITY = 0.05  # predicted IoUs are clipped to [MIN_QUALITY, 1] before they weigh a score
MAX_ROWS = 24_000  # jittered boxes the refiner is fitted on at most (its fitting time grows with them)
BLOCK_ROWS = 2048  # rows added to the normal equations at once (one large product is much faster than many)


@dataclass(frozen=True)
class RefineSpec:
    """How boxes are refined.

    Parameters
    ----------
    levels : backbone maps read inside each box.
    roi : side of the grid each map is pooled to inside the box (features: channels x roi x roi).
    enlarge : the box is read this much larger than it is, around its centre (its edges must show).
    jitter : standard deviation of the training boxes' sides around the true ones, as a share of the
        true box's width or height.
    copies : jittered copies of each true box per training view (fewer on large data, see ``MAX_ROWS``).
    min_iou : jittered copies overlapping their true box less are not trained on (as R-CNN's box
        regression: a box far off gives moves too large for a linear fit, which they would skew).
    ridge : L2 penalty on standardised features, per row of data.
    steps : refinements in a row, each from the box the previous one moved.
    cascade : each step after the first has its own regression, fitted on the training boxes as the
        steps before it moved them (else every step repeats the first one's).
    cascade_min_iou : as ``min_iou``, for the later steps' training boxes (they start closer).
    rescore : weight of the moved box's predicted IoU in its score (0: scores are not changed).
    rescore_jitter : as ``jitter``, for the boxes the IoU regression is fitted on (wider, every overlap).
    rescore_background : boxes per image and view, of its true boxes' sizes but anywhere in the
        picture, added to the IoU regression's training boxes (so that it has seen boxes on no object,
        which the head proposes too).
    """

    levels: tuple = ("stride8", "stride16")
    roi: int = 5
    enlarge: float = 1.3
    jitter: float = 0.12
    copies: int = 16
    min_iou: float = 0.5
    ridge: float = 3.0
    steps: int = 1
    cascade: bool = False
    cascade_min_iou: float = 0.6
    rescore: float = 0.0
    rescore_jitter: float = 0.2
    rescore_background: int = 0


def _enlarge_matrix(enlarge: float) -> np.ndarray:
    """(4, 4) M with ``boxes @ M`` = the boxes scaled by ``enlarge`` about their centres."""
    a, b = (1 + enlarge) / 2, (1 - enlarge) / 2
    m = np.zeros((4, 4), np.float32)
    for lo, hi in ((0, 2), (1, 3)):
        m[lo, lo], m[hi, lo], m[lo, hi], m[hi, hi] = a, b, b, a
    return m


def feature_dim(spec: RefineSpec, channels: dict) -> int:
    """Features per box: the levels' channels x ``roi``^2."""
    return sum(channels[level] for level in spec.levels) * spec.roi**2


def roi_feature_nodes(spec: RefineSpec, boxes: str, image: str, prefix: str) -> tuple[list, list, str]:
    """Nodes from letterbox boxes (K, 4) and their image index (K,) int64 to features (K, D)."""
    nodes = [helper.make_node("MatMul", [boxes, prefix + "enlarge"], [prefix + "rois"], name=prefix + "rois")]
    inits = [numpy_helper.from_array(_enlarge_matrix(spec.enlarge), prefix + "enlarge")]
    parts = []
    for level in spec.levels:
        pooled, flat = f"{prefix}{level}/roi", f"{prefix}{level}/flat"
        nodes.append(
            helper.make_node(
                "RoiAlign",
                [level, prefix + "rois", image],
                [pooled],
                name=pooled,
                output_height=spec.roi,
                output_width=spec.roi,
                sampling_ratio=2,
                spatial_scale=1.0 / STRIDES[level],
                mode="avg",
                coordinate_transformation_mode="half_pixel",
            )
        )
        nodes.append(helper.make_node("Flatten", [pooled], [flat], name=flat, axis=1))
        parts.append(flat)
    out = prefix + "features"
    nodes.append(helper.make_node("Concat", parts, [out], name=out, axis=1))
    return nodes, inits, out


def refine_nodes(
    spec: RefineSpec,
    neck: DetectionNeck,
    weight: np.ndarray,
    bias: np.ndarray,
    boxes: str,
    image: str,
    sizes: str,
    prefix: str = "refine/",
    quality: tuple | None = None,
    later: tuple = (),
) -> tuple[list, list, str, str | None]:
    """Nodes from boxes (K, 4) in original pixels, their image index (K,) int64 and the images' sizes
    (N, 2) to the refined boxes (K, 4), clipped to their images; ``weight`` (D, 4), ``bias`` (4,).
    ``later``: (weight, bias) of the steps after the first (a cascade; the last one repeats while
    ``spec.steps`` asks for more, and without any every step uses ``weight`` and ``bias``).
    With ``quality`` ((D, 1) weight, (1,) bias) also each refined box's predicted IoU (K, 1), read
    on the maps inside it (else None)."""
    p = prefix
    stages = [(weight, bias), *later]
    inits = [
        numpy_helper.from_array(np.asarray(w, np.float32), f"{p}W{'' if n == 0 else n}")
        for n, (w, _) in enumerate(stages)
    ]
    inits += [
        numpy_helper.from_array(np.asarray(b, np.float32), f"{p}b{'' if n == 0 else n}")
        for n, (_, b) in enumerate(stages)
    ]
    inits += [
        numpy_helper.from_array(np.array(neck.size, np.float32), p + "size"),
        numpy_helper.from_array(np.array(1.0, np.float32), p + "one"),
        numpy_helper.from_array(np.array(0.0, np.float32), p + "zero"),
        numpy_helper.from_array(np.array([0, 1], np.int64), p + "lo_idx"),
        numpy_helper.from_array(np.array([2, 3], np.int64), p + "hi_idx"),
    ]
    nodes = []

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [p + name], name=p + name, **attrs))
        return p + name

    own = node("Gather", [sizes, image], "own_size", axis=0)  # (K, 2) width, height
    inverse = node("Div", [node("ReduceMax", [own], "longer", axes=[1], keepdims=1), p + "size"], "inverse")
    current = node("Div", [boxes, inverse], "lb0")  # letterbox pixels
    for step in range(spec.steps):
        s = f"s{step}/"
        f_nodes, f_inits, features = roi_feature_nodes(spec, current, image, p + s)
        nodes.extend(f_nodes)
        inits.extend(f_inits)
        stage = min(step, len(stages) - 1)
        suffix = "" if stage == 0 else str(stage)
        moves = node(
            "Add", [node("MatMul", [features, p + "W" + suffix], s + "mm"), p + "b" + suffix], s + "moves"
        )
        low = node("Gather", [current, p + "lo_idx"], s + "low", axis=1)
        high = node("Gather", [current, p + "hi_idx"], s + "high", axis=1)
        wh = node("Max", [node("Sub", [high, low], s + "wh0"), p + "one"], s + "wh")
        scale = node("Concat", [wh, wh], s + "whwh", axis=1)
        current = node("Add", [current, node("Mul", [moves, scale], s + "shift")], s + "boxes")
    iou = None
    if quality is not None:
        f_nodes, f_inits, features = roi_feature_nodes(spec, current, image, p + "q/")
        nodes.extend(f_nodes)
        inits.extend(f_inits)
        inits += [
            numpy_helper.from_array(np.asarray(quality[0], np.float32).reshape(-1, 1), p + "q/W"),
            numpy_helper.from_array(np.asarray(quality[1], np.float32).reshape(1), p + "q/b"),
            numpy_helper.from_array(np.array(MIN_QUALITY, np.float32), p + "q/min"),
        ]
        raw = node("Add", [node("MatMul", [features, p + "q/W"], "q/mm"), p + "q/b"], "q/raw")
        iou = node("Clip", [raw, p + "q/min", p + "one"], "q/iou")
    out = node("Mul", [current, inverse], "boxes_raw")
    upper = node("Concat", [own, own], "upper", axis=1)
    out = node("Min", [node("Max", [out, p + "zero"], "boxes_pos"), upper], "boxes")
    return nodes, inits, out, iou


def rescore_nodes(spec: RefineSpec, score: str, iou: str, prefix: str) -> tuple[list, list, str]:
    """Nodes from scores (K, 1) and predicted IoUs (K, 1) to ``score ** (1 - rescore) * iou ** rescore``."""
    p = prefix
    inits = [
        numpy_helper.from_array(np.array(1.0 - spec.rescore, np.float32), p + "score_power"),
        numpy_helper.from_array(np.array(spec.rescore, np.float32), p + "iou_power"),
    ]
    nodes = [
        helper.make_node("Pow", [score, p + "score_power"], [p + "score_part"], name=p + "score_part"),
        helper.make_node("Pow", [iou, p + "iou_power"], [p + "iou_part"], name=p + "iou_part"),
        helper.make_node("Mul", [p + "score_part", p + "iou_part"], [p + "rescored"], name=p + "rescored"),
    ]
    return nodes, inits, p + "rescored"


def rescore(spec: RefineSpec, scores, iou) -> np.ndarray:
    """The numpy twin of :func:`rescore_nodes` (float32, as the graph)."""
    scores, iou = np.asarray(scores, np.float32), np.asarray(iou, np.float32)
    return scores ** np.float32(1.0 - spec.rescore) * iou ** np.float32(spec.rescore)


def _model(nodes, inits, inputs, outputs) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "box_refiner", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="modeldesk")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _map_inputs(spec: RefineSpec, channels: dict) -> list:
    return [
        helper.make_tensor_value_info(level, TensorProto.FLOAT, ["N", channels[level], "H", "W"])
        for level in spec.levels
    ]


class RefineComputer:
    """The refiner's nodes run on cached maps (one image at a time): features to fit, boxes to refine."""

    def __init__(self, spec: RefineSpec, neck: DetectionNeck, backbone, threads: int | None = 1):
        self.spec, self.neck, self.backbone = spec, neck, backbone
        self._levels_neck = replace(
            neck, levels=tuple(spec.levels)
        )  # every level is cached, whatever the neck reads
        self.channels = {level: backbone.outputs[level] for level in spec.levels}
        nodes, inits, out = roi_feature_nodes(spec, "boxes", "image", "refine/")
        model = _model(
            nodes,
            inits,
            [
                *_map_inputs(spec, self.channels),
                helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["K", 4]),
                helper.make_tensor_value_info("image", TensorProto.INT64, ["K"]),
            ],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["K", feature_dim(spec, self.channels)])],
        )
        self._features = create_session(model.SerializeToString(), device="cpu", threads=threads)
        self._threads = threads
        self._refine = None

    def _maps(self, flat: np.ndarray) -> dict:
        maps = split_maps(self._levels_neck, self.backbone, np.asarray(flat, np.float32).reshape(1, -1))
        return {level: maps[level] for level in self.spec.levels}

    def features(self, flat: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        """(K, D) features of letterbox ``boxes`` (K, 4) on one image's cached flat maps."""
        feeds = self._maps(flat)
        feeds["boxes"] = np.asarray(boxes, np.float32).reshape(-1, 4)
        feeds["image"] = np.zeros(len(feeds["boxes"]), np.int64)
        return self._features.run(None, feeds)[0]

    def set_weights(
        self, weight: np.ndarray, bias: np.ndarray, quality: tuple | None = None, later: tuple = ()
    ) -> None:
        """Build the refining model (the exported graph's nodes) for a fitted weight and bias (and
        IoU regression ``quality``, the cascade's ``later`` steps, see :func:`refine_nodes`)."""
        nodes, inits, out, iou = refine_nodes(
            self.spec, self.neck, weight, bias, "boxes", "image", "sizes", quality=quality, later=later
        )
        outputs = [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["K", 4])]
        if iou is not None:
            outputs.append(helper.make_tensor_value_info(iou, TensorProto.FLOAT, ["K", 1]))
        model = _model(
            nodes,
            inits,
            [
                *_map_inputs(self.spec, self.channels),
                helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["K", 4]),
                helper.make_tensor_value_info("image", TensorProto.INT64, ["K"]),
                helper.make_tensor_value_info("sizes", TensorProto.FLOAT, ["N", 2]),
            ],
            outputs,
        )
        self._refine = create_session(model.SerializeToString(), device="cpu", threads=self._threads)

    def refine(self, flat: np.ndarray, boxes: np.ndarray, width: float, height: float) -> np.ndarray:
        """Refined (K, 4) boxes in original pixels of one image's boxes in original pixels."""
        return self.refine_scored(flat, boxes, width, height)[0]

    def refine_scored(self, flat: np.ndarray, boxes: np.ndarray, width: float, height: float) -> tuple:
        """(refined (K, 4) boxes, their predicted IoUs (K,) or None without an IoU regression)."""
        boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
        if not len(boxes):
            return boxes, None
        feeds = self._maps(flat)
        feeds.update(
            boxes=boxes,
            image=np.zeros(len(boxes), np.int64),
            sizes=np.array([[width, height]], np.float32),
        )
        outputs = self._refine.run(None, feeds)
        return outputs[0], (outputs[1][:, 0] if len(outputs) > 1 else None)


def side_moves(boxes: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(K, 4) moves of each side from ``boxes`` to ``truth``, as shares of the box's width/height."""
    wh = np.maximum(boxes[:, 2:] - boxes[:, :2], 1.0)
    return (truth - boxes) / np.concatenate([wh, wh], axis=1)


def move_sides(boxes: np.ndarray, moves: np.ndarray) -> np.ndarray:
    """The inverse of :func:`side_moves`: ``boxes`` (K, 4) with each side moved by its share of the box."""
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    wh = np.maximum(boxes[:, 2:] - boxes[:, :2], 1.0)
    return boxes + np.asarray(moves, np.float64) * np.concatenate([wh, wh], axis=1)


def _paired_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of each box of ``a`` with the box of ``b`` in the same row."""
    inter = np.prod(np.clip(np.minimum(a[:, 2:], b[:, 2:]) - np.maximum(a[:, :2], b[:, :2]), 0, None), axis=1)
    area = np.prod(a[:, 2:] - a[:, :2], axis=1) + np.prod(b[:, 2:] - b[:, :2], axis=1)
    return inter / np.maximum(area - inter, 1e-9)


def _accumulate(sums, blocks):
    """Add blocks of (features, side moves) to (X'X, X'Y, sum X, sum Y, rows)."""
    if not blocks:
        return sums
    X = np.concatenate([b[0] for b in blocks]).astype(np.float64)
    Y = np.concatenate([b[1] for b in blocks])
    if sums is None:
        k = Y.shape[1]
        sums = (np.zeros((X.shape[1],) * 2), np.zeros((X.shape[1], k)), np.zeros(X.shape[1]), np.zeros(k), 0)
    gram, cross, total, total_y, n = sums
    gram += X.T @ X
    cross += X.T @ Y
    return gram, cross, total + X.sum(axis=0), total_y + Y.sum(axis=0), n + len(X)


def _near_copies(truth: np.ndarray, spec, copies: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``copies`` jittered copies of each true box and the box each copies, kept where they still
    overlap it by ``spec.min_iou`` (what a regression step is fitted on)."""
    boxes = _jittered(truth, spec.jitter, copies, rng)
    target = np.repeat(truth, copies, axis=0)
    near = _paired_iou(boxes, target) >= spec.min_iou
    return boxes[near], target[near]


def _jittered(truth: np.ndarray, jitter: float, copies: int, rng) -> np.ndarray:
    """(M * copies, 4) copies of ``truth`` with each side moved by ``jitter`` x its box's width/height."""
    wh = np.maximum(truth[:, 2:] - truth[:, :2], 1.0)
    noise = rng.normal(0.0, jitter, (len(truth), copies, 4)) * np.concatenate([wh, wh], 1)[:, None]
    boxes = (truth[:, None] + noise).reshape(-1, 4)
    boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 2.0)
    return boxes


def _solve(sums, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """Ridge weight (D, k) and bias (k,) on raw features from the sums of :func:`_accumulate`
    (standardised features, penalty ``ridge`` per row)."""
    gram, cross, total, total_y, n = sums
    mean, mean_y = total / n, total_y / n
    # centred moments from the raw sums: (X - m)'(X - m) = X'X - n m m'
    cov = gram - n * np.outer(mean, mean)
    scale = np.sqrt(np.maximum(np.diag(cov) / n, 0.0)) + 1e-3
    cov_s = cov / np.outer(scale, scale)
    cross_s = (cross - n * np.outer(mean, mean_y)) / scale[:, None]
    coef = np.linalg.solve(cov_s + ridge * n * np.eye(len(cov_s)), cross_s)
    weight = coef / scale[:, None]
    return weight.astype(np.float32), (mean_y - mean @ weight).astype(np.float32)


class BoxRefiner:
    """Fits the ridge regression from box features to side moves; ``weight_``/``bias_`` act on raw
    features (the standardisation folded in), as the graph uses them. With ``spec.rescore`` > 0 also
    the regression of a box's IoU with its object (``quality_``: (weight (D, 1), bias (1,)), else None)."""

    def __init__(self, spec: RefineSpec):
        self.spec = spec

    def fit(self, computer: RefineComputer, images, rng) -> BoxRefiner:
        """``images``: (flat maps, (M, 4) true letterbox boxes) per image and view."""
        spec = self.spec
        n_boxes = sum(len(boxes) for _, boxes in images)
        copies = int(np.clip(MAX_ROWS // max(n_boxes, 1), 2, spec.copies))
        blocks, quality_blocks, rows = [], [], 0
        sums = quality_sums = None
        for flat, truth in images:
            truth = np.asarray(truth, np.float64).reshape(-1, 4)
            if not len(truth):
                continue
            boxes, target = _near_copies(truth, spec, copies, rng)
            if len(boxes):
                blocks.append((computer.features(flat, boxes), side_moves(boxes, target)))
                rows += len(boxes)
            if spec.rescore > 0:
                wide = _jittered(truth, spec.rescore_jitter, copies, rng)
                if spec.rescore_background:
                    wide = np.concatenate(
                        [wide, _anywhere(truth, spec.rescore_background, computer.neck.size, rng)]
                    )
                overlap = _overlap(wide, truth)
                quality_blocks.append((computer.features(flat, wide), overlap[:, None]))
                rows += len(wide)
            if rows >= BLOCK_ROWS:
                sums = _accumulate(sums, blocks)
                quality_sums = _accumulate(quality_sums, quality_blocks)
                blocks, quality_blocks, rows = [], [], 0
        sums = _accumulate(sums, blocks)
        quality_sums = _accumulate(quality_sums, quality_blocks)
        if sums is None:
            raise ValueError("no true boxes to fit the box refiner on")
        self.weight_, self.bias_ = _solve(sums, spec.ridge)
        self.n_rows_ = sums[-1]
        self.quality_ = _solve(quality_sums, spec.ridge) if quality_sums is not None else None
        self.later_ = []
        if spec.cascade:
            for _ in range(spec.steps - 1):
                self.later_.append(self._fit_next(computer, images, copies, rng))
        return self

    @property
    def stages(self) -> list:
        """(weight, bias) of every fitted regression, the first step's first."""
        return [(self.weight_, self.bias_), *self.later_]

    def _fit_next(self, computer: RefineComputer, images, copies: int, rng) -> tuple:
        """The next cascade step's (weight, bias): fitted on jittered true boxes (as the first step's)
        after the steps fitted so far moved them, where they still overlap their box by
        ``cascade_min_iou``."""
        spec = self.spec
        sums, blocks, rows = None, [], 0
        for flat, truth in images:
            truth = np.asarray(truth, np.float64).reshape(-1, 4)
            if not len(truth):
                continue
            boxes, target = _near_copies(truth, spec, copies, rng)
            if not len(boxes):
                continue
            for weight, bias in self.stages:
                boxes = move_sides(boxes, computer.features(flat, boxes) @ weight + bias)
            near = _paired_iou(boxes, target) >= spec.cascade_min_iou
            if near.any():
                blocks.append((computer.features(flat, boxes[near]), side_moves(boxes[near], target[near])))
                rows += int(near.sum())
            if rows >= BLOCK_ROWS:
                sums, blocks, rows = _accumulate(sums, blocks), [], 0
        sums = _accumulate(sums, blocks)
        if sums is None:
            raise ValueError("no refined boxes near their object to fit the next refinement step on")
        return _solve(sums, spec.ridge)


def _anywhere(truth: np.ndarray, count: int, size: int, rng) -> np.ndarray:
    """(count, 4) boxes with the sizes of random true boxes (x 0.5 .. 1.5), placed anywhere in a
    ``size`` x ``size`` letterbox."""
    wh = np.maximum(truth[:, 2:] - truth[:, :2], 2.0)[rng.integers(0, len(truth), count)]
    wh = np.minimum(wh * rng.uniform(0.5, 1.5, (count, 2)), size)
    low = rng.uniform(0.0, 1.0, (count, 2)) * (size - wh)
    return np.concatenate([low, low + wh], axis=1)


def _overlap(boxes: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each box's largest IoU with the true boxes of its image."""
    inter_lo = np.maximum(boxes[:, None, :2], truth[None, :, :2])
    inter_hi = np.minimum(boxes[:, None, 2:], truth[None, :, 2:])
    inter = np.prod(np.clip(inter_hi - inter_lo, 0, None), axis=2)
    area_b = np.prod(boxes[:, 2:] - boxes[:, :2], axis=1)[:, None]
    area_t = np.prod(truth[:, 2:] - truth[:, :2], axis=1)[None]
    return (inter / np.maximum(area_b + area_t - inter, 1e-9)).max(axis=1)

"""The exported detector as one ONNX graph, from the letterboxed image to the final boxes.

Inputs ``image`` (N, 3, S, S) letterboxed and ``image_size`` (N, 2) the original (width, height).
``image`` -> backbone -> neck (``cells``) -> 1x1 convolution (class logits and log box sides per
cell) -> sigmoid scores and boxes in letterbox pixels -> divided by the letterbox scale and clipped
to the original image -> ``NonMaxSuppression`` per class -> box voting (each kept box becomes the
score-weighted mean of the overlapping boxes of its class) -> for models with a box refiner, each
kept box re-read on the finer maps and its sides moved (``detection.refine``), and with an IoU
regression its score weighed by the moved box's predicted IoU -> boxes that a better one now overlaps
dropped, and those it overlaps less lowered (``detection.duplicates``) -> ``detections`` (K, 7):
image index, x0, y0, x1, y1 in the original image's pixels, score, class index. ``sizes`` repeats ``image_size`` so a
reader knows how many images there were (an image may have no boxes).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from modeldesk.trainers.backbones import Backbone
from modeldesk.trainers.detection import tta
from modeldesk.trainers.detection.duplicates import duplicate_nodes
from modeldesk.trainers.detection.features import CELLS, DetectionNeck, neck_nodes
from modeldesk.trainers.detection.head import cell_points
from modeldesk.trainers.detection.refine import refine_nodes, rescore_nodes

SIZE_INPUT = "image_size"
OUTPUT_NAME = "detections"
SIZES_OUTPUT = "sizes"
MIN_SCORE = 0.05
IOU_THRESHOLD = 0.5
MAX_PER_CLASS = 50
VOTE_IOU = 0.5  # box voting: cells whose box overlaps a kept box this much refine it (None: off)
#: after voting and refinement, a box overlapping a better one of its class more than this is dropped
#: (``detection.duplicates``; None: off). Dropping above 0.6 against keeping every box (4-fold CV on
#: the 78 raccoon photos outside the held-out quarter, paired bootstrap): mAP50 +0.061 [+0.016,
#: +0.110] (accurate), +0.073 [+0.032, +0.104] (fast); at 0.5 and 0.7 within 0.01 of 0.6
DEDUPE_IOU = 0.9
#: ... and a box overlapping a better one more than this, but not more than ``DEDUPE_IOU``, keeps
#: 1 - that overlap of its score (linear Soft-NMS; None: such boxes are kept as they are); with test
#: views, once, after their fusion. Against dropping above 0.6, 4-fold CV pooled over every photo,
#: every box the graph gives, paired bootstrap (90%): raccoon_voc (103 photos) accurate mAP50 0.873
#: -> 0.892 (+0.019 [+0.000, +0.039]), mAP 0.478 -> 0.484 (+0.006 [+0.002, +0.008]), AP75 0.483 ->
#: 0.489; fast mAP50 0.882 -> 0.898 (+0.017 [-0.006, +0.046]), mAP 0.467 -> 0.472; magnetic tiles
#: (191 photos, 6 kinds), fast mAP50 0.326 -> 0.345 (+0.018 [+0.007, +0.027]), mAP 0.178 -> 0.182;
#: CamVid's cars and pedestrians (221 frames, folds of neighbouring frames), small-objects mAP50
#: 0.224 -> 0.244 (+0.020 [+0.013, +0.027]), mAP 0.080 -> 0.087 (+0.007 [+0.004, +0.010]).
#: Lowering in each view too: within 0.006 of this; from 0.6 instead of 0.5: half the gain or none;
#: dropping above 0.8 or 0.95 instead of 0.9: within 0.006 (2026-12-07)
DECAY_IOU = 0.5


def _const(inits: list, name: str, value, dtype=np.float32) -> str:
    inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
    return name


def decode_nodes(
    neck: DetectionNeck,
    n_classes: int,
    weight: np.ndarray,
    bias: np.ndarray,
    *,
    min_score: float = MIN_SCORE,
    iou_threshold: float = IOU_THRESHOLD,
    max_per_class: int = MAX_PER_CLASS,
    vote_iou: float | None = VOTE_IOU,
    dedupe_iou: float | None = DEDUPE_IOU,
    decay_iou: float | None = DECAY_IOU,
    refiner=None,
    prefix: str = "det/",
    sizes: str = SIZE_INPUT,
    output: str = OUTPUT_NAME,
) -> tuple[list, list]:
    """Nodes from ``cells`` and the images' ``sizes`` to the ``output`` rows and (for the graph's
    own ``image_size``) the ``sizes`` output.

    With ``vote_iou``, each box kept by NMS is replaced by the score-weighted mean of the boxes of
    its class's cells (score above ``min_score``) that overlap it by at least ``vote_iou`` (box
    voting): many cells see the same object, and their mean box is tighter than the best one's.
    With a fitted ``refiner`` (:class:`~modeldesk.trainers.detection.refine.BoxRefiner`), the kept
    boxes are then refined on the backbone's finer maps. With ``dedupe_iou``, a final box that a
    better-scored one of its image and class overlaps by more than ``dedupe_iou`` is dropped, and
    with ``decay_iou`` one it overlaps by more than that loses some of its score
    (``detection.duplicates``)."""
    nodes, inits = [], []
    p = prefix

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [p + name], name=p + name, **attrs))
        return p + name

    cells_total = neck.grid * neck.grid
    conv = node(
        "Conv",
        [
            CELLS,
            _const(inits, p + "head/W", weight.reshape(*weight.shape, 1, 1)),
            _const(inits, p + "head/B", bias),
        ],
        "head/conv",
        kernel_shape=[1, 1],
    )
    flat = node(
        "Reshape", [conv, _const(inits, p + "flat_shape", [0, n_classes + 4, cells_total], np.int64)], "flat"
    )
    logits = node(
        "Slice",
        [
            flat,
            _const(inits, p + "c0", [0], np.int64),
            _const(inits, p + "c1", [n_classes], np.int64),
            _const(inits, p + "axis1", [1], np.int64),
        ],
        "logits",
    )
    scores = node("Sigmoid", [logits], "scores")
    sides = node(
        "Slice", [flat, p + "c1", _const(inits, p + "c2", [n_classes + 4], np.int64), p + "axis1"], "sides"
    )
    clipped = node(
        "Clip", [sides, _const(inits, p + "lo", -10.0), _const(inits, p + "hi", 10.0)], "sides_clipped"
    )
    dist = node(
        "Mul", [node("Exp", [clipped], "exp"), _const(inits, p + "stride", float(neck.stride))], "dist"
    )
    dist = node("Transpose", [dist], "dist_t", perm=[0, 2, 1])  # (N, P, 4)
    points = cell_points(neck.grid, neck.stride).astype(np.float32)
    signs = np.array([-1, -1, 1, 1], np.float32)
    corners = np.concatenate([points, points], axis=1)[None]  # (1, P, 4)
    lb_boxes = node(
        "Add",
        [
            _const(inits, p + "corners", corners),
            node("Mul", [dist, _const(inits, p + "signs", signs)], "signed"),
        ],
        "lb_boxes",
    )
    longer = node("ReduceMax", [sizes], "longer", axes=[1], keepdims=1)  # (N, 1)
    inverse = node("Div", [longer, _const(inits, p + "size", float(neck.size))], "inverse")
    inverse = node("Unsqueeze", [inverse, _const(inits, p + "axis2", [2], np.int64)], "inverse3")
    boxes = node("Mul", [lb_boxes, inverse], "boxes_raw")
    upper = node("Unsqueeze", [node("Concat", [sizes, sizes], "upper2", axis=1), p + "axis1"], "upper")
    boxes = node("Min", [node("Max", [boxes, _const(inits, p + "zero", 0.0)], "boxes_pos"), upper], "boxes")
    selected = node(
        "NonMaxSuppression",
        [
            boxes,
            scores,
            _const(inits, p + "max_out", [max_per_class], np.int64),
            _const(inits, p + "iou", [iou_threshold]),
            _const(inits, p + "min_score", [min_score]),
        ],
        "selected",
    )
    image_box = node("Gather", [selected, _const(inits, p + "cols02", [0, 2], np.int64)], "image_box", axis=1)
    picked = node("GatherND", [boxes, image_box], "picked")
    if vote_iou is not None:
        picked = _vote_nodes(node, inits, p, boxes, scores, selected, picked, vote_iou, min_score)
    iou = None  # the refined boxes' predicted IoUs, with a refiner that has an IoU regression
    if refiner is not None:
        image_index = node("Gather", [selected, _const(inits, p + "r/col0", 0, np.int64)], "r/image", axis=1)
        r_nodes, r_inits, picked, iou = refine_nodes(
            refiner.spec,
            neck,
            refiner.weight_,
            refiner.bias_,
            picked,
            image_index,
            sizes,
            p + "refine/",
            quality=getattr(refiner, "quality_", None),
            later=tuple(getattr(refiner, "later_", ())),
        )
        nodes.extend(r_nodes)
        inits.extend(r_inits)
    score = node("Unsqueeze", [node("GatherND", [scores, selected], "score1"), p + "axis1"], "score")
    if iou is not None:
        s_nodes, s_inits, score = rescore_nodes(refiner.spec, score, iou, p + "rescore/")
        nodes.extend(s_nodes)
        inits.extend(s_inits)
    as_float = node("Cast", [selected], "selected_f", to=TensorProto.FLOAT)
    image = node("Slice", [as_float, p + "c0", p + "axis1", p + "axis1"], "image")
    label = node(
        "Slice", [as_float, p + "axis1", _const(inits, p + "two", [2], np.int64), p + "axis1"], "label"
    )
    if dedupe_iou is None:
        nodes.append(
            helper.make_node("Concat", [image, picked, score, label], [output], name=p + "out", axis=1)
        )
    else:
        rows = node("Concat", [image, picked, score, label], "rows", axis=1)
        u_nodes, u_inits, rows = duplicate_nodes(rows, dedupe_iou, p + "dedupe/", decay=decay_iou)
        nodes.extend(u_nodes)
        inits.extend(u_inits)
        nodes.append(helper.make_node("Identity", [rows], [output], name=p + "out"))
    if sizes == SIZE_INPUT:
        nodes.append(helper.make_node("Identity", [SIZE_INPUT], [SIZES_OUTPUT], name=p + "sizes"))
    return nodes, inits


def _vote_nodes(node, inits, p, boxes, scores, selected, picked, vote_iou: float, min_score: float) -> str:
    """Box voting (see :func:`decode_nodes`): ``picked`` (K, 4) -> voted boxes (K, 4)."""
    image = node("Gather", [selected, _const(inits, p + "v/col0", 0, np.int64)], "v/image", axis=1)  # (K,)
    image_class = node(
        "Gather", [selected, _const(inits, p + "v/cols01", [0, 1], np.int64)], "v/image_class", axis=1
    )
    theirs = node("Gather", [boxes, image], "v/boxes", axis=0)  # (K, P, 4)
    weight = node("GatherND", [scores, image_class], "v/scores")  # (K, P)
    mine = node("Unsqueeze", [picked, _const(inits, p + "v/axis1", [1], np.int64)], "v/mine")  # (K, 1, 4)
    axis2 = _const(inits, p + "v/axis2", [2], np.int64)

    def part(tensor, start, name):
        return node(
            "Slice",
            [
                tensor,
                _const(inits, p + f"v/{name}_s", [start], np.int64),
                _const(inits, p + f"v/{name}_e", [start + 2], np.int64),
                axis2,
            ],
            f"v/{name}",
        )

    def area(tensor, name):
        wh = node("Sub", [part(tensor, 2, name + "_hi"), part(tensor, 0, name + "_lo")], f"v/{name}_wh")
        wh = node("Max", [wh, _const(inits, p + f"v/{name}_zero", 0.0)], f"v/{name}_whpos")
        return node("ReduceProd", [wh], f"v/{name}_area", axes=[2], keepdims=0)

    low = node("Max", [part(mine, 0, "m_lo2"), part(theirs, 0, "t_lo2")], "v/i_lo")
    high = node("Min", [part(mine, 2, "m_hi2"), part(theirs, 2, "t_hi2")], "v/i_hi")
    inter = node("Concat", [low, high], "v/inter_box", axis=2)
    inter = area(inter, "inter")
    union = node(
        "Sub", [node("Add", [area(mine, "mine"), area(theirs, "theirs")], "v/sum"), inter], "v/union"
    )
    iou = node("Div", [inter, node("Max", [union, _const(inits, p + "v/eps", 1e-9)], "v/union_pos")], "v/iou")
    close = node(
        "Cast",
        [node("GreaterOrEqual", [iou, _const(inits, p + "v/vote_iou", vote_iou)], "v/close_b")],
        "v/close",
        to=TensorProto.FLOAT,
    )
    scored = node(
        "Cast",
        [node("Greater", [weight, _const(inits, p + "v/min_score", min_score)], "v/scored_b")],
        "v/scored",
        to=TensorProto.FLOAT,
    )
    w = node("Mul", [node("Mul", [weight, close], "v/w_close"), scored], "v/w")  # (K, P)
    w3 = node("Unsqueeze", [w, axis2], "v/w3")
    total = node("ReduceSum", [node("Mul", [w3, theirs], "v/weighted"), p + "v/axis1"], "v/total", keepdims=0)
    norm = node("ReduceSum", [w, p + "v/axis1"], "v/norm", keepdims=1)  # the picked cell itself is always in
    return node("Div", [total, node("Max", [norm, p + "v/eps"], "v/norm_pos")], "v/voted")


def build_detector_graph(
    backbone: Backbone,
    neck: DetectionNeck,
    head,
    n_classes: int,
    graph_dir,
    refiner=None,
    dedupe_iou: float | None = DEDUPE_IOU,
    test_views=("identity",),
    decay_iou: float | None = DECAY_IOU,
) -> onnx.ModelProto:
    """One graph: ``image`` + ``image_size`` -> backbone -> neck -> head -> decoding -> NMS [-> box
    refinement] [-> duplicates dropped] -> ``detections``; with more than one of ``test_views``,
    the photo in each view as one batch and their boxes fused (``detection.tta``)."""
    model = backbone.load_onnx(graph_dir)
    graph = model.graph
    n_nodes, n_inits = neck_nodes(neck)
    weight, bias = head.folded()
    if len(test_views) > 1:
        _looking_in_views(graph, backbone.input_name, neck, test_views)
        sizes, output = tta.PREFIX + "sizes", tta.PREFIX + "rows"
    else:
        sizes, output = SIZE_INPUT, OUTPUT_NAME
    d_nodes, d_inits = decode_nodes(
        neck,
        n_classes,
        weight,
        bias,
        refiner=refiner,
        dedupe_iou=dedupe_iou,
        decay_iou=decay_iou if len(test_views) == 1 else None,  # with views: once, after their fusion
        sizes=sizes,
        output=output,
    )
    if len(test_views) > 1:
        f_nodes, f_inits = tta.fuse_nodes(
            output, SIZE_INPUT, test_views, dedupe_iou or DEDUPE_IOU, OUTPUT_NAME, decay_iou=decay_iou
        )
        d_nodes += f_nodes + [helper.make_node("Identity", [SIZE_INPUT], [SIZES_OUTPUT], name="det/sizes")]
        d_inits += f_inits
    graph.node.extend(n_nodes + d_nodes)
    graph.initializer.extend(n_inits + d_inits)
    graph.input.append(helper.make_tensor_value_info(SIZE_INPUT, TensorProto.FLOAT, ["N", 2]))
    del graph.output[:]
    graph.output.extend(
        [
            helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["K", 7]),
            helper.make_tensor_value_info(SIZES_OUTPUT, TensorProto.FLOAT, ["N", 2]),
        ]
    )
    graph.name = "modeldesk_detector"
    onnx.checker.check_model(model)
    return model


def _looking_in_views(graph, image: str, neck: DetectionNeck, test_views) -> None:
    """Make the backbone read the photo in every test view (``detection.tta``): the view nodes go
    first, and the backbone's nodes read their batch instead of ``image``."""
    batch = tta.PREFIX + "batch"
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name == image:
                node.input[k] = batch
    v_nodes, v_inits = tta.input_nodes(test_views, image, batch, SIZE_INPUT, tta.PREFIX + "sizes", neck.size)
    backbone_nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(v_nodes + backbone_nodes)
    graph.initializer.extend(v_inits)

"""Dropping duplicate boxes after refinement, in the graph and in numpy.

NMS runs on the head's boxes, before box voting and refinement; two kept boxes of one object that
overlapped less than its threshold are often moved onto the same object by the refiner, and the
second one is then a false box with a high score (on raccoon_voc most high-scoring false boxes were
such duplicates: IoU 0.8-0.97 with a better-scored kept box). After refinement, a box is dropped when a
box of the same image and class with a strictly higher score overlaps it by more than ``iou``
(Fast NMS, as YOLACT: every pair at once, so it is a handful of matrix nodes in the graph).

With ``decay``, a box that a better one overlaps by more than ``decay`` but not more than ``iou`` is
kept with its score multiplied by 1 - that overlap (the largest, linear Soft-NMS, Bodla et al. 2017):
two neighbouring objects whose boxes the refiner widened toward each other both stay, the second one
ranked lower, where a hard drop lost it.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from modeldesk.trainers.detection.metrics import box_iou
from modeldesk.trainers.detection.onnx_parts import Parts


def duplicate_nodes(
    rows: str, iou: float, prefix: str, *, ties: bool = False, decay: float | None = None
) -> tuple[list, list, str]:
    """Nodes from detection rows (K, 7: image, x0, y0, x1, y1, score, class) to the rows no better
    box of their image and class overlaps by more than ``iou`` (same order). With ``ties``, of two
    such boxes with the same score the earlier row is the better one (fused boxes of one object
    come out the same several times, ``detection.tta``). With ``decay``, the scores of the kept rows
    that a better one overlaps by more than ``decay`` are lowered (see the module's docstring)."""
    parts = Parts(prefix)
    const, node = parts.const, parts.node
    axis = const("axis1", [1])

    def column(start, stop, name):
        return parts.columns(rows, start, stop, name, axis)

    overlap = iou_matrix_nodes(column(1, 5, "boxes"), axis, node, const)
    close = node("Greater", [overlap, const("iou_threshold", iou, np.float32)], "close")

    def pairs(start, name, op):  # [i, j]: op(column of j, column of i)
        col = column(start, start + 1, name)  # (K, 1)
        return node(op, [node("Transpose", [col], name + "_row", perm=[1, 0]), col], name + "_pairs")

    same_image = pairs(0, "image", "Equal")
    same_class = pairs(6, "class", "Equal")
    better = pairs(5, "score", "Greater")  # j scores strictly higher than i
    if ties:
        order = node(
            "Cast",
            [
                node(
                    "Range",
                    [
                        const("zero_i", 0),
                        node(
                            "Squeeze",
                            [
                                node(
                                    "Slice",
                                    [node("Shape", [rows], "shape"), const("k_s", [0]), const("k_e", [1])],
                                    "k1",
                                )
                            ],
                            "k",
                        ),
                        const("one_i", 1),
                    ],
                    "order_i",
                )
            ],
            "order",
            to=TensorProto.FLOAT,
        )
        order = node("Unsqueeze", [order, axis], "order_col")  # (K, 1)
        earlier = node("Less", [node("Transpose", [order], "order_row", perm=[1, 0]), order], "earlier")
        equal = pairs(5, "score_eq", "Equal")
        better = node("Or", [better, node("And", [equal, earlier], "tied_earlier")], "better_or_tied")
    rivals = node("And", [better, node("And", [same_image, same_class], "same")], "rivals")
    beaten = node("And", [close, rivals], "beaten")
    beaten = node("Cast", [beaten], "beaten_f", to=TensorProto.FLOAT)
    beaters = node("ReduceSum", [beaten, axis], "beaters", keepdims=0)  # (K,); a sum is defined at K = 0
    keep = node("Less", [beaters, const("half", 0.5, np.float32)], "keep")
    if decay is not None:
        rival_overlap = node(
            "Mul", [overlap, node("Cast", [rivals], "rivals_f", to=TensorProto.FLOAT)], "rival_overlap"
        )
        worst = node("ReduceMax", [rival_overlap], "worst", axes=[1], keepdims=1)  # (K, 1)
        one = const("one", 1.0, np.float32)
        factor = node(
            "Where",
            [
                node("Greater", [worst, const("decay", decay, np.float32)], "decays"),
                node("Sub", [one, worst], "left"),
                one,
            ],
            "factor",
        )
        score = node("Mul", [column(5, 6, "score_col"), factor], "decayed")
        rows = node(
            "Concat", [column(0, 5, "before_score"), score, column(6, 7, "after_score")], "rescored", axis=1
        )
    rows = node("Compress", [rows, keep], "rows", axis=0)
    return parts.nodes, parts.inits, rows


def iou_matrix_nodes(boxes: str, axis1: str, node, const) -> str:
    """Nodes from boxes (K, 4) to their IoU matrix (K, K). ``axis1`` names the int64 [1] constant;
    ``node(op, inputs, name, **attrs)`` and ``const(name, value, dtype)`` add a node and an
    initializer under the caller's prefix."""
    mine = node("Unsqueeze", [boxes, axis1], "mine")  # (K, 1, 4)
    theirs = node("Unsqueeze", [boxes, const("axis0", [0])], "theirs")  # (1, K, 4)
    axis2 = const("axis2", [2])

    def part(tensor, start, name):
        return node(
            "Slice", [tensor, const(name + "_s", [start]), const(name + "_e", [start + 2]), axis2], name
        )

    def area(low, high, name):
        wh = node(
            "Max",
            [node("Sub", [high, low], name + "_wh0"), const(name + "_0", 0.0, np.float32)],
            name + "_wh",
        )
        return node("ReduceProd", [wh], name, axes=[2], keepdims=0)

    low = node("Max", [part(mine, 0, "m_lo"), part(theirs, 0, "t_lo")], "i_lo")
    high = node("Min", [part(mine, 2, "m_hi"), part(theirs, 2, "t_hi")], "i_hi")
    inter = area(low, high, "inter")  # (K, K)
    mine_area = area(part(mine, 0, "m_lo2"), part(mine, 2, "m_hi2"), "mine_area")  # (K, 1)
    their_area = area(part(theirs, 0, "t_lo2"), part(theirs, 2, "t_hi2"), "their_area")  # (1, K)
    union = node("Sub", [node("Add", [mine_area, their_area], "sum"), inter], "union")
    return node("Div", [inter, node("Max", [union, const("eps", 1e-9, np.float32)], "union_pos")], "iou")


def drop_duplicates(
    predictions: list[dict], iou: float, *, ties: bool = False, decay: float | None = None
) -> list[dict]:
    """The numpy twin of :func:`duplicate_nodes` for one image's ``{"label", "score", "box"}`` list."""
    if not predictions:
        return predictions
    boxes = np.array([p["box"] for p in predictions], np.float32)
    scores = np.array([p["score"] for p in predictions], np.float32)
    labels = np.array([str(p["label"]) for p in predictions], object)
    better = scores[None, :] > scores[:, None]
    if ties:
        order = np.arange(len(predictions))
        better |= (scores[None, :] == scores[:, None]) & (order[None, :] < order[:, None])
    rivals = better & (labels[None] == labels[:, None])
    overlap = box_iou(boxes, boxes).astype(np.float32)
    worst = np.where(rivals, overlap, np.float32(0)).max(axis=1)
    decays = worst > decay if decay is not None else np.zeros(len(predictions), bool)
    left = scores * (np.float32(1) - worst)
    return [
        {**p, "score": float(lowered)} if decayed else p
        for p, lowered, decayed, dropped in zip(predictions, left, decays, worst > iou)
        if not dropped
    ]

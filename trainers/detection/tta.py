"""Test-time views of a detector: the photo looked at in several of its training views, boxes fused.

The graph runs the letterboxed photo in each of the template's ``test_views`` as one batch, view
after view (``det/tta/concat``). Each view's boxes come out in the photo's pixels because each view
is given the size its picture stands for (:func:`view_size`): the shrunk view's picture is 75% as
large, so its photo is taken as 1/0.75 as large; the mirrored one is as wide as the letterbox's
longer side. The head, NMS, box voting, the refiner and the duplicate drop then run unchanged on the
bigger batch; afterwards each box is brought back onto the photo (:func:`view_back`: a mirrored box
is mirrored again) and the views' boxes are fused (:func:`fuse_views`): every box becomes the
score-weighted mean of the best box of each view that overlaps it by at least :data:`FUSE_IOU`
(itself in its own view), scored by the mean over the views of those best scores, so a box that only
one view saw counts for a third of one that all three saw. The fused boxes of one object come out
alike, once per view, and the duplicate drop keeps the first.

Every node is named under ``det/tta/``, so an 8-bit copy keeps them in float (``deploy.quantize``),
and ``deploy.compress.one_view`` can cut a detector back to the photo as it is: the concatenations
pass their first input on and ``det/tta/count`` becomes 1, which leaves each box as it was.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from modeldesk.trainers.detection.duplicates import drop_duplicates, duplicate_nodes, iou_matrix_nodes
from modeldesk.trainers.detection.metrics import box_iou
from modeldesk.trainers.detection.onnx_parts import Parts
from modeldesk.trainers.views import shrunk_size, view_nodes

PREFIX = "det/tta/"
#: a box of one view joins a box of another when they overlap this much. 4-fold CV on the 78
#: raccoon photos outside the held-out quarter (fast template, identity + shrink): 0.7 beat 0.55
FUSE_IOU = 0.7
#: the views a detector can look in at test time (their boxes can be brought back onto the photo)
TEST_VIEWS = ("identity", "hflip", "shrink")


def check_test_views(test_views, views) -> None:
    """ValueError unless ``test_views`` starts with ``identity`` and are training ``views`` (their
    maps are cached, so training scores exactly what the graph will compute) that can be undone."""
    test_views, views = tuple(test_views), tuple(views)
    if not test_views or test_views[0] != "identity":
        raise ValueError(f"test views must start with 'identity', not {test_views!r}")
    unknown = [v for v in test_views if v not in TEST_VIEWS]
    if unknown:
        raise ValueError(f"a detector cannot look in the {unknown[0]!r} view; choose from {TEST_VIEWS}")
    missing = [v for v in test_views if v not in views]
    if missing:
        raise ValueError(f"test view {missing[0]!r} is not a training view ({', '.join(views)})")
    if len(set(test_views)) != len(test_views):
        raise ValueError(f"test views repeat: {test_views!r}")


def view_size(view: str, width: float, height: float, size: int) -> tuple[float, float]:
    """The (width, height) a photo of ``width`` x ``height`` is taken to have in ``view`` of its
    ``size`` px letterbox, so that decoding puts the view's boxes in the photo's pixels (mirrored
    for ``hflip``, :func:`view_back` mirrors them again)."""
    if view == "identity":
        return float(width), float(height)
    if view == "hflip":
        return float(max(width, height)), float(height)
    if view == "shrink":
        grow = size / shrunk_size(size)
        return float(width) * grow, float(height) * grow
    raise ValueError(f"a detector cannot look in the {view!r} view")


def view_back(boxes, view: str, width: float, height: float) -> np.ndarray:
    """(K, 4) boxes decoded in ``view`` (with :func:`view_size`) as they sit on the photo: mirrored
    back for ``hflip``, and clipped to the photo."""
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    if view == "hflip":
        longer = max(width, height)
        boxes = np.stack([longer - boxes[:, 2], boxes[:, 1], longer - boxes[:, 0], boxes[:, 3]], axis=1)
    return np.minimum(np.maximum(boxes, 0.0), [width, height, width, height])


def fuse_views(per_view: list[list[dict]], fuse_iou: float = FUSE_IOU) -> list[dict]:
    """The numpy twin of the graph's fusion for one photo: ``per_view[v]`` is view v's list of
    ``{"label", "score", "box"}`` on the photo; every box is fused with the best box of each view
    that overlaps it (see the module's docstring), best score first, not yet deduplicated."""
    rows = [(v, p) for v, predictions in enumerate(per_view) for p in predictions]
    if not rows:
        return []
    boxes = np.array([p["box"] for _, p in rows], np.float32)
    scores = np.array([p["score"] for _, p in rows], np.float32)
    labels = np.array([str(p["label"]) for _, p in rows], object)
    views = np.array([v for v, _ in rows])
    joined = (labels[:, None] == labels[None]) & (box_iou(boxes, boxes) >= fuse_iou)
    joined &= (views[:, None] != views[None]) | np.eye(len(rows), dtype=bool)  # itself in its own view
    total, weight = np.zeros((len(rows), 4), np.float32), np.zeros(len(rows), np.float32)
    for v in range(len(per_view)):
        w = np.where(joined & (views[None] == v), scores[None], np.float32(0))
        best_score = w.max(axis=1)
        best = ((w == best_score[:, None]) & (w > 0)).astype(np.float32)
        best_box = best @ boxes / np.maximum(best.sum(axis=1, keepdims=True), 1e-9)
        total += best_score[:, None] * best_box
        weight += best_score
    fused = total / np.maximum(weight, 1e-9)[:, None]
    return [
        {"label": p["label"], "score": float(s), "box": box.tolist()}
        for (_, p), s, box in zip(rows, weight / np.float32(len(per_view)), fused)
    ]


def fused_predictions(
    per_view: list[list[dict]], dedupe_iou: float, decay_iou: float | None = None
) -> list[dict]:
    """:func:`fuse_views`, then the duplicates dropped (ties to the earlier box) and the scores of close
    boxes lowered (``detection.duplicates``), best score first."""
    fused = drop_duplicates(fuse_views(per_view), dedupe_iou, ties=True, decay=decay_iou)
    return sorted(fused, key=lambda p: -p["score"])


def input_nodes(test_views, image: str, batch: str, sizes: str, view_sizes: str, size: int):
    """Nodes from the ``image`` (N, 3, S, S) and ``sizes`` (N, 2) inputs to the views' ``batch``
    (V * N, 3, S, S) and ``view_sizes`` (V * N, 2, see :func:`view_size`), view after view; (nodes,
    inits)."""
    parts, pictures, sized = Parts(PREFIX), [], []
    const, node = parts.const, parts.node
    for view in test_views:
        v_nodes, v_inits, picture = view_nodes(view, image, f"{PREFIX}{view}/", size)
        parts.nodes += v_nodes
        parts.inits += v_inits
        pictures.append(picture)
        if view == "identity":
            sized.append(sizes)
        elif view == "hflip":  # (the letterbox's longer side, height)
            longer = node("ReduceMax", [sizes], "hflip/longer", axes=[1], keepdims=1)
            height = node(
                "Slice",
                [sizes, const("hflip/c1", [1]), const("hflip/c2", [2]), const("hflip/axis1", [1])],
                "hflip/height",
            )
            sized.append(node("Concat", [longer, height], "hflip/sizes", axis=1))
        else:
            grow = view_size(view, 1.0, 1.0, size)[0]
            sized.append(node("Mul", [sizes, const(f"{view}/grow", grow, np.float32)], f"{view}/sizes"))
    parts.nodes.append(helper.make_node("Concat", pictures, [batch], name=f"{PREFIX}concat", axis=0))
    parts.nodes.append(helper.make_node("Concat", sized, [view_sizes], name=f"{PREFIX}size_concat", axis=0))
    return parts.nodes, parts.inits


def fuse_nodes(
    rows: str,
    sizes: str,
    test_views,
    dedupe_iou: float,
    output: str,
    fuse_iou: float = FUSE_IOU,
    *,
    decay_iou: float | None = None,
):
    """Nodes from the views' detection rows (K, 7; image index over the V * N views' pictures) and
    the photos' ``sizes`` (N, 2) to the fused rows ``output`` (K', 7) on the photos; (nodes, inits)."""
    parts = Parts(PREFIX)
    const, node = parts.const, parts.node
    axis1 = const("axis1", [1])

    def column(start, stop, name):
        return parts.columns(rows, start, stop, name, axis1)

    # which view and photo each row is: image = view * N + photo
    image = node("Cast", [column(0, 1, "image_f")], "image_i", to=TensorProto.INT64)  # (K, 1)
    n = node("Slice", [node("Shape", [sizes], "shape"), const("n_s", [0]), const("n_e", [1])], "n")
    view = node("Div", [image, n], "view_i")
    photo = node("Sub", [image, node("Mul", [view, n], "view_n")], "photo_i")
    own = node("Gather", [sizes, node("Squeeze", [photo, axis1], "photo_k")], "own", axis=0)  # (K, 2)
    longer = node("ReduceMax", [own], "own_longer", axes=[1], keepdims=1)
    flips = [1.0 if v == "hflip" else 0.0 for v in test_views]
    flip = node("Gather", [const("flips", flips, np.float32), view], "flip", axis=0)  # (K, 1)
    x0, y0, x1, y1 = (column(c, c + 1, name) for c, name in ((1, "x0"), (2, "y0"), (3, "x1"), (4, "y1")))

    def unflipped(x, other, name):  # x + flip * ((longer - other) - x)
        mirrored = node("Sub", [longer, other], name + "_m")
        return node(
            "Add", [x, node("Mul", [flip, node("Sub", [mirrored, x], name + "_d")], name + "_fd")], name
        )

    boxes = node("Concat", [unflipped(x0, x1, "bx0"), y0, unflipped(x1, x0, "bx1"), y1], "boxes_v", axis=1)
    upper = node("Concat", [own, own], "upper", axis=1)
    boxes = node("Min", [node("Max", [boxes, const("zero", 0.0, np.float32)], "boxes_pos"), upper], "boxes")
    score = column(5, 6, "score")  # (K, 1)
    label = column(6, 7, "label")

    def pairs(tensor, name, op):  # [i, j]: op(row j, row i)
        return node(op, [node("Transpose", [tensor], name + "_row", perm=[1, 0]), tensor], name + "_pairs")

    overlap = iou_matrix_nodes(boxes, axis1, node, const)
    # a Reshape, not a Transpose: ONNX Runtime would move a Transpose past the comparison with a
    # constant below, under a name outside det/, and the quantizer then warns about its bool input
    their_view = node("Reshape", [view, const("row_shape", [1, -1])], "view_row")
    # in its own view a box joins only itself (another box there is one it was not a duplicate of)
    itself = node("Cast", [node("EyeLike", [overlap], "eye_f")], "itself", to=TensorProto.BOOL)
    other_view = node("Not", [node("Equal", [their_view, view], "same_view")], "other_view")
    joined = node(
        "And",
        [
            node("And", [pairs(photo, "photo", "Equal"), pairs(label, "label", "Equal")], "same"),
            node("GreaterOrEqual", [overlap, const("fuse_iou", fuse_iou, np.float32)], "close"),
        ],
        "joined_any",
    )
    joined = node("And", [joined, node("Or", [other_view, itself], "may_join")], "joined")
    their_score = node("Transpose", [score], "score_row", perm=[1, 0])  # (1, K)
    zero = const("zero_k", 0.0, np.float32)
    eps = const("fuse_eps", 1e-9, np.float32)
    total = weight = None
    for v in range(len(test_views)):
        s = f"v{v}/"
        in_view = node(
            "And", [joined, node("Equal", [their_view, const(s + "index", v)], s + "theirs")], s + "in"
        )
        w = node("Mul", [node("Cast", [in_view], s + "in_f", to=TensorProto.FLOAT), their_score], s + "w")
        best_score = node("ReduceMax", [w], s + "best_score", axes=[1], keepdims=1)  # (K, 1)
        best = node(
            "And",
            [node("Equal", [w, best_score], s + "is_best"), node("Greater", [w, zero], s + "positive")],
            s + "best_b",
        )
        best = node("Cast", [best], s + "best", to=TensorProto.FLOAT)
        count = node("Max", [node("ReduceSum", [best, axis1], s + "count0", keepdims=1), eps], s + "count")
        best_box = node("Div", [node("MatMul", [best, boxes], s + "sum_box"), count], s + "best_box")
        part = node("Mul", [best_score, best_box], s + "weighted")
        total = part if total is None else node("Add", [total, part], s + "total")
        weight = best_score if weight is None else node("Add", [weight, best_score], s + "weight")
    fused = node("Div", [total, node("Max", [weight, eps], "weight_pos")], "fused_boxes")
    fused_score = node("Div", [weight, const("count", float(len(test_views)), np.float32)], "fused_score")
    photo_f = node("Cast", [photo], "photo_f", to=TensorProto.FLOAT)
    fused_rows = node("Concat", [photo_f, fused, fused_score, label], "fused_rows", axis=1)
    u_nodes, u_inits, kept = duplicate_nodes(
        fused_rows, dedupe_iou, PREFIX + "dedupe/", ties=True, decay=decay_iou
    )
    parts.nodes += u_nodes
    parts.inits += u_inits
    parts.nodes.append(helper.make_node("Identity", [kept], [output], name=PREFIX + "out"))
    return parts.nodes, parts.inits

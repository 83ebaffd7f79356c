"""The exported anomaly model as one ONNX graph: the photo -> a score, a yes/no and a heatmap.

Inputs ``image`` (N, 3, S, S), the photo squashed to S, and ``image_size`` (N, 2), its (width,
height). ``image`` -> backbone -> patch features (``features.patch_nodes``) -> per patch the distance
to normal (the memory bank as a constant: ``|p|^2 - 2 p.M^T + |m|^2`` by MatMul, ReduceMin over the
bank; or the Mahalanobis distance to one Gaussian, or to its position's own) -> a Gaussian smoothing on the stride-8 grid
-> ``score`` (N,): the mean of the top-k patch scores, ``anomalous`` (N,) score >= threshold, and
``heatmap`` (N, S, S) the patch scores upsampled bilinearly over the whole photo. ``sizes`` repeats
``image_size`` so the reader can scale the heatmap to the photo's own pixels.

:func:`scoring_model` is the same scoring on ``patches`` alone: training scores its cached features
through it, so the app's numbers and the exported graph's come from the same nodes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from modeldesk.trainers.anomaly.features import PATCHES, AnomalyNeck, padded_backbone, patch_nodes
from modeldesk.trainers.backbones import Backbone

SIZE_INPUT = "image_size"
SCORE_OUTPUT = "score"
FLAG_OUTPUT = "anomalous"
HEATMAP_OUTPUT = "heatmap"
SIZES_OUTPUT = "sizes"
GRID_OUTPUT = "patch_scores"  # (N, G, G): the smoothed grid, an output of the scoring model only


def _smoothing(grid: int, sigma: float = 0.75) -> tuple[np.ndarray, np.ndarray]:
    """A Gaussian kernel (1, 1, K, K), K = 2 * ceil(2 sigma) + 1, and the (1, 1, G, G) sums of its
    weights inside the grid (dividing by them keeps the border from fading)."""
    radius = max(1, int(np.ceil(2 * sigma)))
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    k = np.exp(-(x[:, None] ** 2 + x[None] ** 2) / (2 * sigma**2))
    k /= k.sum()
    side = 2 * radius + 1
    ones = np.pad(np.ones((grid, grid)), radius)
    norm = np.zeros((grid, grid))
    for dy in range(side):
        for dx in range(side):
            norm += k[dy, dx] * ones[dy : dy + grid, dx : dx + grid]
    return k.reshape(1, 1, side, side).astype(np.float32), norm.reshape(1, 1, grid, grid).astype(np.float32)


def score_nodes(
    neck: AnomalyNeck,
    normal: dict,
    top_k: int,
    threshold: float,
    border: int = 0,
    prefix: str = "anomaly/",
    sigma: float = 0.75,
):
    """Nodes from ``patches`` (N, G*G, D) to ``patch_scores`` (N, G, G), ``score``, ``anomalous`` and
    ``heatmap``. ``normal`` is ``{"bank": (K, D)}``, ``{"mean": (D,), "whiten": (D, D)}`` or one Gaussian
    per position ``{"mean": (P, D), "whiten": (P, D, D)}``; the image
    score leaves out the outer ``border`` rings of cells (the heatmap keeps them); ``sigma``: the
    Gaussian smoothing of the patch scores, in cells."""
    nodes, inits, p = [], [], prefix

    def const(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), p + name))
        return p + name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [p + name], name=p + name, **attrs))
        return p + name

    if "bank" in normal:
        bank = np.asarray(normal["bank"], np.float32)
        pp = node("ReduceSumSquare", [PATCHES], "pp", axes=[2], keepdims=1)  # (N, P, 1)
        dot = node("MatMul", [PATCHES, const("bank_t", -2.0 * bank.T)], "dot")  # (N, P, K)
        d2 = node("Add", [node("Add", [dot, pp], "d2a"), const("bank_sq", (bank**2).sum(axis=1))], "d2")
        d2 = node("ReduceMin", [d2], "d2min", axes=[2], keepdims=0)  # (N, P)
    elif np.ndim(normal["whiten"]) == 3:  # one Gaussian per position: (N, P, 1, D) @ (P, D, D)
        centred = node("Sub", [PATCHES, const("mean", normal["mean"])], "centred")
        rows = node("Unsqueeze", [centred, const("axis2", [2], np.int64)], "rows")
        white = node("MatMul", [rows, const("whiten", normal["whiten"])], "white")
        d2 = node("ReduceSumSquare", [white], "d2min", axes=[2, 3], keepdims=0)
    else:
        centred = node("Sub", [PATCHES, const("mean", normal["mean"])], "centred")
        white = node("MatMul", [centred, const("whiten", normal["whiten"])], "white")
        d2 = node("ReduceSumSquare", [white], "d2min", axes=[2], keepdims=0)
    dist = node("Sqrt", [node("Max", [d2, const("zero", 0.0)], "d2pos")], "dist")
    grid = neck.grid
    square = node("Reshape", [dist, const("grid_shape", [-1, 1, grid, grid], np.int64)], "square")
    kernel, norm = _smoothing(grid, sigma)
    side, pad = kernel.shape[-1], kernel.shape[-1] // 2
    smooth = node(
        "Div",
        [
            node(
                "Conv", [square, const("kernel", kernel)], "blur", kernel_shape=[side, side], pads=[pad] * 4
            ),
            const("norm", norm),
        ],
        "smooth",
    )  # (N, 1, G, G)
    nodes.append(
        helper.make_node("Squeeze", [smooth, const("axis1", [1], np.int64)], [GRID_OUTPUT], name=p + "grid")
    )
    inner, side = smooth, grid
    if border:
        side = grid - 2 * border
        inner = node(
            "Slice",
            [
                smooth,
                const("b_start", [border, border], np.int64),
                const("b_end", [grid - border] * 2, np.int64),
                const("b_axes", [2, 3], np.int64),
            ],
            "inner",
        )
    flat = node("Reshape", [inner, const("flat_shape", [0, side * side], np.int64)], "flat")
    k = max(1, min(int(top_k), side * side))
    top, _ = (p + "top", p + "top_idx")
    nodes.append(
        helper.make_node("TopK", [flat, const("k", [k], np.int64)], [top, p + "top_idx"], name=top, axis=1)
    )
    nodes.append(
        helper.make_node("ReduceMean", [top], [SCORE_OUTPUT], name=p + "score", axes=[1], keepdims=0)
    )
    nodes.append(
        helper.make_node(
            "GreaterOrEqual",
            [SCORE_OUTPUT, const("threshold", float(threshold))],
            [FLAG_OUTPUT],
            name=p + "flag",
        )
    )
    scale = float(neck.stride)
    up = node(
        "Resize",
        [smooth, "", const("up_scales", [1, 1, scale, scale])],
        "up",
        mode="linear",
        coordinate_transformation_mode="half_pixel",
    )
    nodes.append(helper.make_node("Squeeze", [up, p + "axis1"], [HEATMAP_OUTPUT], name=p + "heatmap"))
    return nodes, inits


def _outputs(neck: AnomalyNeck, with_grid: bool) -> list:
    out = [
        helper.make_tensor_value_info(SCORE_OUTPUT, TensorProto.FLOAT, ["N"]),
        helper.make_tensor_value_info(FLAG_OUTPUT, TensorProto.BOOL, ["N"]),
        helper.make_tensor_value_info(HEATMAP_OUTPUT, TensorProto.FLOAT, ["N", neck.size, neck.size]),
    ]
    if with_grid:
        out.append(helper.make_tensor_value_info(GRID_OUTPUT, TensorProto.FLOAT, ["N", neck.grid, neck.grid]))
    return out


def scoring_model(
    neck: AnomalyNeck,
    dim: int,
    normal: dict,
    top_k: int,
    threshold: float,
    border: int = 0,
    sigma: float = 0.75,
) -> onnx.ModelProto:
    """``patches`` (N, G*G, dim) -> the scores, flags, heatmaps and smoothed grids (training's scorer)."""
    nodes, inits = score_nodes(neck, normal, top_k, threshold, border, sigma=sigma)
    inputs = [helper.make_tensor_value_info(PATCHES, TensorProto.FLOAT, ["N", neck.grid**2, dim])]
    graph = helper.make_graph(nodes, "anomaly_scoring", inputs, _outputs(neck, True), inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="modeldesk")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_anomaly_graph(
    backbone: Backbone,
    neck: AnomalyNeck,
    projection,
    normal: dict,
    top_k: int,
    threshold: float,
    graph_dir,
    border: int = 0,
    sigma: float = 0.75,
) -> onnx.ModelProto:
    """One graph: ``image`` + ``image_size`` -> backbone -> patches -> ``score``, ``anomalous``, ``heatmap``, ``sizes``."""
    model = padded_backbone(backbone, neck, graph_dir)
    graph = model.graph
    p_nodes, p_inits = patch_nodes(neck, projection)
    s_nodes, s_inits = score_nodes(neck, normal, top_k, threshold, border, sigma=sigma)
    graph.node.extend(p_nodes + s_nodes)
    graph.node.append(helper.make_node("Identity", [SIZE_INPUT], [SIZES_OUTPUT], name="anomaly/sizes"))
    graph.initializer.extend(p_inits + s_inits)
    graph.input.append(helper.make_tensor_value_info(SIZE_INPUT, TensorProto.FLOAT, ["N", 2]))
    del graph.output[:]
    graph.output.extend(
        _outputs(neck, False) + [helper.make_tensor_value_info(SIZES_OUTPUT, TensorProto.FLOAT, ["N", 2])]
    )
    graph.name = "modeldesk_anomaly"
    onnx.checker.check_model(model)
    return model

"""The exported segmentation model as one ONNX graph: the photo -> a mask at the photo's size.

Inputs ``image`` (N, 3, S, S), the photo squashed to S, and ``image_size`` (N, 2), its (width, height).
``image`` -> backbone -> the neck's feature grid (``features.neck_nodes``) -> the head as 1x1
convolutions -> ``logits`` (N, C, G, G) (with test-time flip: the mirrored photo too, its logits
mirrored back and averaged) -> the tail: logits resized bilinearly to the photo's size (at most
``MAX_SIDE`` on the longer side, so a huge photo costs bounded memory), the class of each pixel,
then nearest-resized to the photo's exact size -> ``mask`` (N, H, W) uint8 and ``class_scores``
(N, C, G, G) the softmax on the grid. One photo per run: the mask's size is the photo's.

:func:`tail_model` is the tail alone: training turns its logits into masks through it, so the app's
masks and the exported graph's come from the same nodes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from modeldesk.trainers.backbones import Backbone
from modeldesk.trainers.segmentation.features import FEATURES, SegNeck, neck_nodes

SIZE_INPUT = "image_size"
LOGITS = "seg_logits"
MASK_OUTPUT = "mask"
SCORES_OUTPUT = "class_scores"
#: the longest side the logits are resized to before the argmax (past it the mask is upsampled)
MAX_SIDE = 2048
#: the logit of a class no training pixel showed
ABSENT_LOGIT = -30.0


def head_layers(head, n_classes: int) -> list:
    """The fitted head's dense layers [(W (D_in, D_out), b)], its output widened to all ``n_classes``
    (a class without training rows gets a very low logit)."""
    layers = head._folded_layers()
    W, b = layers[-1]
    present = np.asarray(head.classes_, np.int64)
    wide_W = np.zeros((W.shape[0], n_classes))
    wide_b = np.full(n_classes, ABSENT_LOGIT)
    wide_W[:, present], wide_b[present] = W, b
    return [*layers[:-1], (wide_W, wide_b)]


def head_nodes(layers, source: str, output: str, prefix: str = "seghead/") -> tuple[list, list]:
    """The dense layers as 1x1 convolutions with ReLU between: (N, D, G, G) -> (N, C, G, G)."""
    nodes, inits, current = [], [], source
    for i, (W, b) in enumerate(layers):
        w_name, b_name = f"{prefix}conv{i}/W", f"{prefix}conv{i}/b"
        weight = np.asarray(W, np.float32).T[:, :, None, None]
        inits.append(numpy_helper.from_array(np.ascontiguousarray(weight), w_name))
        inits.append(numpy_helper.from_array(np.asarray(b, np.float32), b_name))
        out = output if i == len(layers) - 1 else f"{prefix}conv{i}/out"
        nodes.append(
            helper.make_node(
                "Conv", [current, w_name, b_name], [out], name=f"{prefix}conv{i}", kernel_shape=[1, 1]
            )
        )
        current = out
        if i < len(layers) - 1:
            relu = f"{prefix}conv{i}/relu"
            nodes.append(helper.make_node("Relu", [current], [relu], name=relu))
            current = relu
    return nodes, inits


def head_logits(layers, features: np.ndarray) -> np.ndarray:
    """numpy twin of :func:`head_nodes`: (N, D, G, G) float32 -> (N, C, G, G) float32."""
    n, d, g, _ = features.shape
    x = features.transpose(0, 2, 3, 1).reshape(-1, d)
    for i, (W, b) in enumerate(layers):
        x = x @ np.asarray(W, np.float32) + np.asarray(b, np.float32)
        if i < len(layers) - 1:
            np.maximum(x, 0, out=x)
    return np.ascontiguousarray(x.reshape(n, g, g, -1).transpose(0, 3, 1, 2))


def _reverse_width(source: str, out: str, prefix: str, inits: list) -> onnx.NodeProto:
    names = [f"{prefix}rev/{k}" for k in ("starts", "ends", "axes", "steps")]
    for name, value in zip(names, ([-1], [np.iinfo(np.int64).min], [3], [-1])):
        if not any(i.name == name for i in inits):
            inits.append(numpy_helper.from_array(np.array(value, np.int64), name))
    return helper.make_node("Slice", [source, *names], [out], name=out)


REFINED = "seg_refined"
#: the guided filter's window radius (input pixels) and regularisation (squared units of the input's
#: normalised brightness, which spans about -1..1)
REFINE_RADIUS = 4
REFINE_EPS = 0.01


def refine_nodes(neck: SegNeck, image: str, prefix: str = "segref/") -> tuple[list, list]:
    """``seg_logits`` -> ``seg_refined`` (N, C, S, S): the class probabilities at the input's full
    resolution, guided-filtered (He et al.) on the photo's brightness so that class edges follow the
    photo's edges; ``image`` is the (N, 3, S, S) input."""
    nodes, inits = [], []

    def const(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), prefix + name))
        return prefix + name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [prefix + name], name=prefix + name, **attrs))
        return prefix + name

    k = 2 * REFINE_RADIUS + 1

    def box(source, name):
        return node(
            "AveragePool",
            [source],
            name,
            kernel_shape=[k, k],
            pads=[REFINE_RADIUS] * 4,
            strides=[1, 1],
            count_include_pad=0,
        )

    factor = float(neck.stride)
    up = node(
        "Resize",
        [LOGITS, "", const("scales", [1, 1, factor, factor])],
        "up",
        mode="linear",
        coordinate_transformation_mode="half_pixel",
    )
    p = node("Softmax", [up], "p", axis=1)
    guide = node("ReduceMean", [image], "guide", axes=[1], keepdims=1)
    mean_i = box(guide, "mean_i")
    var_i = node(
        "Sub",
        [box(node("Mul", [guide, guide], "ii"), "mean_ii"), node("Mul", [mean_i, mean_i], "mi2")],
        "var_i",
    )
    mean_p = box(p, "mean_p")
    cov = node(
        "Sub", [box(node("Mul", [guide, p], "ip"), "mean_ip"), node("Mul", [mean_i, mean_p], "mimp")], "cov"
    )
    a = node("Div", [cov, node("Add", [var_i, const("eps", REFINE_EPS)], "var_eps")], "a")
    b = node("Sub", [mean_p, node("Mul", [a, mean_i], "a_mi")], "b")
    nodes.append(
        helper.make_node(
            "Add",
            [node("Mul", [box(a, "mean_a"), guide], "qa"), box(b, "mean_b")],
            [REFINED],
            name=prefix + "q",
        )
    )
    return nodes, inits


def tail_nodes(source: str = LOGITS, prefix: str = "segtail/") -> tuple[list, list]:
    """``source`` (class logits or probabilities, any grid) + ``image_size`` -> ``mask`` (N, H, W)
    uint8 at the photo's size; ``seg_logits`` -> ``class_scores``."""
    nodes, inits = [], []

    def const(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), prefix + name))
        return prefix + name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [prefix + name], name=prefix + name, **attrs))
        return prefix + name

    first = node("Gather", [SIZE_INPUT, const("zero", 0, np.int64)], "first")  # (2,) width, height
    hw = node("Gather", [first, const("hw_order", [1, 0], np.int64)], "hw")
    hw = node("Max", [node("Round", [hw], "hw_round"), const("one", [1.0])], "hw_pos")
    longest = node("ReduceMax", [hw], "longest", keepdims=1)
    scale = node(
        "Min",
        [node("Div", [const("max_side", [float(MAX_SIDE)]), longest], "ratio"), const("unit", [1.0])],
        "scale",
    )
    inner = node(
        "Cast",
        [
            node(
                "Max",
                [node("Round", [node("Mul", [hw, scale], "inner_f")], "inner_r"), const("one_b", [1.0])],
                "inner_pos",
            )
        ],
        "inner",
        to=TensorProto.INT64,
    )
    batch_classes = node(
        "Slice",
        [node("Shape", [LOGITS], "shape"), const("s0", [0], np.int64), const("s2", [2], np.int64)],
        "nc",
    )
    up = node(
        "Resize",
        [source, "", "", node("Concat", [batch_classes, inner], "inner_sizes", axis=0)],
        "up",
        mode="linear",
        coordinate_transformation_mode="half_pixel",
    )
    label = node("Cast", [node("ArgMax", [up], "argmax", axis=1, keepdims=1)], "label", to=TensorProto.UINT8)
    batch_one = node(
        "Concat",
        [
            node("Slice", [batch_classes, const("z0", [0], np.int64), const("z1", [1], np.int64)], "n"),
            const("one_i", [1], np.int64),
        ],
        "n1",
        axis=0,
    )
    full = node(
        "Concat", [batch_one, node("Cast", [hw], "full_hw", to=TensorProto.INT64)], "full_sizes", axis=0
    )
    resized = node(
        "Resize",
        [label, "", "", full],
        "full",
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    nodes.append(
        helper.make_node(
            "Squeeze", [resized, const("axis1", [1], np.int64)], [MASK_OUTPUT], name=prefix + "mask"
        )
    )
    nodes.append(helper.make_node("Softmax", [LOGITS], [SCORES_OUTPUT], name=prefix + "scores", axis=1))
    return nodes, inits


def _outputs(n_classes: int, grid: int) -> list:
    return [
        helper.make_tensor_value_info(MASK_OUTPUT, TensorProto.UINT8, ["N", "H", "W"]),
        helper.make_tensor_value_info(SCORES_OUTPUT, TensorProto.FLOAT, ["N", n_classes, grid, grid]),
    ]


def _finish(graph) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="modeldesk")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


IMAGE = "image"


def tail_model(n_classes: int, neck: SegNeck, *, refine: bool = False) -> onnx.ModelProto:
    """``seg_logits`` (N, C, G, G) + ``image_size`` (N, 2) (+ ``image`` when refining) -> ``mask`` and
    ``class_scores``: the graph's last part alone (training's path)."""
    nodes, inits = refine_nodes(neck, IMAGE) if refine else ([], [])
    t_nodes, t_inits = tail_nodes(REFINED if refine else LOGITS)
    nodes, inits = nodes + t_nodes, inits + t_inits
    grid = neck.grid
    inputs = [
        helper.make_tensor_value_info(LOGITS, TensorProto.FLOAT, ["N", n_classes, grid, grid]),
        helper.make_tensor_value_info(SIZE_INPUT, TensorProto.FLOAT, ["N", 2]),
    ]
    if refine:
        inputs.append(helper.make_tensor_value_info(IMAGE, TensorProto.FLOAT, ["N", 3, neck.size, neck.size]))
    return _finish(helper.make_graph(nodes, "segmentation_tail", inputs, _outputs(n_classes, grid), inits))


def build_segmentation_graph(
    backbone: Backbone,
    neck: SegNeck,
    layers,
    n_classes: int,
    graph_dir,
    *,
    flip: bool = False,
    refine: bool = False,
) -> onnx.ModelProto:
    """One graph: ``image`` + ``image_size`` -> backbone -> neck -> head -> ``mask``, ``class_scores``."""
    model = backbone.load_onnx(graph_dir)
    graph = model.graph
    name = backbone.input_name
    inits: list = []
    if flip:  # the photo and its mirror image as one batch of 2N through the backbone
        both = "segflip/both"
        for node in graph.node:
            node.input[:] = [both if i == name else i for i in node.input]
        graph.node.insert(0, _reverse_width(name, "segflip/mirror", "segflip/", inits))
        graph.node.insert(1, helper.make_node("Concat", [name, "segflip/mirror"], [both], name=both, axis=0))
    n_nodes, n_inits = neck_nodes(neck)
    h_nodes, h_inits = head_nodes(layers, FEATURES, "segflip/logits2" if flip else LOGITS)
    graph.node.extend(n_nodes + h_nodes)
    inits += n_inits + h_inits
    if flip:
        graph.node.append(
            helper.make_node(
                "Split", ["segflip/logits2"], ["segflip/a", "segflip/b"], name="segflip/split", axis=0
            )
        )
        graph.node.append(_reverse_width("segflip/b", "segflip/b_back", "segflip/", inits))
        graph.node.append(
            helper.make_node("Add", ["segflip/a", "segflip/b_back"], ["segflip/sum"], name="segflip/sum")
        )
        inits.append(numpy_helper.from_array(np.array(0.5, np.float32), "segflip/half"))
        graph.node.append(
            helper.make_node("Mul", ["segflip/sum", "segflip/half"], [LOGITS], name="segflip/mean")
        )
    if refine:
        r_nodes, r_inits = refine_nodes(neck, name)
        graph.node.extend(r_nodes)
        inits += r_inits
    t_nodes, t_inits = tail_nodes(REFINED if refine else LOGITS)
    graph.node.extend(t_nodes)
    graph.initializer.extend(inits + t_inits)
    graph.input.append(helper.make_tensor_value_info(SIZE_INPUT, TensorProto.FLOAT, ["N", 2]))
    del graph.output[:]
    graph.output.extend(_outputs(n_classes, neck.grid))
    graph.name = "modeldesk_segmentation"
    onnx.checker.check_model(model)
    return model


__all__ = [
    "LOGITS",
    "MASK_OUTPUT",
    "SCORES_OUTPUT",
    "SIZE_INPUT",
    "build_segmentation_graph",
    "head_layers",
    "head_logits",
    "head_nodes",
    "tail_model",
]

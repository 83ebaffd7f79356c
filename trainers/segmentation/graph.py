"""The exported segmentation model as one ONNX graph: the photo -> a mask at the photo's size.

Inputs ``image`` (N, 3, S, S), the photo squashed to S, and ``image_size`` (N, 2), its (width, height).
``image`` -> backbone -> the neck's feature grid (``features.neck_nodes``) -> the head as 1x1
convolutions -> ``logits`` (N, C, G, G) (with test-time flip: the mirrored photo too, its logits
mirrored back and averaged; with extra input sizes, the photo is also resized to each inside the graph
and goes through a copy of the backbone, neck and head, its logits resized to the grid and averaged
with the main ones) -> the tail: logits resized bilinearly to the photo's size (at most
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

SCALED = "segscale/logits"

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


def head_nodes(layers, source: str, output: str, prefix: str = "seghead/", weights: str | None = None):
    """The dense layers as 1x1 convolutions with ReLU between: (N, D, G, G) -> (N, C, G, G); with
    ``weights``, the nodes read the weights another call made under that prefix (no new ones)."""
    nodes, inits, current = [], [], source
    for i, (W, b) in enumerate(layers):
        w_name, b_name = f"{weights or prefix}conv{i}/W", f"{weights or prefix}conv{i}/b"
        if weights is None:
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


def _mirror_mean(source: str, out: str, prefix: str, inits: list) -> list:
    """``source`` (2N, ...) holding a batch and its mirror images -> ``out``: the batch's and the
    mirrored-back values averaged."""
    a, b, back, total = (f"{prefix}{k}" for k in ("a", "b", "b_back", "sum"))
    half = f"{prefix}half"
    inits.append(numpy_helper.from_array(np.array(0.5, np.float32), half))
    return [
        helper.make_node("Split", [source], [a, b], name=f"{prefix}split", axis=0),
        _reverse_width(b, back, prefix, inits),
        helper.make_node("Add", [a, back], [total], name=total),
        helper.make_node("Mul", [total, half], [out], name=f"{prefix}mean"),
    ]


def _copy_nodes(nodes, source: str, replacement: str, prefix: str) -> list:
    """Copies of ``nodes`` reading ``replacement`` for ``source``, every tensor they make renamed
    with ``prefix`` (weights stay shared)."""
    made = {name for node in nodes for name in node.output}
    copies = []
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.input[:] = [
            replacement if name == source else (prefix + name if name in made else name)
            for name in node.input
        ]
        copy.output[:] = [prefix + name for name in node.output]
        copy.name = prefix + (node.name or node.output[0])
        copies.append(copy)
    return copies


def _resize_to(source: str, side, out: str, prefix: str, inits: list) -> list:
    """``source`` (N, C, h, w) -> ``out`` (N, C, side, side), bilinear with half-pixel centres."""
    shape, nc, sizes = (f"{prefix}{k}" for k in ("shape", "nc", "sizes"))
    for name, value in (("s0", [0]), ("s2", [2]), ("side", [side, side])):
        inits.append(numpy_helper.from_array(np.array(value, np.int64), f"{prefix}{name}"))
    return [
        helper.make_node("Shape", [source], [shape], name=shape),
        helper.make_node("Slice", [shape, f"{prefix}s0", f"{prefix}s2"], [nc], name=nc),
        helper.make_node("Concat", [nc, f"{prefix}side"], [sizes], name=sizes, axis=0),
        helper.make_node(
            "Resize",
            [source, "", "", sizes],
            [out],
            name=out,
            mode="linear",
            coordinate_transformation_mode="half_pixel",
        ),
    ]


def scale_nodes(backbone_nodes, image: str, neck: SegNeck, sizes, layers, *, flip: bool, weights=None):
    """(nodes, inits): ``image`` (N, 3, S, S) also seen at every extra input size of ``sizes``: resized
    to it, through a copy of the backbone (``backbone_nodes``), the neck and the head (reading the
    head's weights under the prefix ``weights``, or its own), the mirrored photo too with ``flip``,
    the logits resized to the main grid and summed -> ``segscale/logits`` (N, C, G, G)."""
    nodes, inits, outs = [], [], []
    for size in sizes:
        prefix = f"segscale/{size}/"
        small = SegNeck(size=size, stride=neck.stride, levels=neck.levels, pyramid=neck.pyramid)
        resized = prefix + "image"
        nodes += _resize_to(image, size, resized, prefix + "in/", inits)
        source = resized
        if flip:
            nodes.append(_reverse_width(resized, prefix + "mirror", prefix, inits))
            source = prefix + "both"
            nodes.append(
                helper.make_node("Concat", [resized, prefix + "mirror"], [source], name=source, axis=0)
            )
        nodes += _copy_nodes(backbone_nodes, image, source, prefix + "bb/")  # the backbone's own names
        n_nodes, n_inits = neck_nodes(
            small,
            prefix + "neck/",
            maps={level: prefix + "bb/" + level for level in small.inputs()},
            output=prefix + "f",
        )
        logits = prefix + ("logits2" if flip else "logits")
        h_nodes, h_inits = head_nodes(layers, prefix + "f", logits, prefix + "head/", weights=weights)
        nodes += n_nodes + h_nodes
        inits += n_inits + h_inits
        if flip:
            nodes += _mirror_mean(logits, prefix + "logits", prefix + "flip/", inits)
        nodes += _resize_to(prefix + "logits", neck.grid, prefix + "up", prefix + "out/", inits)
        outs.append(prefix + "up")
    nodes.append(helper.make_node("Sum", outs, [SCALED], name=SCALED))
    return nodes, inits


def scale_model(
    backbone: Backbone, neck: SegNeck, sizes, layers, graph_dir, *, flip: bool
) -> onnx.ModelProto:
    """A graph: ``image`` (N, 3, S, S) -> ``segscale/logits``, the extra sizes' part of the exported
    graph alone (training's path: the main size's logits come from the cached maps)."""
    model = backbone.load_onnx(graph_dir)
    graph = model.graph
    nodes, inits = scale_nodes(list(graph.node), backbone.input_name, neck, sizes, layers, flip=flip)
    del graph.node[:]
    del graph.value_info[:]
    graph.node.extend(nodes)
    graph.initializer.extend(inits)
    del graph.output[:]
    n_classes = len(np.asarray(layers[-1][1]))
    graph.output.append(
        helper.make_tensor_value_info(SCALED, TensorProto.FLOAT, ["N", n_classes, neck.grid, neck.grid])
    )
    return model


def mean_of_scales(main: np.ndarray, scaled: np.ndarray, n_sizes: int) -> np.ndarray:
    """numpy twin of the graph's average of the main logits and the extra sizes' sum."""
    return ((main + scaled) * np.float32(1.0 / (1 + n_sizes))).astype(np.float32)


def build_segmentation_graph(
    backbone: Backbone,
    neck: SegNeck,
    layers,
    n_classes: int,
    graph_dir,
    *,
    flip: bool = False,
    refine: bool = False,
    sizes=(),
) -> onnx.ModelProto:
    """One graph: ``image`` + ``image_size`` -> backbone -> neck -> head -> ``mask``, ``class_scores``;
    ``sizes``: extra input sizes whose logits are averaged in (see :func:`scale_nodes`)."""
    model = backbone.load_onnx(graph_dir)
    graph = model.graph
    name = backbone.input_name
    original = []
    for node in graph.node:  # the backbone as it came, for the extra sizes' copies
        original.append(onnx.NodeProto())
        original[-1].CopyFrom(node)
    inits: list = []
    if flip:  # the photo and its mirror image as one batch of 2N through the backbone
        both = "segflip/both"
        for node in graph.node:
            node.input[:] = [both if i == name else i for i in node.input]
        graph.node.insert(0, _reverse_width(name, "segflip/mirror", "segflip/", inits))
        graph.node.insert(1, helper.make_node("Concat", [name, "segflip/mirror"], [both], name=both, axis=0))
    main = "segscale/main" if sizes else LOGITS
    n_nodes, n_inits = neck_nodes(neck)
    h_nodes, h_inits = head_nodes(layers, FEATURES, "segflip/logits2" if flip else main)
    graph.node.extend(n_nodes + h_nodes)
    inits += n_inits + h_inits
    if flip:
        graph.node.extend(_mirror_mean("segflip/logits2", main, "segflip/", inits))
    if sizes:
        s_nodes, s_inits = scale_nodes(original, name, neck, sizes, layers, flip=flip, weights="seghead/")
        graph.node.extend(s_nodes)
        inits += s_inits
        inits.append(numpy_helper.from_array(np.array(1.0 / (1 + len(sizes)), np.float32), "segscale/share"))
        graph.node.append(helper.make_node("Add", [main, SCALED], ["segscale/total"], name="segscale/total"))
        graph.node.append(
            helper.make_node("Mul", ["segscale/total", "segscale/share"], [LOGITS], name="segscale/mean")
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
    "SCALED",
    "MASK_OUTPUT",
    "SCORES_OUTPUT",
    "SIZE_INPUT",
    "build_segmentation_graph",
    "head_layers",
    "head_logits",
    "head_nodes",
    "mean_of_scales",
    "scale_model",
    "tail_model",
]

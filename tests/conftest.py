"""Fixtures shared across the test packages.

``outside_model`` and ``outside_photos``: an image classifier "made elsewhere" (built with onnx.helper
as another tool would export it) and photos it classifies, for the tests of importing outside models.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

LABELS = ["dark", "mid", "bright"]
LEVELS = {"dark": 40, "mid": 128, "bright": 220}
IMAGENET = (np.array([123.675, 116.28, 103.53]), np.array([58.395, 57.12, 57.375]))


def brightness_classifier(path, *, layout="NHWC", size=32, softmax_inside=False):
    """dark / mid / bright by mean brightness, trained on ImageNet-normalised pixels: it answers
    right under that normalisation only (the class centres sit in normalised units)."""
    mean, std = IMAGENET
    centres = (np.array([40.0, 128.0, 220.0])[:, None] - mean) / std  # (class, channel)
    weights = (2 * centres / 3).T.astype(np.float32)  # -(x - c)^2 up to a term every class shares
    bias = (-(centres**2).sum(axis=1) / 3).astype(np.float32)
    shape = ["batch", size, size, 3] if layout == "NHWC" else ["batch", 3, size, size]
    nodes = (
        [helper.make_node("Transpose", ["input_1"], ["nchw"], perm=[0, 3, 1, 2])] if layout == "NHWC" else []
    )
    nodes += [
        helper.make_node("GlobalAveragePool", ["nchw" if layout == "NHWC" else "input_1"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "W", "b"], ["z" if softmax_inside else "scores"]),
    ]
    if softmax_inside:
        nodes.append(helper.make_node("Softmax", ["z"], ["scores"], axis=1))
    graph = helper.make_graph(
        nodes,
        "brightness",
        [helper.make_tensor_value_info("input_1", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 3])],
        initializer=[numpy_helper.from_array(weights, "W"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def outside_photos(tmp_path):
    rng = np.random.default_rng(0)
    root = tmp_path / "photos"
    for label, level in LEVELS.items():
        (root / label).mkdir(parents=True)
        for i in range(8):
            pixels = np.clip(level + rng.normal(0, 8, (40 + i, 48, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / label / f"{label}{i}.png")
    return root


@pytest.fixture
def outside_model(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(LABELS) + "\n")
    return brightness_classifier(tmp_path / "model.onnx"), labels


@pytest.fixture
def outside_kit():
    """The builder of :func:`brightness_classifier`, its labels and the normalisation it was trained with."""
    from types import SimpleNamespace

    return SimpleNamespace(build=brightness_classifier, labels=LABELS, imagenet=IMAGENET)

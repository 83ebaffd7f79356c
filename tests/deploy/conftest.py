"""Stand-in classifier and synthetic colour data for the deploy tests.

The stand-in graph has the shape of the real export (convs -> global pooling -> Gemm -> Softmax, input
``image`` float32 (N, 3, 224, 224), output ``probabilities``) and really separates the synthetic
classes: its first convolution measures the mean of each colour channel, so a mostly-red image is
"red". A few random, fixed-seed channels give the quantizer something less trivial to chew on.
"""

from __future__ import annotations

import io

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from modeldesk.deploy.artifact import save_artifact
from modeldesk.deploy.preprocess import ImageSpec

LABELS = ["red", "green", "blue"]
COLORS = {"red": (200, 40, 40), "green": (40, 170, 60), "blue": (40, 60, 200)}


def build_standin_model(
    n_classes: int = 3, size: int = 224, seed: int = 0, extra: int = 10
) -> onnx.ModelProto:
    """A small fixed-weight image classifier graph (one ONNX model, opset 17)."""
    rng = np.random.default_rng(seed)
    c1 = 6 + extra
    w1 = np.zeros((c1, 3, 3, 3), np.float32)
    for c in range(3):
        w1[c, c] = 1.0 / 9
        w1[3 + c, c] = -1.0 / 9
    w1[6:] = rng.normal(0, 0.2, (extra, 3, 3, 3))
    b1 = np.zeros(c1, np.float32)
    c2 = 16
    w2 = np.zeros((c2, c1, 1, 1), np.float32)
    w2[:6, :6, 0, 0] = np.eye(6)
    w2[6:, :, 0, 0] = rng.normal(0, 0.2, (c2 - 6, c1))
    b2 = np.zeros(c2, np.float32)
    wf = np.zeros((n_classes, c2), np.float32)
    for k in range(n_classes):
        wf[k, k % 3] += 6.0
        wf[k, 3 + k % 3] -= 3.0
    wf[:, 6:] = rng.normal(0, 0.05, (n_classes, c2 - 6))
    bf = np.zeros(n_classes, np.float32)
    inits = [
        numpy_helper.from_array(a, n)
        for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (wf, "wf"), (bf, "bf"))
    ]
    nodes = [
        helper.make_node(
            "Conv", ["image", "w1", "b1"], ["c1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
        ),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["feat"], axis=1),
        helper.make_node("Gemm", ["feat", "wf", "bf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "standin",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", n_classes])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="modeldesk-tests"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_fixed_pool_model(size: int = 224) -> onnx.ModelProto:
    """A classifier whose head pools a fixed 2x2 grid then flattens: not resize-invariant."""
    rng = np.random.default_rng(1)
    w1 = rng.normal(0, 0.2, (4, 3, 3, 3)).astype(np.float32)
    grid = size // 8 // 2
    wf = rng.normal(0, 0.1, (3, 4 * 2 * 2)).astype(np.float32)
    nodes = [
        helper.make_node(
            "Conv", ["image", "w1"], ["c1"], kernel_shape=[3, 3], strides=[8, 8], pads=[1, 1, 1, 1]
        ),
        helper.make_node("AveragePool", ["c1"], ["pool"], kernel_shape=[grid, grid], strides=[grid, grid]),
        helper.make_node("Flatten", ["pool"], ["feat"], axis=1),
        helper.make_node("Gemm", ["feat", "wf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "fixedpool",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(wf, "wf")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def color_image_bytes(label: str, seed: int, size=(96, 80), fmt: str = "PNG") -> bytes:
    """A noisy image whose dominant colour is ``label``'s, with a distractor patch."""
    rng = np.random.default_rng(seed)
    base = np.array(COLORS[label], np.float32)
    pixels = base + rng.normal(0, 35, (size[1], size[0], 3))
    other = np.array(COLORS[LABELS[(LABELS.index(label) + 1 + seed % 2) % 3]], np.float32)
    h, w = size[1] // 3, size[0] // 3
    pixels[:h, :w] = other + rng.normal(0, 20, (h, w, 3))
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def write_color_dataset(root, per_class: int, seed0: int = 0, fmt: str = "PNG") -> list[tuple[str, str]]:
    """Write ``per_class`` images per label under ``root/<label>/``; return (path, label) pairs."""
    from pathlib import Path

    items = []
    for label in LABELS:
        folder = Path(root) / label
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            path = folder / f"{label}_{seed0 + i}.{fmt.lower()}"
            path.write_bytes(color_image_bytes(label, seed0 + i + 1000 * LABELS.index(label), fmt=fmt))
            items.append((str(path), label))
    return items


def standin_card(**extra) -> dict:
    card = {
        "task": "image-classification",
        "labels": list(LABELS),
        "preprocessing": ImageSpec().to_dict(),
        "template": "standin",
        "metrics": {},
        "versions": {"onnx": onnx.__version__},
    }
    card.update(extra)
    return card


@pytest.fixture(scope="session")
def standin_artifact(tmp_path_factory):
    """Path of a saved stand-in artifact (224 px, labels red/green/blue)."""
    return save_artifact(
        tmp_path_factory.mktemp("artifact") / "standin", build_standin_model(), standin_card()
    )


@pytest.fixture(scope="session")
def color_data(tmp_path_factory):
    """{"train": [(path, label)], "val": [(path, label)]} synthetic colour images on disk."""
    root = tmp_path_factory.mktemp("colors")
    return {
        "train": write_color_dataset(root / "train", 6, 0),
        "val": write_color_dataset(root / "val", 8, 100),
    }


@pytest.fixture(scope="session")
def deploy_helpers():
    """The builders above, for tests (conftest modules are not importable with importlib mode)."""

    class Helpers:
        pass

    h = Helpers()
    for fn in (
        build_standin_model,
        build_fixed_pool_model,
        build_matmul_grid_model,
        color_image_bytes,
        write_color_dataset,
        standin_card,
    ):
        setattr(h, fn.__name__, staticmethod(fn))
    h.LABELS = LABELS
    return h


def build_matmul_grid_model(size: int = 224) -> onnx.ModelProto:
    """A classifier that pools a 2x2 grid by Reshape(H*W) + MatMul, as grid-feature heads do."""
    rng = np.random.default_rng(2)
    side = size // 8
    w1 = rng.normal(0, 0.2, (4, 3, 3, 3)).astype(np.float32)
    pool = np.zeros((side * side, 4), np.float32)
    for y in range(side):
        for x in range(side):
            pool[y * side + x, (y * 2 // side) * 2 + x * 2 // side] = 4.0 / (side * side)
    wf = rng.normal(0, 0.1, (3, 16)).astype(np.float32)
    nodes = [
        helper.make_node(
            "Conv", ["image", "w1"], ["c1"], kernel_shape=[3, 3], strides=[8, 8], pads=[1, 1, 1, 1]
        ),
        helper.make_node("Reshape", ["c1", "shape"], ["flat"], name="grid/reshape"),
        helper.make_node("MatMul", ["flat", "pool"], ["grid"]),
        helper.make_node("Flatten", ["grid"], ["feat"], axis=1),
        helper.make_node("Gemm", ["feat", "wf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "matmulgrid",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 3])],
        [
            numpy_helper.from_array(w1, "w1"),
            numpy_helper.from_array(np.array([0, 0, side * side], np.int64), "shape"),
            numpy_helper.from_array(pool, "pool"),
            numpy_helper.from_array(wf, "wf"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model

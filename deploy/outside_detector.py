"""Object detectors made elsewhere (Ultralytics YOLO exports) as ModelDesk detector artifacts.

A YOLO export answers raw candidates: ``(N, 4 + C, A)`` for YOLOv8/v11 (centre x, centre y, width,
height in input pixels, then C class scores) or ``(N, A, 5 + C)`` for YOLOv5 (with an objectness score
before the classes). :func:`wrap_yolo` adds, inside one graph, what ModelDesk's detectors answer
(``deploy/boxes_output.py``): non-maximum suppression per class, then the boxes in the original photo's
pixels, as ``detections`` (K, 7: image, x0, y0, x1, y1, score, class) and ``sizes`` (N, 2).

Photos are letterboxed as ModelDesk's own detectors are (longer side to the input size, the rest
padded with grey 114, as Ultralytics pads), so the boxes only need dividing by the letterbox scale.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .artifact import new_model_id, save_artifact
from .outside_onnx import INPUT_NAME, OutsideGraph, OutsideModelError, _front, check_labels, sandwich
from .preprocess import ImageSpec

SIZE_INPUT, DETECTIONS, SIZES = "image_size", "detections", "sizes"
PAD = 114.0  # the grey Ultralytics letterboxes with: zero in the tensor, added back inside the graph
IOU = 0.45  # Ultralytics' default
MAX_PER_CLASS = 100
CANDIDATE_SCORE = 0.001  # kept by the suppression; the card's threshold decides what is shown


def yolo_layout(graph: OutsideGraph, classes: int) -> str:
    """``"v8"`` for (N, 4 + C, A) outputs, ``"v5"`` for (N, A, 5 + C); OutsideModelError otherwise."""
    dims = graph.output_dims
    if len(dims) == 3 and dims[1] == 4 + classes:
        return "v8"
    if len(dims) == 3 and dims[2] == 5 + classes:
        return "v5"
    raise OutsideModelError(
        f"{graph.path.name}: the output {graph.output_name!r} has shape {dims}; a YOLO detector of "
        f"{classes} classes answers (N, {4 + classes}, anchors) (YOLOv8/v11) or (N, anchors, {5 + classes}) (YOLOv5)"
    )


def _const(name: str, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _back(layout: str, classes: int, size: int, opset: int) -> onnx.ModelProto:
    """Raw YOLO candidates + photo sizes -> ``detections`` (K, 7) and ``sizes``."""
    n = []
    inits = [
        # centre x, centre y, width, height -> x0, y0, x1, y1
        _const("back/to_corners", [[1, 0, 1, 0], [0, 1, 0, 1], [-0.5, 0, 0.5, 0], [0, -0.5, 0, 0.5]]),
        _const("back/starts_box", [0], np.int64),
        _const("back/ends_box", [4], np.int64),
        _const("back/starts_cls", [5 if layout == "v5" else 4], np.int64),
        _const("back/ends_cls", [5 + classes if layout == "v5" else 4 + classes], np.int64),
        _const("back/starts_obj", [4], np.int64),
        _const("back/ends_obj", [5], np.int64),
        _const("back/axis2", [2], np.int64),
        _const("back/max_out", [MAX_PER_CLASS], np.int64),
        _const("back/iou", [IOU]),
        _const("back/min_score", [CANDIDATE_SCORE]),
        _const("back/cols_bc", [0, 2], np.int64),
        _const("back/col_b", [0], np.int64),
        _const("back/size", float(size)),
        _const("back/zero", 0.0),
    ]
    rows = "back/rows"  # (N, A, D)
    if layout == "v8":
        n.append(helper.make_node("Transpose", ["back/raw"], [rows], perm=[0, 2, 1]))
    else:
        n.append(helper.make_node("Identity", ["back/raw"], [rows]))
    n.append(
        helper.make_node("Slice", [rows, "back/starts_box", "back/ends_box", "back/axis2"], ["back/cxcywh"])
    )
    n.append(helper.make_node("MatMul", ["back/cxcywh", "back/to_corners"], ["back/boxes"]))  # (N, A, 4)
    n.append(
        helper.make_node("Slice", [rows, "back/starts_cls", "back/ends_cls", "back/axis2"], ["back/cls"])
    )
    scores = "back/cls"
    if layout == "v5":
        n.append(
            helper.make_node("Slice", [rows, "back/starts_obj", "back/ends_obj", "back/axis2"], ["back/obj"])
        )
        n.append(helper.make_node("Mul", ["back/cls", "back/obj"], ["back/cls_obj"]))
        scores = "back/cls_obj"
    n.append(helper.make_node("Transpose", [scores], ["back/scores"], perm=[0, 2, 1]))  # (N, C, A)
    n.append(
        helper.make_node(
            "NonMaxSuppression",
            ["back/boxes", "back/scores", "back/max_out", "back/iou", "back/min_score"],
            ["back/kept"],  # (K, 3): image, class, candidate
        )
    )
    # the kept boxes and scores
    n.append(helper.make_node("Gather", ["back/kept", "back/cols_bc"], ["back/image_box"], axis=1))
    n.append(helper.make_node("GatherND", ["back/boxes", "back/image_box"], ["back/kept_boxes"]))  # (K, 4)
    n.append(helper.make_node("GatherND", ["back/scores", "back/kept"], ["back/kept_scores"]))  # (K,)
    # letterbox pixels -> the photo's pixels: divide by size / longer side, clip to the photo
    n.append(helper.make_node("Gather", ["back/kept", "back/col_b"], ["back/image_col"], axis=1))  # (K, 1)
    n.append(helper.make_node("Squeeze", ["back/image_col", "back/one_axis"], ["back/image"]))
    inits.append(_const("back/one_axis", [1], np.int64))
    n.append(helper.make_node("Gather", [SIZE_INPUT, "back/image"], ["back/wh"], axis=0))  # (K, 2)
    n.append(helper.make_node("ReduceMax", ["back/wh"], ["back/longer"], axes=[1], keepdims=1))
    n.append(helper.make_node("Div", ["back/longer", "back/size"], ["back/unscale"]))  # (K, 1)
    n.append(helper.make_node("Mul", ["back/kept_boxes", "back/unscale"], ["back/photo_boxes"]))
    n.append(helper.make_node("Concat", ["back/wh", "back/wh"], ["back/limits"], axis=1))  # (K, 4): w h w h
    n.append(helper.make_node("Min", ["back/photo_boxes", "back/limits"], ["back/below"]))
    n.append(helper.make_node("Max", ["back/below", "back/zero"], ["back/clipped"]))
    # (K, 7): image, x0, y0, x1, y1, score, class
    n.append(helper.make_node("Cast", ["back/kept"], ["back/kept_f"], to=TensorProto.FLOAT))
    n.append(helper.make_node("Gather", ["back/kept_f", "back/col_b"], ["back/image_f"], axis=1))
    n.append(helper.make_node("Gather", ["back/kept_f", "back/col_c"], ["back/class_f"], axis=1))
    inits.append(_const("back/col_c", [1], np.int64))
    n.append(helper.make_node("Unsqueeze", ["back/kept_scores", "back/one_axis"], ["back/score_col"]))
    n.append(
        helper.make_node(
            "Concat", ["back/image_f", "back/clipped", "back/score_col", "back/class_f"], [DETECTIONS], axis=1
        )
    )
    n.append(helper.make_node("Identity", [SIZE_INPUT], [SIZES]))
    graph = helper.make_graph(
        n,
        "yolo_back",
        [
            helper.make_tensor_value_info("back/raw", TensorProto.FLOAT, None),
            helper.make_tensor_value_info(SIZE_INPUT, TensorProto.FLOAT, ["N", 2]),
        ],
        [
            helper.make_tensor_value_info(DETECTIONS, TensorProto.FLOAT, ["K", 7]),
            helper.make_tensor_value_info(SIZES, TensorProto.FLOAT, ["N", 2]),
        ],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def wrap_yolo(
    graph: OutsideGraph, classes: int, *, mean=(0, 0, 0), std=(255, 255, 255), bgr=False
) -> onnx.ModelProto:
    """The YOLO graph between ModelDesk's letterboxed pixels and its detector outputs (module docstring)."""
    size = int(graph.size or 640)
    layout = yolo_layout(graph, classes)
    opset = max(graph.opset, 13)  # Squeeze/Unsqueeze with axes inputs, ReduceMax with an attribute
    shifted = tuple(float(m) - PAD for m in mean)  # the tensor is pixels - 114: add it back
    front = _front(graph, size, shifted, std, bgr, opset)
    return sandwich(graph, front, _back(layout, classes, size, opset), "back/raw", opset)


def save_outside_detector(
    graph: OutsideGraph,
    directory,
    labels: list[str],
    *,
    mean=(0, 0, 0),
    std=(255, 255, 255),
    bgr: bool = False,
    normalisation: str = "unit",
    score_threshold: float = 0.25,
    model_id: str | None = None,
) -> Path:
    """Wrap a YOLO ``graph`` (:func:`wrap_yolo`) and save it as a detector artifact; ``labels`` in the
    order of its classes."""
    labels = check_labels(graph, labels, scored=False)
    model = wrap_yolo(graph, len(labels), mean=mean, std=std, bgr=bgr)
    spec = ImageSpec(size=int(graph.size or 640), mean=PAD, std=1.0, resize="letterbox")
    card = {
        "id": model_id or new_model_id(),
        "task": "object-detection",
        "target": "boxes",
        "labels": labels,
        "preprocessing": spec.to_dict(),
        "template": None,
        "metrics": {},
        "input_name": INPUT_NAME,
        "output_name": DETECTIONS,
        "sizes_output": SIZES,
        "size_input": SIZE_INPUT,
        "score_threshold": float(score_threshold),
        "origin": {
            "kind": "imported",
            "file": graph.path.name,
            "graph": graph.describe(),
            "detector": yolo_layout(graph, len(labels)),
            "normalisation": normalisation,
            "mean": [float(v) for v in mean],
            "std": [float(v) for v in std],
            "bgr": bool(bgr),
        },
    }
    return save_artifact(directory, model, card)

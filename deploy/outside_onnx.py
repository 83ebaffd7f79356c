"""Image classifiers made elsewhere (PyTorch, Keras via tf2onnx, another tool) as ModelDesk artifacts.

:func:`inspect_onnx` reads what the graph says about itself: its image input (size, channel layout,
element type) and its output (one score per class). What a graph cannot say, how its pixels were
normalised and the order of its labels, the caller gives; :data:`NORMALISATIONS` names the common
conventions so a person can pick one (the app measures which one answers best on labeled photos).

:func:`wrap_classifier` puts the outside graph behind ModelDesk's one preprocessing: the wrapped graph
takes raw RGB pixels (0-255, NCHW, ``ImageSpec(mean=0, std=1)``), normalises them per channel inside
the graph, reorders channels and axes as the outside graph wants, and turns logits into probabilities.
The predictor, the service, compression and the bundle then treat it like a model trained here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, compose, helper, numpy_helper

from .artifact import new_model_id, save_artifact
from .preprocess import ImageSpec

#: the largest graph read (a ConvNeXt-L is ~800 MB; anything above is not a desktop model)
MAX_BYTES = 1_500_000_000
#: name -> (per-channel mean, per-channel std) on 0-255 pixels, as the common tools train
NORMALISATIONS = {
    "imagenet": ((123.675, 116.28, 103.53), (58.395, 57.12, 57.375)),  # torchvision, timm
    "unit": ((0.0, 0.0, 0.0), (255.0, 255.0, 255.0)),  # pixels / 255, Keras rescaling
    "symmetric": ((127.5, 127.5, 127.5), (127.5, 127.5, 127.5)),  # -1..1, MobileNet, Inception
    "raw": ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)),  # 0-255 as they are (EfficientNet in Keras)
}
NORMALISATION_WORDS = {
    "imagenet": "ImageNet mean and spread (PyTorch, timm)",
    "unit": "pixels divided by 255 (Keras, many exports)",
    "symmetric": "pixels scaled to -1..1 (MobileNet, Inception)",
    "raw": "pixels as they are, 0-255",
}
INPUT_NAME, OUTPUT_NAME = "image", "probabilities"
_PREFIX = "outside/"


class OutsideModelError(ValueError):
    """An ONNX file ModelDesk cannot run or cannot read as an image classifier; says why."""

    user_error = True


@dataclass(frozen=True)
class OutsideGraph:
    """What an outside ONNX graph says about itself (see :func:`inspect_onnx`)."""

    path: Path
    input_name: str
    layout: str  # "NCHW" or "NHWC"
    size: int | None  # None: the graph takes any size (the caller picks one)
    input_type: int  # onnx.TensorProto element type: FLOAT or UINT8
    output_name: str
    classes: int | None  # a classifier's class count (None: not fixed in the graph)
    opset: int
    probabilities: bool  # the graph ends in a Softmax already: no second one
    output_dims: tuple = ()
    kind: str = "classifier"  # or "detector": one output of YOLO candidates (see outside_detector)

    def describe(self) -> dict:
        return {
            "input": self.input_name,
            "layout": self.layout,
            "size": self.size,
            "input_type": TensorProto.DataType.Name(self.input_type).lower(),
            "output": self.output_name,
            "classes": self.classes,
            "opset": self.opset,
            "probabilities": self.probabilities,
            "kind": self.kind,
        }


def _dims(value_info) -> list:
    shape = value_info.type.tensor_type.shape
    return [d.dim_value if d.HasField("dim_value") else None for d in shape.dim]


def _load(path: Path) -> onnx.ModelProto:
    if not path.is_file():
        raise OutsideModelError(f"{path}: no such file")
    if path.stat().st_size > MAX_BYTES:
        raise OutsideModelError(
            f"{path.name}: {path.stat().st_size / 1e9:.1f} GB is larger than ModelDesk reads"
        )
    try:
        model = onnx.load(str(path))
        onnx.checker.check_model(model)
    except Exception as exc:  # onnx raises DecodeError, ValidationError, ... for a file that is not ONNX
        raise OutsideModelError(f"{path.name}: not a valid ONNX model ({str(exc).splitlines()[0]})") from None
    return model


def inspect_onnx(path) -> OutsideGraph:
    """Read an outside ONNX classifier's input and output; :class:`OutsideModelError` says why not."""
    path = Path(path)
    model = _load(path)
    initializers = {init.name for init in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    if len(inputs) != 1:
        names = ", ".join(i.name for i in inputs) or "none"
        raise OutsideModelError(
            f"{path.name}: an image classifier takes one input, this graph takes {len(inputs)} ({names})"
        )
    source = inputs[0]
    dims = _dims(source)
    element = source.type.tensor_type.elem_type
    if len(dims) != 4 or element not in (TensorProto.FLOAT, TensorProto.UINT8):
        raise OutsideModelError(
            f"{path.name}: the input {source.name!r} is not a batch of images "
            "(expected 4 dimensions of float32 or uint8, as N x 3 x H x W or N x H x W x 3)"
        )
    if dims[1] == 3:
        layout, height, width = "NCHW", dims[2], dims[3]
    elif dims[3] == 3:
        layout, height, width = "NHWC", dims[1], dims[2]
    else:
        raise OutsideModelError(
            f"{path.name}: the input {source.name!r} has no 3-channel axis (shape {dims}); "
            "only RGB image classifiers can be imported"
        )
    if height != width and height is not None and width is not None:
        raise OutsideModelError(
            f"{path.name}: the input is {width}x{height}; ModelDesk's preprocessing feeds square images"
        )
    if len(model.graph.output) != 1:
        names = ", ".join(o.name for o in model.graph.output)
        raise OutsideModelError(
            f"{path.name}: the graph has {len(model.graph.output)} outputs ({names}); ModelDesk imports "
            "classifiers (one output of class scores) and YOLO detectors (one output of candidates)"
        )
    output = model.graph.output[0]
    out_dims = _dims(output)
    if len(out_dims) not in (2, 3):
        raise OutsideModelError(
            f"{path.name}: the output {output.name!r} has shape {out_dims}: neither class scores per image "
            "nor a YOLO detector's candidates"
        )
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    last = next((node for node in model.graph.node if output.name in node.output), None)
    return OutsideGraph(
        path=path,
        input_name=source.name,
        layout=layout,
        size=height or width,
        input_type=element,
        output_name=output.name,
        classes=out_dims[1] if len(out_dims) == 2 else None,
        opset=opset,
        probabilities=last is not None and last.op_type == "Softmax",
        output_dims=tuple(out_dims),
        kind="classifier" if len(out_dims) == 2 else "detector",
    )


def _front(graph: OutsideGraph, size: int, mean, std, bgr: bool, opset: int) -> onnx.ModelProto:
    """Raw RGB 0-255 NCHW -> what the outside graph's input wants."""
    nodes, inits = [], []
    current = INPUT_NAME
    if bgr:
        inits.append(numpy_helper.from_array(np.array([2, 1, 0], np.int64), "front/bgr_order"))
        nodes.append(helper.make_node("Gather", [current, "front/bgr_order"], ["front/bgr"], axis=1))
        current = "front/bgr"
    if graph.input_type == TensorProto.UINT8:
        # a uint8 graph normalises inside itself: only round and cast the pixels
        nodes.append(helper.make_node("Round", [current], ["front/rounded"]))
        nodes.append(helper.make_node("Clip", ["front/rounded", "front/lo", "front/hi"], ["front/clipped"]))
        inits += [
            numpy_helper.from_array(np.array(0.0, np.float32), "front/lo"),
            numpy_helper.from_array(np.array(255.0, np.float32), "front/hi"),
        ]
        nodes.append(helper.make_node("Cast", ["front/clipped"], ["front/pixels"], to=TensorProto.UINT8))
    else:
        inits += [
            numpy_helper.from_array(np.asarray(mean, np.float32).reshape(1, 3, 1, 1), "front/mean"),
            numpy_helper.from_array(np.asarray(std, np.float32).reshape(1, 3, 1, 1), "front/std"),
        ]
        nodes.append(helper.make_node("Sub", [current, "front/mean"], ["front/centred"]))
        nodes.append(helper.make_node("Div", ["front/centred", "front/std"], ["front/pixels"]))
    out_type = graph.input_type
    if graph.layout == "NHWC":
        nodes.append(helper.make_node("Transpose", ["front/pixels"], ["front/out"], perm=[0, 2, 3, 1]))
        out_shape: list[str | int] = ["N", size, size, 3]
    else:
        nodes.append(helper.make_node("Identity", ["front/pixels"], ["front/out"]))
        out_shape = ["N", 3, size, size]
    front = helper.make_graph(
        nodes,
        "front",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("front/out", out_type, out_shape)],
        initializer=inits,
    )
    return helper.make_model(front, opset_imports=[helper.make_opsetid("", opset)])


def _back(classes_name: str, softmax: bool, opset: int) -> onnx.ModelProto:
    """Class scores -> probabilities (a softmax for logits, as they are otherwise)."""
    op = helper.make_node("Softmax", ["back/in"], [OUTPUT_NAME], axis=-1 if opset >= 13 else 1)
    if not softmax:
        op = helper.make_node("Identity", ["back/in"], [OUTPUT_NAME])
    back = helper.make_graph(
        [op],
        "back",
        [helper.make_tensor_value_info("back/in", TensorProto.FLOAT, ["N", classes_name])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["N", classes_name])],
    )
    return helper.make_model(back, opset_imports=[helper.make_opsetid("", opset)])


def wrap_classifier(
    graph: OutsideGraph, *, size: int | None = None, mean=(0, 0, 0), std=(1, 1, 1), bgr=False, softmax=None
) -> onnx.ModelProto:
    """The outside graph behind ModelDesk's preprocessing (see the module docstring).

    ``mean`` and ``std`` are per channel on 0-255 pixels, in the order the outside graph reads its
    channels; ``bgr`` feeds it blue-green-red; ``softmax`` turns its scores (logits) into probabilities
    (None: unless the graph ends in a Softmax).
    """
    softmax = not graph.probabilities if softmax is None else bool(softmax)
    size = int(size or graph.size or 224)
    if graph.size is not None and size != graph.size:
        raise OutsideModelError(f"{graph.path.name}: the graph takes {graph.size} px images, not {size}")
    if np.any(np.asarray(std, np.float64) == 0):
        raise OutsideModelError("the spread (std) of a channel cannot be 0")
    opset = max(graph.opset, 11)  # Round (front) needs 11
    front = _front(graph, size, mean, std, bgr, opset)
    return sandwich(graph, front, _back("C", softmax, opset), "back/in", opset)


def sandwich(graph: OutsideGraph, front: onnx.ModelProto, back: onnx.ModelProto, back_input: str, opset: int):
    """One checked graph: ``front`` (ModelProto ending in ``front/out``) -> the outside graph (its names
    prefixed, converted up to ``opset`` when older) -> ``back`` (starting at ``back_input``)."""
    inner = onnx.load(str(graph.path))
    if graph.opset < opset:
        inner = onnx.version_converter.convert_version(inner, opset)
    inner = compose.add_prefix(inner, _PREFIX)
    for part in (front, back):  # merging asks for one IR version and one opset throughout
        part.ir_version = inner.ir_version
        del part.opset_import[:]
        part.opset_import.extend(inner.opset_import)
        if not any(o.domain in ("", "ai.onnx") for o in part.opset_import):
            part.opset_import.append(helper.make_opsetid("", opset))
    merged = compose.merge_models(front, inner, io_map=[("front/out", _PREFIX + graph.input_name)])
    merged = compose.merge_models(merged, back, io_map=[(_PREFIX + graph.output_name, back_input)])
    onnx.checker.check_model(merged)
    return merged


def check_labels(graph: OutsideGraph, labels: list[str], *, scored: bool = True) -> list[str]:
    """``labels`` cleaned, or :class:`OutsideModelError` when they cannot name the graph's outputs
    (``scored``: a classifier's, which needs two; a detector may find one kind of thing)."""
    labels = [str(label).strip() for label in labels]
    if len(labels) < (2 if scored else 1) or len(set(labels)) != len(labels) or not all(labels):
        raise OutsideModelError("the labels file needs different, non-empty labels, one a line")
    if graph.classes is not None and graph.classes != len(labels):
        raise OutsideModelError(
            f"{graph.path.name}: the graph scores {graph.classes} classes but the labels file has {len(labels)}"
        )
    return labels


def save_outside_classifier(
    graph: OutsideGraph,
    directory,
    labels: list[str],
    *,
    size: int | None = None,
    mean=(0, 0, 0),
    std=(1, 1, 1),
    bgr: bool = False,
    softmax: bool | None = None,
    normalisation: str = "custom",
    metrics: dict | None = None,
    model_id: str | None = None,
) -> Path:
    """Wrap ``graph`` (:func:`wrap_classifier`) and save it as an artifact with a card that says where
    it came from; ``labels`` in the order of the graph's outputs."""
    labels = check_labels(graph, labels)
    model = wrap_classifier(graph, size=size, mean=mean, std=std, bgr=bgr, softmax=softmax)
    spec = ImageSpec(size=int(size or graph.size or 224), mean=0.0, std=1.0)
    card = {
        "id": model_id or new_model_id(),
        "task": "image-classification",
        "target": "label",
        "labels": labels,
        "preprocessing": spec.to_dict(),
        "template": None,
        "metrics": metrics or {},
        "input_name": INPUT_NAME,
        "output_name": OUTPUT_NAME,
        "origin": {
            "kind": "imported",
            "file": graph.path.name,
            "graph": graph.describe(),
            "normalisation": normalisation,
            "mean": [float(v) for v in mean],
            "std": [float(v) for v in std],
            "bgr": bool(bgr),
            "softmax": not graph.probabilities if softmax is None else bool(softmax),
        },
    }
    return save_artifact(directory, model, card)


def save_outside_model(graph: OutsideGraph, directory, labels: list[str], **options) -> Path:
    """Save ``graph`` as an artifact of its kind: a classifier (:func:`save_outside_classifier`) or a
    YOLO detector (``outside_detector.save_outside_detector``, which takes no ``size`` or ``softmax``)."""
    if graph.kind == "detector":
        from .outside_detector import save_outside_detector

        options = {k: v for k, v in options.items() if k not in ("size", "softmax")}
        return save_outside_detector(graph, directory, labels, **options)
    return save_outside_classifier(graph, directory, labels, **options)


def read_labels(path) -> list[str]:
    """Labels from a text file, one a line (blank lines skipped), or a JSON list; the message names the file."""
    from modeldesk.safejson import JSONLimitError, loads

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise OutsideModelError(f"{path}: no such labels file") from None
    except UnicodeDecodeError:
        raise OutsideModelError(f"{path.name}: the labels file is not UTF-8 text") from None
    if text.lstrip().startswith("["):
        try:
            labels = loads(text)
        except JSONLimitError as exc:
            raise OutsideModelError(f"{path.name}: {exc}") from None
        if not isinstance(labels, list):
            raise OutsideModelError(f"{path.name}: expected a JSON list of labels")
        return [str(label) for label in labels]
    return [line.strip() for line in text.splitlines() if line.strip()]

"""Detection features: letterboxed image -> backbone stride maps (cached) -> one feature vector per cell.

The backbone runs once per image and view on the letterboxed input; its stride maps are cached
flattened into one vector. The *neck* turns them into ``cells`` (N, D, G, G): on a grid of one
stride, each cell gets the maps of every level (finer ones average-pooled, coarser ones repeated),
the coarsest map averaged over a k x k neighbourhood, and the whole image's average. The neck is a
handful of ONNX nodes; training runs the same nodes on the cached maps, so a head of 1x1
convolutions fitted on sampled cells computes in the exported graph exactly what it was fitted on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from modeldesk.deploy.image_input import image_batch_size
from modeldesk.deploy.preprocess import ImageSpec
from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.backbones import Backbone
from modeldesk.trainers.backbones.registry import write_atomically
from modeldesk.trainers.features import FEATURES_OUTPUT, FeatureExtractor, FeatureSpec, extract_feature_views

STRIDES = {"stride8": 8, "stride16": 16, "stride32": 32}
CELLS = "cells"


@dataclass(frozen=True)
class DetectionNeck:
    """How backbone maps become per-cell features.

    Parameters
    ----------
    size : side of the letterboxed input in pixels (a multiple of 32).
    stride : the grid the head predicts on (8, 16 or 32 input pixels per cell).
    levels : backbone maps used, e.g. ``("stride16", "stride32")``.
    context : k of the k x k average of the coarsest map added to every cell (0: none).
    global_context : add the whole image's average of the coarsest map to every cell.
    """

    size: int = 320
    stride: int = 16
    levels: tuple = ("stride16", "stride32")
    context: int = 3
    global_context: bool = True

    def __post_init__(self):
        if self.size % 32:
            raise ValueError(f"detection input size must be a multiple of 32, not {self.size}")
        if self.stride not in STRIDES.values():
            raise ValueError(f"grid stride must be one of 8, 16, 32, not {self.stride}")
        unknown = [level for level in self.levels if level not in STRIDES]
        if unknown or not self.levels:
            raise ValueError(f"levels must be among {', '.join(STRIDES)}")

    @property
    def spec(self) -> ImageSpec:
        """The preprocessing: letterbox to ``size``."""
        return ImageSpec(size=self.size, resize="letterbox")

    @property
    def grid(self) -> int:
        """Cells per side."""
        return self.size // self.stride

    @property
    def coarsest(self) -> str:
        return max(self.levels, key=STRIDES.get)

    @property
    def maps_name(self) -> str:
        """The cache namespace of the raw maps (independent of the neck's pooling)."""
        return f"detmaps-{self.size}"

    @property
    def name(self) -> str:
        return (
            f"{self.maps_name}-g{self.stride}-c{self.context}-{'global' if self.global_context else 'local'}"
        )

    def map_shapes(self, backbone: Backbone) -> dict:
        """Level -> (channels, side, side) of every backbone map at this input size (all are cached,
        so necks on different levels share one cache)."""
        return {
            level: (backbone.outputs[level], self.size // stride, self.size // stride)
            for level, stride in STRIDES.items()
        }

    def dim(self, backbone: Backbone) -> int:
        """Channels of ``cells``."""
        coarse = backbone.outputs[self.coarsest]
        return (
            sum(backbone.outputs[level] for level in self.levels)
            + (coarse if self.context else 0)
            + (coarse if self.global_context else 0)
        )


def _int64(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _to_grid(source: str, level_stride: int, stride: int, prefix: str, nodes: list, inits: list) -> str:
    """Bring a map of ``level_stride`` to the grid of ``stride``: average-pool finer, repeat coarser."""
    if level_stride == stride:
        return source
    out = prefix + "grid"
    if level_stride < stride:
        k = stride // level_stride
        nodes.append(
            helper.make_node("AveragePool", [source], [out], name=out, kernel_shape=[k, k], strides=[k, k])
        )
    else:
        k = float(level_stride // stride)
        inits.append(numpy_helper.from_array(np.array([1, 1, k, k], np.float32), prefix + "scales"))
        nodes.append(
            helper.make_node(
                "Resize",
                [source, "", prefix + "scales"],
                [out],
                name=out,
                mode="nearest",
                coordinate_transformation_mode="asymmetric",
                nearest_mode="floor",
            )
        )
    return out


def neck_nodes(neck: DetectionNeck, prefix: str = "neck/") -> tuple[list, list]:
    """Nodes and initializers computing ``cells`` (N, D, G, G) from the backbone's stride outputs."""
    nodes, inits, pieces = [], [], []
    for level in neck.levels:
        pieces.append(_to_grid(level, STRIDES[level], neck.stride, f"{prefix}{level}/", nodes, inits))
    coarse, coarse_stride = neck.coarsest, STRIDES[neck.coarsest]
    if neck.context:
        k = neck.context
        pooled = f"{prefix}context/pool"
        nodes.append(
            helper.make_node(
                "AveragePool",
                [coarse],
                [pooled],
                name=pooled,
                kernel_shape=[k, k],
                pads=[k // 2] * 4,
                strides=[1, 1],
                count_include_pad=0,
            )
        )
        pieces.append(_to_grid(pooled, coarse_stride, neck.stride, f"{prefix}context/", nodes, inits))
    if neck.global_context:
        mean, out = f"{prefix}global/mean", f"{prefix}global/grid"
        inits.append(_int64(f"{prefix}global/shape", [1, 1, neck.grid, neck.grid]))
        nodes.append(helper.make_node("GlobalAveragePool", [coarse], [mean], name=mean))
        nodes.append(helper.make_node("Expand", [mean, f"{prefix}global/shape"], [out], name=out))
        pieces.append(out)
    nodes.append(helper.make_node("Concat", pieces, [CELLS], name=prefix + "concat", axis=1))
    return nodes, inits


def neck_model(neck: DetectionNeck, backbone: Backbone) -> onnx.ModelProto:
    """A standalone graph: the stride maps (fixed shapes) -> ``cells``; runs the neck on cached maps."""
    nodes, inits = neck_nodes(neck)
    inputs = [
        helper.make_tensor_value_info(level, TensorProto.FLOAT, ["N", *shape])
        for level, shape in neck.map_shapes(backbone).items()
        if level in neck.levels
    ]
    output = helper.make_tensor_value_info(
        CELLS, TensorProto.FLOAT, ["N", neck.dim(backbone), neck.grid, neck.grid]
    )
    graph = helper.make_graph(nodes, "detection_neck", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="modeldesk")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def maps_model(neck: DetectionNeck, backbone: Backbone, graph_dir) -> onnx.ModelProto:
    """The backbone with one output ``features``: its maps of ``neck.levels`` flattened and concatenated."""
    return flat_maps_output(backbone.load_onnx(graph_dir), neck.map_shapes(backbone))


def flat_maps_output(model: onnx.ModelProto, shapes: dict) -> onnx.ModelProto:
    """``model`` with one output ``features`` in place of its outputs: the maps named by ``shapes``
    (name -> shape of one photo's map), each flattened, concatenated in that order."""
    graph = model.graph
    pieces = []
    for level in shapes:
        flat = f"maps/{level}/flat"
        graph.node.append(helper.make_node("Flatten", [level], [flat], name=flat, axis=1))
        pieces.append(flat)
    graph.node.append(helper.make_node("Concat", pieces, [FEATURES_OUTPUT], name="maps/concat", axis=1))
    del graph.output[:]
    total = sum(int(np.prod(shape)) for shape in shapes.values())
    graph.output.append(helper.make_tensor_value_info(FEATURES_OUTPUT, TensorProto.FLOAT, ["N", total]))
    return model


def split_maps(neck: DetectionNeck, backbone: Backbone, flat: np.ndarray) -> dict:
    """Cached flat vectors (N, total) -> level -> (N, C, H, W) arrays (the neck graph's inputs)."""
    out, start = {}, 0
    for level, shape in neck.map_shapes(backbone).items():
        size = int(np.prod(shape))
        if level in neck.levels:
            out[level] = np.ascontiguousarray(flat[:, start : start + size].reshape(len(flat), *shape))
        start += size
    return out


class MapExtractor(FeatureExtractor):
    """The feature extractor for detection: letterboxed decoding and the maps graph."""

    def __init__(self, backbone: Backbone, cache, *, neck: DetectionNeck, **options):
        super().__init__(backbone, cache, **options)
        self.neck = neck

    def model_path(self) -> Path:
        with self._lock:
            if self._model_path is None:
                digest = hashlib.sha1(self.neck.maps_name.encode()).hexdigest()[:8]
                path = (
                    self.graph_dir
                    / f"{self.backbone.name}-{self.backbone.version}-{self.neck.maps_name}-{digest}.onnx"
                )
                if not path.is_file():
                    write_atomically(
                        path, maps_model(self.neck, self.backbone, self.graph_dir).SerializeToString()
                    )
                self._model_path = path
            return self._model_path

    @property
    def input_spec(self):
        return self.neck.spec


def maps_feature_spec(neck: DetectionNeck) -> FeatureSpec:
    """The cache namespace entry of the raw maps (no pooling parts: the neck does that)."""
    return FeatureSpec(neck.maps_name, ())


def maps_batch_size(neck: DetectionNeck) -> int:
    """Photos per backbone run when caching maps: fewer as the input grows (``bench/image_batch.py``,
    640 px: one at a time held 0.9 GB less than 16 at a time, at 41 ms a photo against 45 in two
    repeats of three; the third took 62)."""
    return image_batch_size(neck.size)


def extract_maps(
    backbone: Backbone,
    neck: DetectionNeck,
    items,
    cache,
    *,
    views=("identity",),
    device="auto",
    progress=None,
    should_stop=None,
) -> dict:
    """Cached raw maps for (key, path) items and every view: view -> ExtractionResult (flat vectors)."""
    return extract_feature_views(
        backbone,
        items,
        cache,
        views=views,
        features=maps_feature_spec(neck),
        device=device,
        batch_size=maps_batch_size(neck),
        progress=progress,
        should_stop=should_stop,
        make_extractor=partial(MapExtractor, neck=neck),
    )


class CellComputer:
    """Runs the neck graph on cached flat maps, a few images at a time: (N, G*G, D) float32 cells."""

    def __init__(self, neck: DetectionNeck, backbone: Backbone, threads: int | None = None):
        self.neck, self.backbone = neck, backbone
        self.session = create_session(
            neck_model(neck, backbone).SerializeToString(), device="cpu", threads=threads
        )

    def __call__(self, flat: np.ndarray) -> np.ndarray:
        maps = split_maps(self.neck, self.backbone, np.asarray(flat, np.float32))
        cells = self.session.run([CELLS], maps)[0]
        n, d = cells.shape[:2]
        return cells.reshape(n, d, -1).transpose(0, 2, 1)

"""Per-pixel features for segmentation: the backbone's stride maps brought to one fine grid.

The photo is squashed to ``size`` x ``size`` (the whole photo, so grid point (i, j) is photo pixel
((j + 0.5) * width / G, (i + 0.5) * height / G)); the backbone's raw stride-8/16/32 maps are cached per
photo and view. The neck resizes every chosen level bilinearly to the grid of ``stride`` and
concatenates them, with the coarsest map average-pooled over a pyramid of bins (1 x 1: the whole
photo's context, 2 x 2, ...) for context. These few ONNX nodes run on the cached maps in training and
inside the exported graph, so the head is fitted on exactly what the exported model computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from modeldesk.deploy.preprocess import ImageSpec
from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.backbones import Backbone
from modeldesk.trainers.detection.features import STRIDES, MapExtractor, maps_feature_spec, split_maps
from modeldesk.trainers.features import extract_feature_views

FEATURES = "seg_features"


@dataclass(frozen=True)
class SegNeck:
    """How the backbone's maps become a per-pixel feature grid.

    Parameters
    ----------
    size : side of the squashed input (a multiple of 32).
    stride : input pixels per grid point (4 or 8): the head predicts on a (size / stride)^2 grid.
    levels : the backbone maps concatenated, e.g. ``("stride8", "stride16", "stride32")``.
    pyramid : bins of the context pooling of the coarsest map (``(1, 2)``: the whole photo's average
        and its four quarters'); each divides ``size / 32``.
    """

    size: int = 512
    stride: int = 8
    levels: tuple = ("stride8", "stride16", "stride32")
    pyramid: tuple = ()

    def __post_init__(self):
        if self.size % 32:
            raise ValueError(f"segmentation input size must be a multiple of 32, not {self.size}")
        if self.stride not in (4, 8):
            raise ValueError(f"segmentation grid stride must be 4 or 8, not {self.stride}")
        if not self.levels or any(level not in STRIDES for level in self.levels):
            raise ValueError(f"levels must be among {', '.join(STRIDES)}")
        if any((self.size // 32) % b for b in self.pyramid):
            raise ValueError(f"pyramid bins {self.pyramid} must divide {self.size // 32}")

    @property
    def spec(self) -> ImageSpec:
        """The preprocessing: the whole photo squashed to ``size`` (every output pixel is photo)."""
        return ImageSpec(size=self.size, resize="squash")

    @property
    def maps_name(self) -> str:
        return f"segmaps-{self.size}"

    @property
    def grid(self) -> int:
        return self.size // self.stride

    @property
    def coarsest(self) -> str:
        return "stride32"

    def inputs(self) -> tuple:
        """The backbone maps the neck reads."""
        return tuple(
            level for level in STRIDES if level in self.levels or (self.pyramid and level == "stride32")
        )

    def map_shapes(self, backbone: Backbone) -> dict:
        """Level -> (channels, side, side) of every backbone map (all are cached)."""
        return {
            level: (backbone.outputs[level], self.size // s, self.size // s) for level, s in STRIDES.items()
        }

    def dim(self, backbone: Backbone) -> int:
        return (
            sum(backbone.outputs[level] for level in self.levels)
            + len(self.pyramid) * backbone.outputs[self.coarsest]
        )


def neck_nodes(neck: SegNeck, prefix: str = "seg/", maps=None, output: str = FEATURES) -> tuple[list, list]:
    """Nodes from the backbone's stride outputs (named by ``maps``, level -> tensor, default the
    level's name) to ``output`` (N, D, G, G)."""
    nodes, inits, pieces = [], [], []
    maps = maps or {}

    def const(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), prefix + name))
        return prefix + name

    def upsample(source, factor, name):
        if factor == 1:
            return source
        out = prefix + name
        scales = const(name + "/scales", [1, 1, factor, factor])
        nodes.append(
            helper.make_node(
                "Resize",
                [source, "", scales],
                [out],
                name=out,
                mode="linear",
                coordinate_transformation_mode="half_pixel",
            )
        )
        return out

    for level in neck.levels:
        pieces.append(upsample(maps.get(level, level), STRIDES[level] / neck.stride, f"{level}/up"))
    side = neck.size // 32
    for bins in neck.pyramid:
        pooled = f"{prefix}pyramid{bins}/pool"
        k = side // bins
        nodes.append(
            helper.make_node(
                "AveragePool",
                [maps.get(neck.coarsest, neck.coarsest)],
                [pooled],
                name=pooled,
                kernel_shape=[k, k],
                strides=[k, k],
            )
        )
        pieces.append(upsample(pooled, neck.grid / bins, f"pyramid{bins}/up"))
    nodes.append(helper.make_node("Concat", pieces, [output], name=prefix + "concat", axis=1))
    return nodes, inits


def neck_model(neck: SegNeck, backbone: Backbone) -> onnx.ModelProto:
    """A standalone graph: the cached stride maps -> ``seg_features``."""
    nodes, inits = neck_nodes(neck)
    shapes = neck.map_shapes(backbone)
    inputs = [
        helper.make_tensor_value_info(level, TensorProto.FLOAT, ["N", *shapes[level]])
        for level in neck.inputs()
    ]
    output = helper.make_tensor_value_info(
        FEATURES, TensorProto.FLOAT, ["N", neck.dim(backbone), neck.grid, neck.grid]
    )
    graph = helper.make_graph(nodes, "segmentation_neck", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="modeldesk")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


class FeatureGrid:
    """Runs the neck on cached flat maps: (N, D, G, G) float32, a few photos at a time."""

    def __init__(self, neck: SegNeck, backbone: Backbone, threads: int | None = None):
        self.neck, self.backbone = neck, backbone
        self.session = create_session(
            neck_model(neck, backbone).SerializeToString(), device="cpu", threads=threads
        )

    def __call__(self, flat: np.ndarray) -> np.ndarray:
        maps = split_maps(_AllLevels(self.neck), self.backbone, np.asarray(flat, np.float32))
        return self.session.run([FEATURES], {k: maps[k] for k in self.neck.inputs()})[0]


@dataclass(frozen=True)
class _AllLevels:
    """``split_maps`` reads ``map_shapes`` and ``levels``: every cached level, in the cache's order."""

    neck: SegNeck

    @property
    def levels(self):
        return tuple(STRIDES)

    def map_shapes(self, backbone):
        return self.neck.map_shapes(backbone)


class SegMapExtractor(MapExtractor):
    """Detection's map extractor with the squashed input (its own cache namespace, ``segmaps-S``)."""


def extract_maps(
    backbone: Backbone,
    neck: SegNeck,
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
        batch_size=8,
        progress=progress,
        should_stop=should_stop,
        make_extractor=partial(SegMapExtractor, neck=neck),
    )


def grid_points(height: int, width: int, grid: int) -> tuple[np.ndarray, np.ndarray]:
    """The photo rows and columns of the grid points' centres."""
    ys = np.minimum(((np.arange(grid) + 0.5) * height / grid).astype(np.int64), height - 1)
    xs = np.minimum(((np.arange(grid) + 0.5) * width / grid).astype(np.int64), width - 1)
    return ys, xs


def label_grid(mask: np.ndarray, grid: int) -> np.ndarray:
    """(G, G) uint8: the mask's class at every grid point's centre."""
    ys, xs = grid_points(*mask.shape, grid)
    return mask[ys][:, xs]


def edge_points(labels: np.ndarray, void: int = 255) -> np.ndarray:
    """(G, G) bool: the labeled points with a point of another class among their 8 neighbours (a
    neighbour not labeled, or past the border, does not count)."""
    padded = np.pad(labels, 1, mode="edge")
    g_h, g_w = labels.shape
    edge = np.zeros(labels.shape, bool)
    for dy in (0, 1, 2):
        for dx in (0, 1, 2):
            other = padded[dy : dy + g_h, dx : dx + g_w]
            edge |= (other != labels) & (other != void)
    return edge & (labels != void)


__all__ = [
    "FEATURES",
    "FeatureGrid",
    "SegNeck",
    "edge_points",
    "extract_maps",
    "grid_points",
    "label_grid",
    "neck_nodes",
]

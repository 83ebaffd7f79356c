"""Image views: the same photo mirrored or zoomed, as ONNX nodes and as their numpy twins.

A model with several views trains on the features of each and averages its predictions over them;
the exported graph computes the views with :func:`view_nodes`, feature extraction with
:func:`apply_view`, on the same preprocessed (N, 3, S, S) batch.

``identity``  the photo as it is
``hflip``     mirrored left to right (not for tasks where left and right differ)
``zoom``      the central 85% of the photo enlarged back to full size (bilinear)
``shrink``    the photo made 75% as large (bilinear) in the top left corner, the rest zero: the same
              photo letterboxed smaller, i.e. its objects at another scale (detection's scale jitter)
"""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

VIEWS = ("identity", "hflip", "zoom", "shrink")
ZOOM = 0.85
SHRINK = 0.75


def _unknown(view):
    return ValueError(f"unknown view {view!r}; choose from {', '.join(VIEWS)}")


def resize_matrix(source: int, target: int) -> np.ndarray:
    """(target, source) matrix of bilinear resizing with half-pixel centres (edges clamped)."""
    matrix = np.zeros((target, source), np.float64)
    for i in range(target):
        x = min(max((i + 0.5) * source / target - 0.5, 0.0), source - 1)
        lo = int(np.floor(x))
        hi = min(lo + 1, source - 1)
        matrix[i, lo] += 1 - (x - lo)
        matrix[i, hi] += x - lo
    return matrix.astype(np.float32)


def _zoom_box(size: int) -> tuple[int, int]:
    crop = int(round(size * ZOOM))
    return (size - crop) // 2, crop


def shrunk_size(size: int) -> int:
    """Side of the ``shrink`` view's picture inside a ``size`` x ``size`` input."""
    return int(round(size * SHRINK))


def view_nodes(view: str, source: str, prefix: str, size: int = 224) -> tuple[list, list, str]:
    """Nodes turning image tensor ``source`` (N, 3, size, size) into ``view`` of it; (nodes, inits, name)."""
    if view == "identity":
        return [], [], source
    if view == "hflip":
        inits = [
            numpy_helper.from_array(np.array(v, np.int64), f"{prefix}{n}")
            for n, v in (("starts", [-1]), ("ends", [-(2**62)]), ("axes", [3]), ("steps", [-1]))
        ]
        out = f"{prefix}flipped"
        node = helper.make_node("Slice", [source] + [i.name for i in inits], [out], name=f"{prefix}flip")
        return [node], inits, out
    if view == "zoom":
        offset, crop = _zoom_box(size)
        resize = resize_matrix(crop, size)
        inits = [
            numpy_helper.from_array(np.array(v, np.int64), f"{prefix}{n}")
            for n, v in (
                ("starts", [offset, offset]),
                ("ends", [offset + crop, offset + crop]),
                ("axes", [2, 3]),
            )
        ]
        inits += [
            numpy_helper.from_array(resize, f"{prefix}rows"),
            numpy_helper.from_array(resize.T.copy(), f"{prefix}cols"),
        ]
        nodes = [
            helper.make_node(
                "Slice",
                [source, f"{prefix}starts", f"{prefix}ends", f"{prefix}axes"],
                [f"{prefix}crop"],
                name=f"{prefix}crop",
            ),
            helper.make_node(
                "MatMul", [f"{prefix}crop", f"{prefix}cols"], [f"{prefix}wide"], name=f"{prefix}cols"
            ),
            helper.make_node(
                "MatMul", [f"{prefix}rows", f"{prefix}wide"], [f"{prefix}zoomed"], name=f"{prefix}rows"
            ),
        ]
        return nodes, inits, f"{prefix}zoomed"
    if view == "shrink":
        small = shrunk_size(size)
        resize = resize_matrix(size, small)
        inits = [
            numpy_helper.from_array(resize, f"{prefix}rows"),
            numpy_helper.from_array(resize.T.copy(), f"{prefix}cols"),
            numpy_helper.from_array(
                np.array([0, 0, 0, 0, 0, 0, size - small, size - small], np.int64), f"{prefix}pads"
            ),
        ]
        nodes = [
            helper.make_node("MatMul", [source, f"{prefix}cols"], [f"{prefix}narrow"], name=f"{prefix}cols"),
            helper.make_node(
                "MatMul", [f"{prefix}rows", f"{prefix}narrow"], [f"{prefix}small"], name=f"{prefix}rows"
            ),
            helper.make_node(
                "Pad", [f"{prefix}small", f"{prefix}pads"], [f"{prefix}shrunk"], name=f"{prefix}pad"
            ),
        ]
        return nodes, inits, f"{prefix}shrunk"
    raise _unknown(view)


def apply_view(batch: np.ndarray, view: str) -> np.ndarray:
    """The numpy twin of ``view_nodes`` for an (N, 3, S, S) float32 batch."""
    if view == "identity":
        return batch
    if view == "hflip":
        return np.ascontiguousarray(batch[..., ::-1])
    if view == "zoom":
        size = batch.shape[-1]
        offset, crop = _zoom_box(size)
        resize = resize_matrix(crop, size)
        return np.ascontiguousarray(
            resize @ (batch[..., offset : offset + crop, offset : offset + crop] @ resize.T)
        )
    if view == "shrink":
        size = batch.shape[-1]
        small = shrunk_size(size)
        resize = resize_matrix(size, small)
        out = np.zeros_like(batch)
        out[..., :small, :small] = resize @ (batch @ resize.T)
        return out
    raise _unknown(view)

"""Views: the ONNX nodes and their numpy twins agree; zoom enlarges the centre."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from modeldesk.deploy.runtime import create_session
from modeldesk.trainers.views import VIEWS, apply_view, resize_matrix, view_nodes


def run_view(view, batch):
    nodes, inits, out = view_nodes(view, "image", "v/", size=batch.shape[-1])
    if out == "image":
        return batch
    graph = helper.make_graph(
        nodes,
        "view",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 40, 40])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", 3, 40, 40])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return create_session(model.SerializeToString(), device="cpu").run([out], {"image": batch})[0]


@pytest.mark.parametrize("view", VIEWS)
def test_onnx_view_equals_its_numpy_twin(view):
    batch = np.random.default_rng(0).normal(size=(2, 3, 40, 40)).astype(np.float32)
    got = run_view(view, batch)
    assert got.shape == batch.shape
    np.testing.assert_allclose(got, apply_view(batch, view), atol=1e-5)


def test_zoom_enlarges_the_centre_and_keeps_flat_areas_flat():
    size = 40
    batch = np.zeros((1, 3, size, size), np.float32)
    batch[..., 15:25, 15:25] = 1.0  # a 10-pixel square in the middle
    zoomed = apply_view(batch, "zoom")
    assert (zoomed > 0.5).sum() > (batch > 0.5).sum() * 1.2  # the square grew (by about 1/0.85 per side)
    np.testing.assert_allclose(apply_view(np.ones_like(batch), "zoom"), 1.0, atol=1e-6)
    np.testing.assert_allclose(resize_matrix(34, 40).sum(axis=1), 1.0, atol=1e-6)
    with pytest.raises(ValueError, match="unknown view"):
        apply_view(batch, "rotate")


def test_shrink_keeps_the_letterbox_corner_and_its_boxes_follow_the_object():
    from modeldesk.trainers.detection.head import view_boxes

    size = 40
    batch = np.zeros((1, 3, size, size), np.float32)
    batch[..., 8:24, 16:32] = 1.0  # an object at x 16..32, y 8..24
    shrunk = apply_view(batch, "shrink")
    ((x0, y0, x1, y1),) = view_boxes([[16, 8, 32, 24]], "shrink", size)
    inside = shrunk[0, 0, int(y0) + 1 : int(y1) - 1, int(x0) + 1 : int(x1) - 1]
    assert inside.min() > 0.9 and (shrunk[0, 0] > 0.5).sum() == pytest.approx((x1 - x0) * (y1 - y0), rel=0.1)
    assert np.all(shrunk[..., 30:, :] == 0) and np.all(shrunk[..., :, 30:] == 0)  # the rest is padding
    with pytest.raises(ValueError, match="cannot be used to train a detector"):
        view_boxes([[0, 0, 1, 1]], "zoom", size)

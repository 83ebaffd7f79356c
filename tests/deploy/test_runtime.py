"""Runtimes a model can run on: a batch split into one slice per thread gives the same answers."""

from __future__ import annotations

import numpy as np
import pytest

from modeldesk.deploy import Predictor, load_artifact, save_artifact
from modeldesk.deploy.runtime import SplitBatchSession, create_runtime_session, create_session


@pytest.mark.parametrize("rows", [1, 2, 3, 8])
def test_split_batch_session_answers_as_one_session(deploy_helpers, rows):
    model = deploy_helpers.build_standin_model(size=64).SerializeToString()
    split = create_runtime_session(model, "onnxruntime-split", device="cpu", threads=2)
    assert isinstance(split, SplitBatchSession)
    plain = create_session(model, device="cpu", threads=1)
    batch = np.random.default_rng(rows).normal(size=(rows, 3, 64, 64)).astype(np.float32)
    name = plain.get_inputs()[0].name
    np.testing.assert_allclose(
        split.run(None, {name: batch})[0], plain.run(None, {name: batch})[0], atol=1e-6
    )
    assert [i.name for i in split.get_inputs()] == [name]
    split.close()


def test_one_thread_or_plain_runtime_is_a_plain_session(deploy_helpers):
    model = deploy_helpers.build_standin_model(size=64).SerializeToString()
    assert not isinstance(
        create_runtime_session(model, "onnxruntime-split", device="cpu", threads=1), SplitBatchSession
    )
    assert not isinstance(create_runtime_session(model, None, device="cpu", threads=2), SplitBatchSession)
    with pytest.raises(ValueError, match="unknown runtime"):
        create_runtime_session(model, "tensorflow", device="cpu")


def test_predictor_runs_the_runtime_its_card_names(standin_artifact, color_data, tmp_path):
    artifact = load_artifact(standin_artifact)
    card = {**artifact.card, "runtime": {"name": "onnxruntime-split"}}
    path = save_artifact(tmp_path / "split", artifact.model_path.read_bytes(), card)
    split = Predictor(path, device="cpu", threads=2)
    assert isinstance(split.session, SplitBatchSession)
    paths = [p for p, _ in color_data["val"]]
    expected = Predictor(standin_artifact, device="cpu", threads=1).predict(paths)
    assert [a["label"] for a in split.predict(paths)] == [a["label"] for a in expected]


def test_a_graph_whose_outputs_are_not_batch_first_is_not_split(deploy_helpers):
    """A detector's boxes of the whole batch (K, 7) cannot be put back together from slices."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Flatten", ["x"], ["y"], axis=0)],
        "flat",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "K"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    session = create_runtime_session(model.SerializeToString(), "onnxruntime-split", device="cpu", threads=2)
    assert not isinstance(session, SplitBatchSession)
    assert session.run(None, {"x": np.ones((4, 3), np.float32)})[0].shape == (1, 12)


def test_many_threads_get_at_most_max_slices(deploy_helpers, monkeypatch):
    from modeldesk.deploy import runtime

    monkeypatch.setattr(runtime, "MAX_SLICES", 2)
    model = deploy_helpers.build_standin_model(size=64).SerializeToString()
    split = runtime.SplitBatchSession(model, threads=4)
    assert len(split.slices) == 2
    batch = np.random.default_rng(5).normal(size=(5, 3, 64, 64)).astype(np.float32)
    plain = create_session(model, device="cpu", threads=1)
    np.testing.assert_allclose(
        split.run(None, {"image": batch})[0], plain.run(None, {"image": batch})[0], atol=1e-6
    )
    split.close()

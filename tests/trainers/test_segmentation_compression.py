"""A segmentation model's smaller copies go through the shared verdict, judged on mean IoU photo by photo."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from modeldesk.app.workspace import Workspace
from modeldesk.deploy import load_artifact, quantize

from .segmentation_data import write_mask_folder
from .test_segmentation import TINY


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(workspace, model id) of the tests' tiny template trained on 12 scenes in a workspace."""
    from modeldesk.app.pipeline import labeled_samples
    from modeldesk.trainers.tasks import get_trainer

    root = tmp_path_factory.mktemp("segsmall")
    ws = Workspace(root / "ws", cleanup=False)
    ws.create_project("scenes", "segmentation")
    ws.import_data("scenes", write_mask_folder(root / "data", n=12, seed=0))
    samples = labeled_samples(ws.store, ws.project("scenes"))
    result = get_trainer("segmentation").train(samples, TINY, root / "model", ws.paths.cache / "features")
    model = load_artifact(result.artifact_dir).id
    ws.store.add_model(ws.project("scenes"), model, result.artifact_dir, TINY.name, result.metrics)
    yield ws, model
    ws.close()


def test_an_8bit_copy_that_keeps_the_masks_is_kept(trained, tmp_path):
    ws, model = trained
    assert ws.compression_refusal(model) == ""  # no "not available" sentence for masks any more
    result = ws.export_model(model, tmp_path / "small", compress=True)
    assert result["metric"] == "miou"
    names = {c["name"]: c for c in result["candidates"]}
    assert {"fp32", "int8-qdq-perchannel"} <= set(names)
    copy = names["int8-qdq-perchannel"]
    assert copy["code"] in ("kept", "not_faster", "slower", "as_fast_less_accurate"), copy
    assert abs(copy["accuracy"] - names["fp32"]["accuracy"]) < 0.02  # mean IoU, paired on the photos
    assert copy.get("loss_bound") is not None and copy["loss_bound"] <= 1.0, copy


_QUANTIZE = quantize.Quantizer.quantize


def _worse(self, fmt="qdq", per_channel=False, keep_first=False) -> bytes:
    """A real 8-bit copy that then calls almost every pixel the first class: its head's last bias raised."""
    model = onnx.load_from_string(_QUANTIZE(self, fmt, per_channel, keep_first))
    biases = [i for i in model.graph.initializer if i.name.startswith("seghead/") and i.name.endswith("/b")]
    last = sorted(biases, key=lambda i: i.name)[-1]
    values = numpy_helper.to_array(last).copy()
    values[0] += 50.0
    last.CopyFrom(numpy_helper.from_array(values, last.name))
    return model.SerializeToString()


def test_a_copy_that_loses_the_masks_is_refused(trained, tmp_path, monkeypatch):
    ws, model = trained
    monkeypatch.setattr(quantize.Quantizer, "quantize", _worse)
    result = ws.export_model(model, tmp_path / "small", compress=True)
    rows = {c["name"]: c for c in result["candidates"]}
    assert result["chosen"] == "fp32", result["chosen"]
    worse = rows["int8-qdq-perchannel"]
    assert worse["code"] == "less_accurate" and worse["accuracy"] < rows["fp32"]["accuracy"] - 0.1, worse
    assert np.isfinite(worse["loss_bound"]) and worse["loss_bound"] > 1.0

"""The skeleton of ``TaskTrainer.train``: the order of its hooks, the card, the result, its options."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
from onnx import TensorProto, helper

from modeldesk.trainers.base import PARITY_TOLERANCE, TaskTrainer
from modeldesk.trainers.data import LabeledSample


@dataclass(frozen=True)
class CutTemplate:
    name: str = "numbers/cut"
    task: str = "numbers"
    time_budget_s: float = 5.0


def _graph():
    """x (N, 1) -> [1 - sigmoid(x - cut), sigmoid(x - cut)] as ``probabilities``."""
    nodes = [
        helper.make_node("Sub", ["x", "cut"], ["centred"]),
        helper.make_node("Sigmoid", ["centred"], ["high"]),
        helper.make_node("Sub", ["one", "high"], ["low"]),
        helper.make_node("Concat", ["low", "high"], ["probabilities"], axis=1),
        helper.make_node("Identity", ["x"], ["unused"]),  # no output needs it: pruned before saving
    ]
    graph = helper.make_graph(
        nodes,
        "cut",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 2])],
        [
            helper.make_tensor("cut", TensorProto.FLOAT, [], [0.0]),
            helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class CutTrainer(TaskTrainer):
    """Numbers above 0 are "high": the smallest task the skeleton can run, noting each hook's call."""

    train_options = {"threads": 2}

    def __init__(self, parity: float = 0.0, evaluates_export: bool = False):
        self.calls: list[str] = []
        self.parity = parity
        self.evaluates_export = evaluates_export

    def prepare(self, run, samples):
        self.calls.append("prepare")
        labeled = [s for s in samples if s.target is not None]
        return labeled, sorted({s.target for s in labeled})

    def plan(self, run):
        self.calls.append("plan")
        return {"eta_s": 1.0, "plan": {"devices": [{"name": "cpu", "threads": run.options["threads"]}]}}

    def features(self, run):
        self.calls.append("features")
        run.report("Reading numbers", 0.5)
        return np.array([float(s.source) for s in run.labeled])

    def fit(self, run):
        self.calls.append("fit")
        return 0.0

    def measure(self, run):
        self.calls.append("measure")
        return {"accuracy": 1.0, "split": "train"}

    def measure_export(self, run, artifact_dir):
        self.calls.append("measure_export")
        assert (artifact_dir / "model.onnx").exists()
        return {"accuracy": 0.5, "split": "test"}

    def build_graph(self, run):
        self.calls.append("build_graph")
        return _graph()

    def check_export(self, run, model):
        self.calls.append("check_export")
        run.metrics["export_max_abs_diff"] = self.parity
        if self.parity > PARITY_TOLERANCE:
            raise RuntimeError("exported graph disagrees")

    def card_fields(self, run):
        return {"input_name": "x", "output_name": "probabilities", "cut": run.fitted}

    def finish(self, run, card, artifact_dir):
        self.calls.append("finish")


SAMPLES = [LabeledSample(f"k{i}", str(v), "high" if v > 0 else "low") for i, v in enumerate((-2, -1, 1, 2))]


def test_the_skeleton_calls_each_hook_in_order_and_writes_the_card(tmp_path):
    trainer, stages = CutTrainer(), []
    result = trainer.train(
        SAMPLES + [LabeledSample("u", "3", None)],
        CutTemplate(),
        tmp_path / "model",
        tmp_path / "cache",
        progress=lambda stage, fraction, eta, metrics: stages.append(stage),
        model_id="m1",
        threads=4,
    )
    assert trainer.calls == [
        "prepare", "plan", "features", "fit", "measure", "build_graph", "check_export", "finish"
    ]  # fmt: skip
    assert stages == ["Reading numbers", "Evaluating", "Exporting", "Done"]
    card = json.loads((result.artifact_dir / "model.json").read_text())
    assert card["id"] == "m1" and card["task"] == "numbers" and card["template"] == "numbers/cut"
    assert card["labels"] == ["high", "low"] and card["target"] == "label" and card["cut"] == 0.0
    assert card["metrics"] == {"accuracy": 1.0, "split": "train", "export_max_abs_diff": 0.0}
    assert card["training"]["samples"] == {"train": 4, "val": 0, "test": 0}
    assert "versions" in card
    assert result.plan["devices"] == [{"name": "cpu", "threads": 4}] and result.plan["eta_s"] == 1.0
    assert result.plan["actual_s"] >= 0
    import onnx

    assert "unused" not in {n.output[0] for n in onnx.load(result.artifact_dir / "model.onnx").graph.node}


def test_an_exported_evaluation_runs_on_the_saved_graph_and_saves_the_card_again(tmp_path):
    trainer = CutTrainer(evaluates_export=True)
    result = trainer.train(SAMPLES, CutTemplate(), tmp_path / "model", tmp_path / "cache")
    assert trainer.calls.index("measure_export") > trainer.calls.index("check_export")
    assert "measure" not in trainer.calls
    card = json.loads((result.artifact_dir / "model.json").read_text())
    assert card["metrics"] == {"accuracy": 0.5, "split": "test"} == result.metrics


def test_a_graph_that_disagrees_is_not_saved(tmp_path):
    with pytest.raises(RuntimeError, match="disagrees"):
        CutTrainer(parity=1e-2).train(SAMPLES, CutTemplate(), tmp_path / "model", tmp_path / "cache")
    assert not (tmp_path / "model").exists()


def test_an_option_the_task_does_not_take_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="cluster"):
        CutTrainer().train(SAMPLES, CutTemplate(), tmp_path / "model", tmp_path / "cache", cluster="x")


class RefitCutTrainer(CutTrainer):
    """Measures the cut it fitted, then moves it (the final model) before the export, at its own stages."""

    stage_at = {"Evaluating": 0.6, "Exporting": 0.8}

    def refit(self, run):
        self.calls.append("refit")
        assert run.metrics == {"accuracy": 1.0, "split": "train"}  # measured on the first fit
        run.report("Training on every number", 0.7)
        return 0.5


def test_refit_gives_the_exported_model_after_the_measurement_at_the_tasks_stages(tmp_path):
    trainer, stages = RefitCutTrainer(), []
    result = trainer.train(
        SAMPLES,
        CutTemplate(),
        tmp_path / "model",
        tmp_path / "cache",
        progress=lambda stage, fraction, eta, metrics: stages.append((stage, fraction)),
    )
    assert trainer.calls[trainer.calls.index("measure") :][:3] == ["measure", "refit", "build_graph"]
    assert [s for s in stages if s[0] != "Reading numbers"] == [
        ("Evaluating", 0.6), ("Training on every number", 0.7), ("Exporting", 0.8), ("Done", 1.0)
    ]  # fmt: skip
    card = json.loads((result.artifact_dir / "model.json").read_text())
    assert card["cut"] == 0.5  # the card and the graph are the refitted model's


def test_readable_photos_leave_out_and_name_each_photo_that_does_not_open(tmp_path):
    from PIL import Image

    from modeldesk.trainers.base import Run

    good, broken, missing = tmp_path / "good.png", tmp_path / "broken.jpg", tmp_path / "missing.png"
    Image.new("RGB", (8, 8), "red").save(good)
    broken.write_bytes(b"\xff\xd8 not a jpeg")
    run = Run(None, tmp_path, tmp_path, 10.0, "cpu", None, None, {})
    run.labeled = [LabeledSample(str(i), str(p), "a") for i, p in enumerate((good, broken, missing))]
    assert [s.source for s in run.readable_photos()] == [str(good)]
    assert [entry["file"] for entry in run.skipped] == [str(broken), str(missing)]
    assert all(entry["reason"] for entry in run.skipped)

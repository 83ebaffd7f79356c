"""A task from outside ModelDesk, announced through the ``modeldesk.tasks`` entry point group.

"image-brightness" sorts images into "dark" and "bright" by their mean pixel value. Its trainer
learns the cut between the two classes and writes a three-node ONNX graph; everything else (the
project, import, the job queue, evaluation, export, prediction) is ModelDesk's own. The test copies
this file next to a ``.dist-info`` folder so that the worker process finds it the way it would find
an installed plugin.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from modeldesk.deploy.artifact import save_artifact
from modeldesk.deploy.preprocess import ImageSpec, preprocess_batch
from modeldesk.errors import UserError
from modeldesk.trainers.evaluation import evaluate_labels
from modeldesk.trainers.tasks import Task, TrainResult

SPEC = ImageSpec(size=16)


@dataclass(frozen=True)
class ToyTemplate:
    name: str = "image-brightness/cut"
    task: str = "image-brightness"
    description: str = "Learns the brightness that separates dark from bright images."
    time_budget_s: float = 10.0

    def to_dict(self) -> dict:
        return asdict(self)


TEMPLATES = (ToyTemplate(),)


def _graph(cut: float, labels: list[str]):
    """image (N, 3, 16, 16) -> mean -> logistic around the cut -> (N, 2) in ``labels`` order."""
    dark_first = labels == ["bright", "dark"]
    nodes = [
        helper.make_node("ReduceMean", ["image"], ["mean"], axes=[1, 2, 3], keepdims=0),
        helper.make_node("Sub", ["mean", "cut"], ["centred"]),
        helper.make_node("Mul", ["centred", "sharpness"], ["logit"]),
        helper.make_node("Sigmoid", ["logit"], ["p_bright"]),
        helper.make_node("Sub", ["one", "p_bright"], ["p_dark"]),
        helper.make_node("Unsqueeze", ["p_bright", "axis"], ["col_bright"]),
        helper.make_node("Unsqueeze", ["p_dark", "axis"], ["col_dark"]),
        helper.make_node(
            "Concat",
            ["col_bright", "col_dark"] if dark_first else ["col_dark", "col_bright"],
            ["probabilities"],
            axis=1,
        ),
    ]
    inits = [
        numpy_helper.from_array(np.array(v, np.float32), n)
        for n, v in (("cut", cut), ("sharpness", 8.0), ("one", 1.0))
    ]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis"))
    graph = helper.make_graph(
        nodes,
        "toy",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 2])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


class ToyTrainer:
    def check(self, samples) -> None:
        if {s.target for s in samples} != {"bright", "dark"}:
            raise UserError("label images 'bright' and 'dark'")

    def estimate(self, samples, template, cache_dir, *, device="auto", time_budget=None) -> dict:
        return {"eta_s": 1.0, "plan": {"devices": [{"name": "cpu", "share": 1.0}], "eta_s": 1.0}}

    def train(
        self,
        samples,
        template,
        out_dir,
        cache_dir,
        *,
        time_budget=None,
        device="auto",
        progress=None,
        should_stop=None,
        model_id=None,
    ) -> TrainResult:
        started = time.monotonic()
        labels = sorted({s.target for s in samples})
        means = preprocess_batch([s.source for s in samples], SPEC).mean(axis=(1, 2, 3))
        cut = float(
            (
                means[[s.target == "dark" for s in samples]].max()
                + means[[s.target == "bright" for s in samples]].min()
            )
            / 2
        )
        card = {
            "id": model_id,
            "task": template.task,
            "target": "label",
            "labels": labels,
            "preprocessing": SPEC.to_dict(),
            "template": template.name,
        }
        path = save_artifact(out_dir, _graph(cut, labels), card)
        metrics = evaluate_labels(path, samples)
        save_artifact(out_dir, _graph(cut, labels), {**card, "metrics": metrics})
        if progress is not None:
            progress("Done", 1.0, 0.0, {"accuracy": metrics["accuracy"]})
        return TrainResult(Path(path), metrics, plan={"eta_s": 1.0, "actual_s": time.monotonic() - started})

    def evaluate(self, artifact_path, samples, *, progress=None) -> dict:
        return evaluate_labels(artifact_path, samples, progress=progress)


TASK = Task(
    "image-brightness",
    "Tell dark from bright",
    "A toy task registered by a plugin.",
    input_kind="image",
    target="label",
    trainer=f"{__name__}:ToyTrainer",
    templates=f"{__name__}:TEMPLATES",
)

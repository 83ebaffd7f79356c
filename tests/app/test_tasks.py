"""The task seam: a task added from outside the project runs through the whole Workspace."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from modeldesk.app.workspace import Workspace
from modeldesk.trainers import tasks

PLUGIN = Path(__file__).with_name("toy_task_plugin.py")


@pytest.fixture
def toy_plugin(tmp_path, monkeypatch):
    """Install the toy plugin as an installed distribution would be: a module and its entry point."""
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(PLUGIN, site / "toy_task_plugin.py")
    info = site / "toy_task_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-task-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[modeldesk.tasks]\nbrightness = toy_task_plugin:TASK\n")
    monkeypatch.syspath_prepend(str(site))
    # the worker process that trains finds the plugin on its path, as it would an installed one
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    importlib.invalidate_caches()
    tasks.reload_entry_points()
    yield site
    tasks.unregister_task("image-brightness")
    sys.modules.pop("toy_task_plugin", None)


def _write_images(root: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for label, (low, high) in {"dark": (10, 90), "bright": (160, 245)}.items():
        (root / label).mkdir(parents=True)
        for i in range(8):
            pixels = rng.integers(low, high, (20, 20, 3)).astype(np.uint8)
            Image.fromarray(pixels).save(root / label / f"{label}{i}.png")


def test_a_task_registered_by_a_plugin_runs_through_the_workspace(toy_plugin, tmp_path):
    ws = Workspace(tmp_path / "ws")
    try:
        offered = {t["name"]: t for t in ws.tasks()}
        assert offered["image-brightness"]["trainable"]
        assert offered["image-brightness"]["templates"] == ["image-brightness/cut"]
        ws.create_project("light", "image-brightness")
        _write_images(tmp_path / "data", seed=1)
        assert ws.import_data("light", tmp_path / "data")["added"] == 16

        result = ws.train("light", "image-brightness/cut")  # runs in a worker process
        assert result["metrics"]["accuracy"] == 1.0

        _write_images(tmp_path / "unseen", seed=2)
        assert ws.evaluate(result["model"], tmp_path / "unseen")["accuracy"] == 1.0
        exported = ws.export_model(result["model"], tmp_path / "out")
        answers = ws.predict(
            exported["path"],
            [tmp_path / "unseen" / "dark" / "dark0.png", tmp_path / "unseen" / "bright" / "bright3.png"],
        )
        assert [a["label"] for a in answers] == ["dark", "bright"]
    finally:
        ws.close()


def test_a_task_that_cannot_train_says_why_instead_of_offering_templates(tmp_path):
    tasks.register_task(
        tasks.Task(
            "image-regions",
            "Paint regions",
            "Not yet.",
            "image",
            "label",
            missing="Painting regions is not available yet.",
        )
    )
    ws = Workspace(tmp_path / "ws")
    try:
        info = ws.task("image-regions")
        assert not info["trainable"] and info["templates"] == []
        ws.create_project("walls", "image-regions")
        with pytest.raises(ValueError, match="Painting regions is not available yet"):
            ws.submit_training("walls", "image-classification/fast")
    finally:
        ws.close()
        tasks.unregister_task("image-regions")


def test_unknown_task_names_the_choices(tmp_path):
    ws = Workspace(tmp_path / "ws")
    try:
        with pytest.raises(
            ValueError, match="unknown task 'regression'; choose one of: image-classification"
        ):
            ws.create_project("x", "regression")
    finally:
        ws.close()


def test_registry_import_loads_no_trainer():
    import subprocess

    code = (
        "import sys, modeldesk.trainers.tasks as t; t.list_tasks(); "
        "print(sorted(m for m in sys.modules if m.startswith('modeldesk.trainers.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "image_classification" not in out and "heads" not in out and "onnxruntime" not in out


def test_recipe_descriptions_leave_durations_to_the_estimate():
    """A card said 'Takes minutes' above 'About 30 s': how long a recipe takes is the measured estimate's
    to say, on this computer and this data, never a fixed phrase in its description."""
    import re

    from modeldesk.trainers.templates import list_templates

    durations = re.compile(r"trains in|takes|in seconds|\bminutes?\b|\bhours?\b", re.IGNORECASE)
    said = {t.name: t.description for t in list_templates() if durations.search(t.description)}
    assert not said, said

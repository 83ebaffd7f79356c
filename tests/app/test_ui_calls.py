"""The Workspace calls the desktop app uses (app/projects.py, app/training.py, app/serving.py), headless."""

from __future__ import annotations

from pathlib import Path

import pytest

from modeldesk.app.workspace import Workspace

ALL_WORKING = {
    "cpu": {"physical_cores": 2},
    "memory": {"total_bytes": 8e9},
    "gpus": [{"name": "Some GPU", "memory_total_bytes": 8e9}],
    "providers": {
        "CPUExecutionProvider": True,
        "CUDAExecutionProvider": True,
        "DmlExecutionProvider": True,
        "CoreMLExecutionProvider": True,
        "ROCMExecutionProvider": True,
    },
}


@pytest.fixture
def ws(tmp_path, shapes_folder):
    workspace = Workspace(tmp_path / "ws")
    workspace.create_project("shapes", "image-classification")
    workspace.import_data("shapes", shapes_folder)
    yield workspace
    workspace.close()


def test_every_device_the_ui_offers_is_accepted_end_to_end(ws):
    from modeldesk.deploy.runtime import providers_for

    choices = [device for device, _words in ws.device_choices(ALL_WORKING)]
    assert {"auto", "cpu", "cuda", "directml", "coreml"} <= set(choices)
    template = ws.templates("image-classification")[0]["name"]
    for device in choices:
        assert providers_for(device)[-1] == "CPUExecutionProvider"  # the runtime knows the name
        plan = ws.estimate_training("shapes", template, device=device)  # and so does the planner
        assert plan["eta_s"] > 0, device  # every device the UI offers gets a real estimate


def test_device_choices_follow_what_works_here(ws):
    nothing = {**ALL_WORKING, "gpus": [], "providers": {"CPUExecutionProvider": True}}
    assert [d for d, _ in ws.device_choices(nothing)] == ["auto", "cpu"]


def test_training_readiness_says_why_in_one_sentence(ws, tmp_path, shapes_folder):
    assert ws.training_readiness("shapes") == ""
    ws.create_project("one", "image-classification")
    ws.import_data("one", shapes_folder / sorted(p.name for p in shapes_folder.iterdir())[0])
    ws.annotate(ws.sample_ids("one")[0], "label", "circle")
    reason = ws.training_readiness("one")
    assert "2 classes" in reason and "Error" not in reason


def test_annotate_each_target_and_read_it_back(ws, tmp_path, shapes_folder):
    sid = ws.sample_ids("shapes")[0]
    ws.annotate(sid, "label", "star")
    assert ws.sample(sid).labels == ["star"]
    ws.create_project("finder", "object-detection")
    ws.import_data("finder", shapes_folder, format="flat")
    box_id = ws.sample_ids("finder")[0]
    ws.annotate(box_id, "boxes", [("thing", 1, 2, 10, 12)])
    (box,) = ws.sample(box_id).boxes
    assert (box.label, box.x0, box.y1) == ("thing", 1.0, 12.0)
    with pytest.raises(ValueError):
        ws.annotate(sid, "colour", "red")


def test_labeling_order_puts_the_unlabeled_first(ws):
    first = ws.sample_ids("shapes")[0]
    ws.annotate(first, "label", None)
    order = ws.labeling_order("shapes", "unlabeled")
    assert order[0] == first and sorted(order) == sorted(ws.sample_ids("shapes"))
    assert ws.labeling_order("shapes", "order") == ws.sample_ids("shapes")


def test_gallery_rows_mark_what_the_model_got_wrong(ws):
    ids = ws.sample_ids("shapes")
    ws.store.add_model("shapes", "m1", ws.paths.models / "m1", "image-classification/fast", {})
    truth = ws.sample(ids[0]).labels[0]
    ws.store.save_predictions(
        "m1", [(ids[0], truth + "-not", 0.9), (ids[1], ws.sample(ids[1]).labels[0], 0.9)]
    )
    rows = ws.gallery_rows("shapes", wrong_only=True, model_id="m1")
    assert rows["ids"] == [ids[0]] and rows["wrong"] == {ids[0]}
    assert "≠" in rows["captions"][ids[0]]


def test_gallery_mistakes_include_those_evaluate_lists(ws, tmp_path):
    """Evaluate lists the mistakes of the held-out evaluation; the final model, refit on every labeled
    photo, may get the same photo right, so its saved guesses alone left the Data page's filter empty."""
    from onnx import TensorProto, helper

    from modeldesk.deploy import save_artifact

    ids = ws.sample_ids("shapes")
    sample = ws.sample(ids[2])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["image"], ["probabilities"])],
        "g",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 2])],
    )
    mistake = {"key": sample.content_hash, "true": sample.labels[0], "predicted": "triangle", "score": 0.6}
    card = {"labels": ["circle", "triangle"], "metrics": {"accuracy": 0.9, "mistakes": [mistake]}}
    path = save_artifact(ws.paths.models / "m2", helper.make_model(graph), card)
    ws.store.add_model("shapes", "m2", path, "image-classification/fast", {"accuracy": 0.9})
    ws.store.save_predictions("m2", [(sid, ws.sample(sid).labels[0], 0.99) for sid in ids])  # all right now
    rows = ws.gallery_rows("shapes", wrong_only=True, model_id="m2")
    assert rows["ids"] == [ids[2]] and rows["captions"][ids[2]] == f"{sample.labels[0]} ≠ triangle"


def test_tasks_say_which_can_train(ws):
    from modeldesk.datasets.records import KINDS, TARGETS

    tasks = {t["name"]: t for t in ws.tasks()}
    assert tasks["image-classification"]["trainable"] and tasks["image-classification"]["templates"]
    for task in tasks.values():
        assert task["input_kind"] in KINDS  # a registered kind of sample (datasets/kinds/)
        assert task["target"] in TARGETS  # a registered kind of annotation
        # the test extra installs every weight package, so every task trains here and misses nothing
        assert task["trainable"] and not task["missing"], task
    info = ws.project_info("shapes")
    assert (info["input_kind"], info["target"]) == ("image", "label")


def test_a_model_is_served_on_the_same_port_each_time(ws):
    import socket

    import httpx

    from modeldesk.app.service_handle import free_port

    model = ws.train("shapes", "image-classification/fast")["model"]
    ws.settings.service_port = free_port()  # the workspace's default port, free now
    first = ws.serve_model(model)
    try:
        assert first.url.endswith(f":{ws.settings.service_port}/") and first.note == ""
        assert httpx.get(first.url + "healthz", timeout=10).status_code == 200
    finally:
        first.stop()
    again = ws.serve_model(model)
    again.stop()
    assert again.url == first.url
    port = int(first.url.rsplit(":", 1)[1].strip("/"))
    with socket.socket() as taken:  # another program holds the port now
        taken.bind(("127.0.0.1", port))
        taken.listen()
        moved = ws.serve_model(model)
        moved.stop()
    assert moved.url != first.url and f"port {port} is in use" in moved.note
    ws.jobs.close()


def test_the_kept_compressed_copy_is_tried_served_and_bundled_with_a_way_back(ws, tmp_path):
    import json

    model = ws.train("shapes", "image-classification/fast")["model"]
    copy = Path(ws.export_model(model, tmp_path / "smaller")["path"])  # stands in for a compressed copy
    card = json.loads((copy / "model.json").read_text())
    card["marker"] = "the copy"
    (copy / "model.json").write_text(json.dumps(card))
    assert ws.serving_path(model) == ws.model_path(model)
    ws.use_compressed(model, copy)
    assert ws.compressed_in_use(model) == str(copy.resolve())
    assert ws.serving_path(model) == copy.resolve()
    assert ws._predictor(model).artifact.path.resolve() == copy.resolve()  # what Try it predicts with
    bundle = Path(ws.export_model(model, tmp_path / "bundle", bundle=True)["path"])
    shipped = next(bundle.rglob("model.json"))
    assert json.loads(shipped.read_text()).get("marker") == "the copy"  # the bundle carries the copy in use
    ws.use_compressed(model, None)  # the way back
    assert ws.serving_path(model) == ws.model_path(model) and ws.compressed_in_use(model) is None
    ws.jobs.close()

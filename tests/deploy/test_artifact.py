import json

import pytest

from modeldesk.deploy.artifact import ArtifactError, load_artifact, new_model_id, save_artifact


def test_round_trip_accepts_folder_card_and_graph_paths(tmp_path, deploy_helpers):
    model = deploy_helpers.build_standin_model()
    path = save_artifact(tmp_path / "m", model, deploy_helpers.standin_card(id="abc"))
    for where in (path, path / "model.json", path / "model.onnx", str(path)):
        artifact = load_artifact(where)
        assert artifact.path == path
        assert artifact.id == "abc"
        assert artifact.labels == deploy_helpers.LABELS
        assert artifact.spec.size == 224
    card = json.loads((path / "model.json").read_text())
    for key in (
        "id",
        "task",
        "labels",
        "preprocessing",
        "template",
        "metrics",
        "versions",
        "created",
        "input_name",
        "output_name",
        "warnings",
    ):
        assert key in card
    assert (path / "model.onnx").read_bytes() == model.SerializeToString()


def test_save_accepts_bytes_and_replaces_atomically(tmp_path, deploy_helpers):
    blob = deploy_helpers.build_standin_model().SerializeToString()
    first = save_artifact(tmp_path / "m", blob, deploy_helpers.standin_card(id="one"))
    save_artifact(first, blob, deploy_helpers.standin_card(id="two"))
    assert load_artifact(first).id == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary or old folders left


def test_refuses_to_overwrite_a_folder_that_is_not_an_artifact(tmp_path, deploy_helpers):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"x")
    with pytest.raises(ArtifactError, match="not a model artifact"):
        save_artifact(tmp_path / "photos", b"", deploy_helpers.standin_card())
    assert (tmp_path / "photos" / "cat.jpg").exists()


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda p: None, "no such model artifact"),
        (lambda p: p.mkdir(), "missing model.onnx, model.json"),
        (
            lambda p: (
                p.mkdir(),
                (p / "model.onnx").write_bytes(b"x"),
                (p / "model.json").write_text("{oops"),
            ),
            "unreadable",
        ),
        (
            lambda p: (
                p.mkdir(),
                (p / "model.onnx").write_bytes(b"x"),
                (p / "model.json").write_text('{"id": 1}'),
            ),
            "lacks",
        ),
        (
            lambda p: (
                p.mkdir(),
                (p / "model.onnx").write_bytes(b"x"),
                (p / "model.json").write_text(
                    '{"id":"a","task":"x","labels":["a"],"preprocessing":{"kind":"table"}}'
                ),
            ),
            "takes 'table' inputs, which this version of the app cannot read",
        ),
        (
            lambda p: (
                p.mkdir(),
                (p / "model.onnx").write_bytes(b"x"),
                (p / "model.json").write_text(
                    '{"id":"a","task":"x","labels":["a"],"preprocessing":{},"target":"sketch"}'
                ),
            ),
            "predicts 'sketch'",
        ),
    ],
)
def test_clear_errors_for_things_that_are_not_artifacts(tmp_path, setup, message):
    path = tmp_path / "thing"
    setup(path)
    with pytest.raises(ArtifactError, match=message):
        load_artifact(path)


def test_card_needs_labels(tmp_path, deploy_helpers):
    with pytest.raises(ArtifactError, match="labels"):
        save_artifact(tmp_path / "m", b"", deploy_helpers.standin_card(labels=[]))


def test_model_ids_are_unique():
    assert len({new_model_id() for _ in range(50)}) == 50

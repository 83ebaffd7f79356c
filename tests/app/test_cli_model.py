"""Train, evaluate, predict, export and serve through the CLI, on one small model trained once."""

import base64
import json
import urllib.request

import pytest

from modeldesk.app.cli import main
from modeldesk.app.workspace import Workspace


@pytest.fixture(scope="module")
def trained(tmp_path_factory, shapes_folder):
    workspace = tmp_path_factory.mktemp("ws-model")

    def run(*args):
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main([*map(str, args), "--workspace", str(workspace), "--json"])
        assert code == 0, f"modeldesk {args} exited {code}"
        return json.loads(out.getvalue())

    run("project", "create", "shapes", "--task", "image-classification")
    run("import", "shapes", shapes_folder)
    result = run("train", "shapes", "--template", "image-classification/fast")
    run.workspace = workspace
    return run, result


def test_train_reports_model_metrics_and_plan(trained):
    _, result = trained
    assert result["model"].startswith("m-")
    # Three classes: chance is 33%; shapes this distinct are learned almost perfectly.
    assert result["metrics"]["accuracy"] >= 0.8
    assert result["plan"]["devices"] and result["plan"]["eta_s"] > 0 and result["plan"]["actual_s"] > 0


def test_templates_lists_every_trainable_task(trained):
    run, _ = trained
    names = {t["name"] for t in run("templates")["templates"]}
    assert {
        "image-classification/fast",
        "image-classification/accurate",
        "image-multilabel/standard",
    } <= names


def test_evaluate_and_predict_on_unseen_images(trained, holdout_folder):
    run, result = trained
    evaluation = run("evaluate", result["model"], holdout_folder)
    assert evaluation["accuracy"] >= 0.8
    assert set(evaluation) >= {"accuracy", "macro_f1", "per_class", "confusion"}
    files = sorted(holdout_folder.glob("*/*.jpg"))
    predictions = run("predict", result["model"], *files)["predictions"]
    assert len(predictions) == len(files)
    right = sum(p["label"] == f.parent.name for p, f in zip(predictions, files))
    assert right / len(files) >= 0.8
    assert all(set(p) >= {"label", "score", "scores"} for p in predictions)


def test_exported_model_predicts_like_the_app(trained, holdout_folder, tmp_path):
    run, result = trained
    exported = run("export", result["model"], tmp_path / "export")
    assert exported["size_bytes"] > 1_000_000
    files = sorted(holdout_folder.glob("*/*.jpg"))[:6]
    in_app = run("predict", result["model"], *files)["predictions"]
    from_export = run("predict", exported["path"], *files)["predictions"]
    assert [p["label"] for p in in_app] == [p["label"] for p in from_export]


def test_service_answers_a_prediction(trained, holdout_folder):
    run, result = trained
    image = sorted((holdout_folder / "square").glob("*.jpg"))[0]
    body = json.dumps({"image": base64.b64encode(image.read_bytes()).decode()}).encode()
    ws = Workspace(run.workspace)
    try:
        service = ws.start_service(result["model"])
        try:
            request = urllib.request.Request(
                service.url + "v1/predict", data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                answer = json.loads(response.read())
        finally:
            service.stop()
    finally:
        ws.close()
    assert answer["predictions"][0]["label"] == "square"
    assert not service.running


def test_model_has_an_offline_html_report_and_mistakes_point_at_samples(trained):
    run, result = trained
    ws = Workspace(run.workspace)
    try:
        html = ws.report_html(result["model"]).read_text(encoding="utf-8")
        report = ws.model_report(result["model"])
        project_ids = set(ws.store.sample_ids(ws.project("shapes")))
    finally:
        ws.close()
    assert "<svg" in html and "http://" not in html and "https://" not in html
    assert isinstance(report["mistakes"], list)
    assert all(m["sample_id"] in project_ids for m in report["mistakes"])


def test_training_jobs_are_listed_per_project(trained):
    run, _ = trained
    ws = Workspace(run.workspace)
    try:
        assert ws.training_jobs("shapes") == []
        (done,) = ws.training_jobs("shapes", states=("done",))
        assert done["params"]["template"] == "image-classification/fast"
    finally:
        ws.close()


def test_export_draws_its_progress_on_a_terminal(trained, tmp_path, monkeypatch, capsys):
    """The export's progress reaches a terminal's bar as a fraction with words (it was passed as
    (fraction, stage, eta) and failed on the first update in a real terminal)."""
    import io

    _, result = trained

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    code = main(["export", result["model"], str(tmp_path / "out"), "--workspace", str(trained[0].workspace)])
    assert code == 0, capsys.readouterr()
    assert "exporting [" in terminal.getvalue()

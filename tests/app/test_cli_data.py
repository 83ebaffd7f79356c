"""The data commands of the CLI and their JSON contract (DESIGN.md, "Command line")."""

from modeldesk.app.sample_data import SAMPLE_CLASSES


def test_project_create_and_list(cli):
    code, created = cli("project", "create", "shapes", "--task", "image-classification")
    assert code == 0 and created["name"] == "shapes" and created["task"] == "image-classification"
    code, listed = cli("project", "list")
    assert [p["name"] for p in listed["projects"]] == ["shapes"]


def test_import_stats_and_duplicates(cli, shapes_folder):
    cli("project", "create", "shapes", "--task", "image-classification")
    code, report = cli("import", "shapes", shapes_folder)
    assert code == 0
    assert report["added"] == 36 and report["duplicates"] == 0 and report["failed"] == []
    code, stats = cli("stats", "shapes")
    assert stats["samples"] == 36 and stats["labeled"] == 36 and stats["boxes"] == 0
    assert stats["labels"] == {name: 12 for name in SAMPLE_CLASSES}
    code, again = cli("import", "shapes", shapes_folder)
    assert again["added"] == 0 and again["duplicates"] == 36
    assert cli("stats", "shapes")[1]["samples"] == 36


def test_export_data_round_trips(cli, shapes_folder, tmp_path):
    cli("project", "create", "shapes", "--task", "image-classification")
    cli("import", "shapes", shapes_folder)
    code, exported = cli("export-data", "shapes", tmp_path / "out", "--format", "folder")
    assert code == 0 and exported["samples"] == 36
    cli("project", "create", "copy", "--task", "image-classification")
    code, report = cli("import", "copy", tmp_path / "out")
    assert report["added"] == 36
    assert cli("stats", "copy")[1]["labels"] == cli("stats", "shapes")[1]["labels"]


def test_errors_are_one_line_and_nonzero(cli, tmp_path):
    code, text = cli("stats", "nope", json_output=False)
    assert code == 1
    assert text.strip().count("\n") == 0 and "nope" in text
    cli("project", "create", "shapes", "--task", "image-classification")
    code, text = cli("import", "shapes", tmp_path / "missing-folder", json_output=False)
    assert code == 1 and "missing-folder" in text


def test_workspace_log_file_records_errors(cli):
    cli("stats", "nope", json_output=False)
    log_text = (cli.workspace / "logs" / "modeldesk.log").read_text()
    assert "nope" in log_text


def test_serve_refuses_another_host_without_a_token(cli, tmp_path):
    code, text = cli("serve", tmp_path / "no-model", "--host", "0.0.0.0", json_output=False)
    assert code == 1 and "token" in text and "serving" not in text

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


def test_options_work_before_or_after_the_command(tmp_path, capsys):
    import json

    from modeldesk.app.cli import main

    first, second = tmp_path / "first", tmp_path / "second"
    assert (
        main(
            ["--workspace", str(first), "--json", "project", "create", "a", "--task", "image-classification"]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["name"] == "a"
    assert (
        main(
            ["project", "create", "b", "--task", "image-classification", "--workspace", str(second), "--json"]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["name"] == "b"
    assert main(["--json", "project", "list", "--workspace", str(first)]) == 0
    assert [p["name"] for p in json.loads(capsys.readouterr().out)["projects"]] == ["a"]
    assert main(["--workspace", str(second), "project", "list", "--json"]) == 0
    assert [p["name"] for p in json.loads(capsys.readouterr().out)["projects"]] == ["b"]


def test_train_refuses_before_printing_a_plan(cli, shapes_folder):
    cli("project", "create", "one", "--task", "image-classification")
    cli("import", "one", shapes_folder / "circle")
    code, text = cli("train", "one", "--template", "image-classification/fast", json_output=False)
    assert code == 1 and "label some first" in text
    assert "plan:" not in text and "estimated time" not in text


def test_piping_into_head_ends_quietly(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "MODELDESK_WORKSPACE": str(tmp_path / "ws")}
    script = "import sys; from modeldesk.app.cli import main; sys.exit(main(['templates']))"
    shell = f'{sys.executable} -c "{script}" | head -c 10'
    result = subprocess.run(["bash", "-c", shell], env=env, capture_output=True, text=True, timeout=120)
    assert "BrokenPipe" not in result.stderr and "Traceback" not in result.stderr, result.stderr

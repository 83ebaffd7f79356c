"""The problem report holds logs and a description of the computer, never the user's data; and
the About facts (versions, licences, ``modeldesk --version``)."""

import json
import zipfile
from pathlib import Path

import pytest

from modeldesk import __version__
from modeldesk.app import about
from modeldesk.app.cli import main
from modeldesk.app.paths import WorkspacePaths
from modeldesk.app.problem_report import default_report_name, redact, write_problem_report


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = Path.home()
    paths = WorkspacePaths(home / "ws").create()
    paths.log.write_text(f"2024-01-01 INFO modeldesk: imported {home}/photos/cat.jpg\n", encoding="utf-8")
    (paths.log.parent / "jobs").mkdir()
    for number in range(14):
        (paths.log.parent / "jobs" / f"job-{number}.log").write_text(f"job {number} done\n", encoding="utf-8")
    (paths.media / "ab").mkdir()
    (paths.media / "ab" / "secret-photo.jpg").write_bytes(b"\xff\xd8 user data")
    paths.db.write_bytes(b"SQLite format 3\x00 labels")
    (paths.models / "m-1").mkdir()
    return paths


def test_report_holds_logs_and_environment_but_no_user_data(workspace, tmp_path):
    out = write_problem_report(workspace, tmp_path / "report", resources=False)
    assert out == tmp_path / "report.zip"
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        env = json.loads(archive.read("environment.json"))
        log_text = archive.read("logs/modeldesk.log").decode()
    assert {"environment.json", "README.txt", "logs/modeldesk.log"} <= names
    assert len([n for n in names if n.startswith("logs/jobs/")]) == 10  # the newest ten job logs
    assert not [n for n in names if "secret" in n or n.endswith((".db", ".jpg", ".onnx"))]
    assert "~/photos/cat.jpg" in log_text and str(Path.home()) not in log_text
    assert env["app"]["modeldesk"] == __version__
    assert env["workspace"]["models"] == 1
    assert any(c["name"] == "NumPy" and c["version"] for c in env["components"])
    assert not list(tmp_path.glob(".modeldesk-report-*")), "the temporary file is renamed into place"


def test_report_includes_the_resource_view(workspace, tmp_path):
    out = write_problem_report(workspace, tmp_path / "r.zip")
    env = json.loads(zipfile.ZipFile(out).read("environment.json"))
    assert "cpu" in env["resources"] or "error" in env["resources"]


def test_report_into_a_missing_folder_names_it(workspace, tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        write_problem_report(workspace, tmp_path / "nowhere" / "r.zip", resources=False)


def test_redact_leaves_other_paths_alone():
    assert redact("/home/ann/x and /data/y", home="/home/ann") == "~/x and /data/y"
    assert redact("/x", home="/") == "/x"
    assert default_report_name().startswith("modeldesk-report-") and default_report_name().endswith(".zip")


def test_about_lists_components_with_licences():
    names = {c["distribution"]: c for c in about.components()}
    assert names["python"]["licence"] == "PSF-2.0"
    assert names["PySide6-Essentials"]["licence"].startswith("LGPL-3.0")
    assert all(c["version"] and c["licence"] and c["licence"] != "UNKNOWN" for c in names.values())
    assert about.install_kind() == "Python package" and not about.is_frozen()
    assert "{where}" in about.QT_NOTICE


def test_version_flag_prints_version_and_install_kind(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"modeldesk {__version__} (Python package, Python ")

"""Files that used to hang or abort a whole import: a FIFO named like a photo or a JSON file, a stray
JSON file or a JSON Lines line nested 100,000 deep, a settings.json nested as deep. Each gets a message
naming it and the rest goes on."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from modeldesk.app.settings import Settings
from modeldesk.datasets import Store, import_path

DEEP = "[" * 100_000 + "]" * 100_000

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need a POSIX system")


def _import_within(store, project, path, seconds=20.0, fifos=()):
    """import_path in a thread; fails (instead of hanging the test run) when it does not end in time."""
    outcome: dict = {}

    def run():
        try:
            outcome["report"] = import_path(store, project, path)
        except BaseException as exc:  # noqa: BLE001 - handed to the test below
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    hung = thread.is_alive()
    deadline = time.monotonic() + 30
    while thread.is_alive() and time.monotonic() < deadline:
        for fifo in fifos:  # unblock readers stuck in open(): a writer that comes and goes gives EOF
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader waiting on this one
                pass
        thread.join(0.05)
    assert not hung, f"the import of {path} hung on a named pipe"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["report"]


@pytest.mark.parametrize("layout", ["flat", "class folders"])
def test_a_fifo_named_like_a_photo_or_a_json_file_is_skipped_with_a_message(layout, tmp_path, photos):
    src = tmp_path / "src"
    if layout == "flat":
        photos(tmp_path / "made", {"x": 4})
        src.mkdir()
        for i, path in enumerate(sorted((tmp_path / "made" / "x").iterdir())):
            path.rename(src / f"p{i}.jpg")
        fifos = [src / "pipe.png", src / "notes.json"]
    else:
        photos(src, {"cat": 2, "dog": 2})
        fifos = [src / "cat" / "pipe.png", src / "notes.json"]
    for fifo in fifos:
        os.mkfifo(fifo)
    with Store(tmp_path / "ws") as store:
        project = store.create_project("p", "image-classification", kind="image", target="label")
        report = _import_within(store, project, src, fifos=fifos)
    assert report.added == 4
    reasons = {entry["file"].rsplit("/", 1)[-1]: entry["reason"] for entry in report.failed}
    assert "named pipe" in reasons["pipe.png"]


def test_a_stray_json_nested_100000_deep_does_not_stop_the_import(tmp_path, photos):
    photos(tmp_path / "src", {"cat": 3, "dog": 3})
    (tmp_path / "src" / "notes.json").write_text(DEEP)
    with Store(tmp_path / "ws") as store:
        project = store.create_project("p", "image-classification", kind="image", target="label")
        report = import_path(store, project, tmp_path / "src")
    assert report.added == 6
    assert any("notes.json" in warning for warning in report.warnings)


def test_a_jsonl_line_nested_100000_deep_fails_alone(tmp_path):
    lines = [json.dumps({"text": "good one", "label": "a"}), DEEP, json.dumps({"text": "two", "label": "b"})]
    (tmp_path / "texts.jsonl").write_text("\n".join(lines) + "\n")
    with Store(tmp_path / "ws") as store:
        project = store.create_project("t", "text-classification", kind="text", target="label")
        report = import_path(store, project, tmp_path / "texts.jsonl")
    assert report.added == 2
    assert [entry["file"] for entry in report.failed] == ["texts.jsonl line 2"]
    assert "nested too deep" in report.failed[0]["reason"]


def test_a_deep_settings_file_is_named_set_aside_and_the_app_starts(tmp_path, cli):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "settings.json").write_text('{"device": ' + DEEP + "}")
    code, out, err = cli(ws, "project", "list", "--json")
    assert code == 0, err
    assert json.loads(out) == {"projects": []}
    assert "settings.json" in err and "nested too deep" in err
    kept = list(ws.glob("settings.json.broken-*"))
    assert len(kept) == 1 and kept[0].read_text().startswith('{"device": [[[')
    assert kept[0].name in err
    assert Settings.load(ws) == Settings()

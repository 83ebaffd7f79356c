"""Inputs an import used to refuse or mishandle as a whole: Excel's UTF-16 "Unicode text", a 200 KB
cell, a zip of many empty files (a summary, not one line each), a path table's symlink that leads out
of its folder, and WAV headers with impossible sample rates or cut short."""

from __future__ import annotations

import csv
import io
import json
import os
import wave
import zipfile

import numpy as np
import pytest

from modeldesk.datasets import Store, import_path
from modeldesk.datasets.items import MAX_FAILED_LISTED


def _text_project(store):
    return store.create_project("t", "text-classification", kind="text", target="label")


def test_excel_unicode_text_utf16_tab_separated_is_read(tmp_path):
    rows = ["text\tlabel", "très bien\tpos", "schlecht, leider\tneg", "很好\tpos"]
    (tmp_path / "reviews.csv").write_bytes("\r\n".join(rows).encode("utf-16"))  # BOM + UTF-16-LE
    with Store(tmp_path / "ws") as store:
        report = import_path(store, _text_project(store), tmp_path / "reviews.csv")
        texts = sorted(s.text for s in store.samples("t"))
    assert report.added == 3 and report.failed == []
    assert report.labels == {"neg": 1, "pos": 2}
    assert texts == sorted(["très bien", "schlecht, leider", "很好"])


def test_a_200_kb_cell_keeps_its_row(tmp_path):
    before = csv.field_size_limit()
    csv.field_size_limit(131072)  # the csv module's default, whatever an earlier test set
    try:
        long_text = "word " * 40_000  # 200,000 characters
        with open(tmp_path / "docs.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerows([["text", "label"], ["short one", "a"], [long_text, "b"], ["after it", "a"]])
        with Store(tmp_path / "ws") as store:
            report = import_path(store, _text_project(store), tmp_path / "docs.csv")
    finally:
        csv.field_size_limit(max(before, csv.field_size_limit()))
    assert report.failed == []
    assert report.added == 3


def test_a_zip_of_many_empty_members_is_summarised(tmp_path, photos, cli):
    empty = 3 * MAX_FAILED_LISTED + 17
    (good_a, good_b) = photos(tmp_path / "made", {"x": 2})
    with zipfile.ZipFile(tmp_path / "many.zip", "w") as archive:
        for i in range(empty):
            archive.writestr(f"e{i:05d}.png", b"")
        archive.write(good_a, "a.jpg")
        archive.write(good_b, "b.jpg")
    ws = tmp_path / "ws"
    assert cli(ws, "project", "create", "p", "--task", "image-classification")[0] == 0
    code, out, err = cli(ws, "import", "p", tmp_path / "many.zip", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["added"] == 2
    assert result["failed_total"] == empty
    assert len(result["failed"]) == MAX_FAILED_LISTED  # the same {file, reason} entries, capped
    assert set(result["failed"][0]) == {"file", "reason"}
    assert sum(entry["count"] for entry in result["failed_summary"]) == empty - MAX_FAILED_LISTED
    assert len(result["failed_summary"]) == 1
    code, out, err = cli(ws, "import", "p", tmp_path / "many.zip")
    lines = out.strip().splitlines()
    assert lines[0].startswith(f"added 0, duplicates 2, failed {empty}")
    assert len(lines) < 40
    assert f"{empty - 20:,} x " in out  # the files not named, counted by reason


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_path_table_symlink_leading_outside_its_folder_is_refused(tmp_path, photos):
    inside, secret, secret_folder = photos(tmp_path / "made", {"x": 3})
    table_dir = tmp_path / "data"
    table_dir.mkdir()
    inside.rename(table_dir / "in.jpg")
    (table_dir / "link.jpg").symlink_to(secret)
    (table_dir / "linked").symlink_to(secret_folder.parent, target_is_directory=True)
    (table_dir / "table.csv").write_text(
        f"path,label\nin.jpg,a\nlink.jpg,b\nlinked/{secret_folder.name},b\n", encoding="utf-8"
    )
    with Store(tmp_path / "ws") as store:
        project = store.create_project("p", "image-classification", kind="image", target="label")
        report = import_path(store, project, table_dir / "table.csv")
    assert report.added == 1
    refused = {entry["file"]: entry["reason"] for entry in report.failed}
    assert set(refused) == {"link.jpg", f"linked/{secret_folder.name}"}
    assert all("outside" in reason for reason in refused.values())


def _wav(rate: int, frames: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        tone = np.sin(np.arange(frames) * 0.05) * 8000 + np.arange(frames) % 7
        writer.writeframes(tone.astype("<i2").tobytes())
    return buffer.getvalue()


def test_wav_headers_with_impossible_rates_or_cut_short_are_refused_per_file(tmp_path):
    src = tmp_path / "clips"
    src.mkdir()
    (src / "good.wav").write_bytes(_wav(16_000, 16_000))
    (src / "one_hz.wav").write_bytes(_wav(1, 40))
    (src / "five_mhz.wav").write_bytes(_wav(5_000_005, 4_000))
    whole = _wav(22_050, 22_050)
    (src / "cut.wav").write_bytes(whole[: len(whole) // 2])
    with Store(tmp_path / "ws") as store:
        project = store.create_project("s", "sound-classification", kind="audio", target="label")
        report = import_path(store, project, src)
    assert report.added == 1
    refused = {entry["file"]: entry["reason"] for entry in report.failed}
    assert set(refused) == {"one_hz.wav", "five_mhz.wav", "cut.wav"}
    assert "1 Hz" in refused["one_hz.wav"] and "5,000,005 Hz" in refused["five_mhz.wav"]
    assert "truncated" in refused["cut.wav"]

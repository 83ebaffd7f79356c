"""Zip bombs: a member that expands too much is refused and named; an archive that expands too much
as a whole, or that would not fit on the disk, is refused before anything is unpacked; members and
large media files are streamed, never read whole into memory."""

from __future__ import annotations

import io
import shutil
import struct
import tracemalloc
import wave
import zipfile

import numpy as np
import pytest

from modeldesk.datasets import archive, import_path


def _zeros(zf: zipfile.ZipFile, name: str, size: int) -> None:
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with zf.open(info, "w", force_zip64=True) as member:
        block = b"\0" * (1 << 20)
        for _ in range(size >> 20):
            member.write(block)


def _peak_mb(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_member_that_expands_a_thousand_times_is_refused_and_named(tmp_path, gen, store, project, no_orphans):
    bomb = tmp_path / "photos.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("cat/a.jpg", gen(1))
        zf.writestr("cat/b.jpg", gen(2))
        zf.writestr("cat/zz.jpg", gen(3))
        _zeros(zf, "cat/huge.bmp", 96 << 20)
    assert bomb.stat().st_size < 1 << 20
    report, peak = _peak_mb(lambda: import_path(store, project("p", "image-classification"), bomb))
    assert report.added == 3
    (failure,) = report.failed
    assert failure["file"] == "photos.zip/cat/huge.bmp"
    assert "zip bomb" in failure["reason"] and "100.7 MB" in failure["reason"]
    assert peak < 32  # nothing of the 96 MB member was unpacked, let alone held in memory
    assert not any(store.tmp_dir.iterdir())
    no_orphans()


def test_archive_that_expands_too_much_as_a_whole_is_refused(tmp_path, store, project):
    bomb = tmp_path / "many.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(6):  # each member under the per-member floor, together 1000x
            _zeros(zf, f"cat/{i}.bmp", 7 << 20)
    with pytest.raises(ValueError, match="many.zip would unpack to 44.0 MB.*zip bomb"):
        import_path(store, project("p", "image-classification"), bomb)
    assert not any(store.tmp_dir.iterdir())


def test_archive_that_would_not_fit_on_the_disk_is_refused_before_unpacking(
    tmp_path, gen, store, project, monkeypatch
):
    big = tmp_path / "big.zip"
    noise = np.random.default_rng(0).integers(0, 255, 3 << 20, dtype=np.uint8).tobytes()
    with zipfile.ZipFile(big, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("cat/a.jpg", gen(1))
        zf.writestr("cat/noise.bmp", noise)
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=40 << 20))  # 40 MB free
    monkeypatch.setattr(archive, "FREE_SPACE_MARGIN", 36 << 20, raising=False)
    with pytest.raises(OSError, match="big.zip unpacks to 3.1 MB and importing it needs about"):
        import_path(store, project("p", "image-classification"), big)
    assert not any(store.tmp_dir.iterdir())


def _wav(seconds: float, rate: int = 48000) -> bytes:
    samples = np.random.default_rng(0).integers(-20000, 20000, int(seconds * rate), dtype=np.int16)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(samples.tobytes())
    return buffer.getvalue()


def test_large_members_and_media_are_streamed_not_read_whole(tmp_path, store, project, no_orphans):
    recording = _wav(240)  # 23 MB of noise: a long field recording
    packed = tmp_path / "sounds.zip"
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("birds/long.wav", recording)
        zf.writestr("birds/short.wav", _wav(1))
    del recording
    report, peak = _peak_mb(lambda: import_path(store, project("s", "sound-classification"), packed))
    assert report.added == 2 and report.failed == []
    assert peak < 12, f"peak {peak:.1f} MB for a 23 MB member"
    no_orphans()
    assert struct.unpack("<I", next(store.media.root.rglob("*.wav")).read_bytes()[4:8])[0] > 0

"""Safe extraction of zip archives into a private temporary folder of the workspace.

Members with absolute paths, ``..`` components, drive letters or symlink/device modes are refused
and reported; nothing is written outside the temporary folder. Members are copied in blocks, never
read whole into memory. A zip bomb is stopped three ways: a member that unpacks to more than
:data:`MAX_RATIO` times its packed size (and over :data:`RATIO_FLOOR` bytes) is refused and reported;
the archive as a whole may not unpack to more than :data:`MAX_UNPACKED_BYTES`, nor to more than the
free space of the workspace's disk (the files are unpacked, then copied into the media folder); and
the bytes actually written are counted against the same cap (declared sizes can lie).
"""

from __future__ import annotations

import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from .safety import DiskFullError, free_bytes, human_bytes, is_disk_full
from .verify import media_kind

#: Most bytes one archive may unpack to.
MAX_UNPACKED_BYTES = 16 * 1024**3
#: Most a member may expand (unpacked / packed size) once it is over RATIO_FLOOR bytes. Photos and
#: compressed sounds barely shrink in a zip; plain text and blank BMPs shrink 10-100x; bombs 1000x+.
MAX_RATIO = 200
RATIO_FLOOR = 8 << 20
#: Space left free on the disk after unpacking (the media copies and the database need room too).
FREE_SPACE_MARGIN = 64 << 20
_COPY_CHUNK = 1 << 20


def ratio_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a member looks like a zip bomb (it expands too much), or None."""
    if info.file_size <= RATIO_FLOOR:
        return None
    ratio = info.file_size / max(info.compress_size, 1)
    if ratio > MAX_RATIO:
        return (
            f"refused: it would unpack to {human_bytes(info.file_size)} from {human_bytes(info.compress_size)} "
            f"({ratio:,.0f} times its packed size, over the limit of {MAX_RATIO}; a zip bomb?)"
        )
    return None


def member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a member must not be extracted, or None when it is safe."""
    name = info.filename.replace("\\", "/")
    kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the archiver stored no Unix mode
    if kind == stat.S_IFLNK:
        return "refused: the archive member is a symbolic link"
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "refused: the archive member is not a regular file"
    path = PurePosixPath(name)
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "refused: absolute path in the archive (would write outside the import folder)"
    if ".." in path.parts:
        return "refused: '..' in the path (would write outside the import folder)"
    return None


@contextmanager
def extracted(
    archive: Path, tmp_root: Path, refused: list[dict], max_bytes: int | None = None
) -> Iterator[Path]:
    """Extract the safe members of ``archive`` under ``tmp_root``; yield the folder to import from.

    Refused members are appended to ``refused`` as ``{"file", "reason"}``. The folder is removed when
    the block ends. ValueError for a file that is not a zip or that unpacks to more than ``max_bytes``;
    DiskFullError when it would not fit on the disk.
    """
    max_bytes = MAX_UNPACKED_BYTES if max_bytes is None else max_bytes
    tmp_root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="unzip-", dir=tmp_root))
    try:
        try:
            zf = zipfile.ZipFile(archive)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ValueError(f"{archive.name} is not a readable zip archive ({exc})") from None
        with zf:
            members = []
            for info in zf.infolist():
                problem = member_problem(info)
                problem = problem or (None if info.is_dir() else ratio_problem(info))
                if problem:
                    refused.append({"file": info.filename, "reason": problem})
                elif not info.is_dir():
                    members.append(info)
            declared = sum(info.file_size for info in members)
            if declared > max_bytes:
                raise ValueError(
                    f"{archive.name} would unpack to {declared:,} bytes, over the limit of "
                    f"{max_bytes:,} (a zip bomb or a very large archive)"
                )
            packed = max(archive.stat().st_size, 1)
            if declared > RATIO_FLOOR and declared / packed > MAX_RATIO:
                raise ValueError(
                    f"{archive.name} would unpack to {human_bytes(declared)} from "
                    f"{human_bytes(packed)}, {declared / packed:,.0f} times its size (over the limit "
                    f"of {MAX_RATIO}): refused as a likely zip bomb"
                )
            free = free_bytes(folder)
            need = 2 * declared + FREE_SPACE_MARGIN  # unpacked here, then copied into the media folder
            if free is not None and need > free:
                raise DiskFullError(
                    f"{archive.name} unpacks to {human_bytes(declared)} and importing it needs "
                    f"about {human_bytes(need)} free, but the disk of {tmp_root} has "
                    f"{human_bytes(free)}: free space or import a smaller archive"
                )
            written = 0
            for info in members:
                target = folder.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
                if not target.resolve().is_relative_to(folder.resolve()):
                    refused.append(
                        {"file": info.filename, "reason": "refused: path leaves the import folder"}
                    )
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with zf.open(info) as src, open(target, "wb") as dst:
                        while chunk := src.read(_COPY_CHUNK):
                            written += len(chunk)
                            if written > max_bytes:
                                raise ValueError(
                                    f"{archive.name} unpacks to more than {max_bytes:,} bytes, over the "
                                    "limit (a zip bomb or a very large archive)"
                                )
                            dst.write(chunk)
                except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
                    target.unlink(missing_ok=True)
                    if is_disk_full(exc):
                        raise DiskFullError(
                            f"{archive.name}: no space left on the disk of {tmp_root} while "
                            f"unpacking {info.filename} ({human_bytes(free_bytes(tmp_root))} "
                            "free): free space and import again"
                        ) from None
                    refused.append({"file": info.filename, "reason": f"cannot extract ({exc})"})
        yield _single_top_folder(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _single_top_folder(folder: Path) -> Path:
    """Step into a lone top folder that itself holds folders or annotation files (``dataset/...``)."""
    while True:
        entries = [p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
        if len(entries) != 1 or not entries[0].is_dir():
            return folder
        inner = entries[0]
        if all(p.is_file() and media_kind(p.suffix.lower()) for p in inner.iterdir()):
            return folder  # "cats/a.jpg ...": one class folder, keep it as a class
        folder = inner

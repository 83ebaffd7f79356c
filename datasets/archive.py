"""Safe extraction of zip archives into a private temporary folder of the workspace.

Members with absolute paths, ``..`` components, drive letters or symlink/device modes are refused
and reported; nothing is written outside the temporary folder. A zip bomb is stopped by a cap on the
total uncompressed size, checked against the declared sizes first and against the bytes actually
written while extracting (declared sizes can lie).
"""

from __future__ import annotations

import shutil
import stat
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Iterator

from .verify import media_kind

#: Most bytes one archive may unpack to.
MAX_UNPACKED_BYTES = 16 * 1024**3
_COPY_CHUNK = 1 << 20


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
def extracted(archive: Path, tmp_root: Path, refused: list[dict],
              max_bytes: int | None = None) -> Iterator[Path]:
    """Extract the safe members of ``archive`` under ``tmp_root``; yield the folder to import from.

    Refused members are appended to ``refused`` as ``{"file", "reason"}``. The folder is removed when
    the block ends. ValueError for a file that is not a zip or that unpacks to more than ``max_bytes``.
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
                if problem:
                    refused.append({"file": info.filename, "reason": problem})
                elif not info.is_dir():
                    members.append(info)
            declared = sum(info.file_size for info in members)
            if declared > max_bytes:
                raise ValueError(f"{archive.name} would unpack to {declared:,} bytes, over the limit of "
                                 f"{max_bytes:,} (a zip bomb or a very large archive)")
            written = 0
            for info in members:
                target = folder.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
                if not target.resolve().is_relative_to(folder.resolve()):
                    refused.append({"file": info.filename, "reason": "refused: path leaves the import folder"})
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with zf.open(info) as src, open(target, "wb") as dst:
                        while chunk := src.read(_COPY_CHUNK):
                            written += len(chunk)
                            if written > max_bytes:
                                raise ValueError(
                                    f"{archive.name} unpacks to more than {max_bytes:,} bytes, over the "
                                    "limit (a zip bomb or a very large archive)")
                            dst.write(chunk)
                except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
                    target.unlink(missing_ok=True)
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

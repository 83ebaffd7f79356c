"""The content-addressed media folder: ``media/ab/<sha256>.<ext>``, each file written atomically."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from modeldesk.fileio import atomic_open, atomic_write  # noqa: F401  (datasets' writers import it from here)

_CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in blocks (memory stays flat for any size)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


class MediaStore:
    """Files keyed by their sha256, stored once however many samples use them.

    Parameters
    ----------
    root : Path
        The ``media`` folder of a workspace.
    """

    def __init__(self, root: Path):
        self.root = Path(root)
        self._made: set[str] = set()  # shard folders known to exist

    def path(self, content_hash: str, ext: str) -> Path:
        """Where the file with this hash and extension (``".jpg"``) lives."""
        return self.root / content_hash[:2] / f"{content_hash}{ext}"

    def put(self, data: bytes, ext: str, content_hash: str | None = None) -> tuple[str, Path]:
        """Store ``data`` unless a file with the same hash is already there; return (hash, path)."""
        content_hash = content_hash or sha256_bytes(data)
        path = self.path(content_hash, ext)
        if not path.exists():
            shard = content_hash[:2]
            if shard not in self._made:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._made.add(shard)
            atomic_write(path, data, make_parent=False)
        return content_hash, path

    def put_file(self, source: Path, ext: str, content_hash: str | None = None) -> tuple[str, Path]:
        """Like :meth:`put` for a file, copied in blocks: a large file never sits in memory whole."""
        content_hash = content_hash or sha256_file(source)
        path = self.path(content_hash, ext)
        if not path.exists():
            with atomic_open(path, "wb") as dst, open(source, "rb") as src:
                shutil.copyfileobj(src, dst, _CHUNK)
        return content_hash, path

    def remove(self, content_hash: str, ext: str) -> None:
        """Delete one media file if it exists."""
        try:
            self.path(content_hash, ext).unlink()
        except FileNotFoundError:
            pass

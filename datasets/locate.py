"""Finding the photo an annotation file names: by its relative path, by its file name anywhere under
the dataset folder, or by the name an upload tool wrapped (Label Studio's ``8f3a2b1c-photo.jpg``)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from .detect import iter_files
from .verify import IMAGE_EXTS

_UPLOAD_PREFIX = re.compile(r"^[0-9a-f]{8}-")


class ImageIndex:
    """Every image under ``root``, by relative path and by lower-cased file name."""

    def __init__(self, root: Path):
        self.root = root
        self.by_name: dict[str, list[Path]] = {}
        if root.is_dir():
            for path in iter_files(root):
                if path.suffix.lower() in IMAGE_EXTS:
                    self.by_name.setdefault(path.name.lower(), []).append(path)

    def find(self, reference: str, near: Path | None = None) -> Path | None:
        """The image ``reference`` (a path, a URL or a file name) stands for, inside ``root``."""
        text = reference.strip().replace("\\", "/")
        if "://" in text or text.startswith("/data/"):
            parsed = urlparse(text)
            local = parse_qs(parsed.query).get("d")  # Label Studio local storage: /data/local-files/?d=x
            text = unquote(local[0] if local else parsed.path)
        rel = Path(text)
        if not rel.is_absolute() and ".." not in rel.parts:
            for base in ([near] if near else []) + [self.root]:
                candidate = base / rel
                if candidate.is_file() and candidate.resolve().is_relative_to(self.root.resolve()):
                    return candidate
        for name in (rel.name, _UPLOAD_PREFIX.sub("", rel.name)):
            found = self.by_name.get(name.lower())
            if found:
                if near is not None:  # the one nearest the annotation file wins
                    found = sorted(found, key=lambda p: (not p.is_relative_to(near), len(p.parts)))
                return found[0]
        return None

    def source(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else path.name

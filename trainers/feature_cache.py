"""On-disk cache of feature vectors, one ``.npy`` file per (media hash, backbone, features, view).

Each vector is written to a temporary name and renamed into place, so a crash mid-way keeps every
finished vector and never leaves a half-written one. Lookups list a namespace folder once instead of
probing files one by one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from modeldesk.fileio import atomic_open

_SAFE = re.compile(r"[^A-Za-z0-9._@+-]")
_KEY = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


def _safe(part: str) -> str:
    return _SAFE.sub("_", part)


class FeatureCache:
    """Feature vectors on disk under ``root``.

    Parameters
    ----------
    root : folder for the cache (the workspace's ``cache/features``); created on first write.

    Keys are media content hashes (letters, digits, ``._-``); the namespace is the backbone key,
    the feature set name and the view.
    """

    def __init__(self, root):
        self.root = Path(root)

    def folder(self, backbone_key: str, features: str, view: str) -> Path:
        """The folder holding one namespace's vectors."""
        return self.root / _safe(backbone_key) / _safe(features) / _safe(view)

    @staticmethod
    def _check_key(key: str) -> str:
        if not _KEY.match(key):
            raise ValueError(f"feature cache key {key!r} must be 1-200 letters, digits, '.', '_' or '-'")
        return key

    def path(self, namespace: tuple[str, str, str], key: str) -> Path:
        """Where the vector for ``key`` lives (whether or not it exists)."""
        return self.folder(*namespace) / (self._check_key(key) + ".npy")

    def cached_keys(self, namespace: tuple[str, str, str]) -> set[str]:
        """Keys with a finished vector in ``namespace`` (one directory listing)."""
        folder = self.folder(*namespace)
        try:
            with os.scandir(folder) as entries:
                return {e.name[:-4] for e in entries if e.name.endswith(".npy") and e.is_file()}
        except FileNotFoundError:
            return set()

    def missing(self, namespace: tuple[str, str, str], keys) -> list[str]:
        """The keys of ``keys`` (order kept, duplicates dropped) that have no vector yet."""
        have = self.cached_keys(namespace)
        seen: set[str] = set()
        out = []
        for key in keys:
            if key not in have and key not in seen:
                seen.add(key)
                out.append(self._check_key(key))
        return out

    def put(self, namespace: tuple[str, str, str], key: str, vector: np.ndarray) -> None:
        """Store one vector atomically."""
        path = self.path(namespace, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path, "wb", make_parent=False) as file:
            np.save(file, np.asarray(vector, dtype=np.float32), allow_pickle=False)

    def get(self, namespace: tuple[str, str, str], key: str) -> np.ndarray:
        """One vector; KeyError if it is not cached."""
        try:
            return np.load(self.path(namespace, key), allow_pickle=False)
        except FileNotFoundError:
            raise KeyError(key) from None

    def get_many(self, namespace: tuple[str, str, str], keys) -> np.ndarray:
        """Stack the vectors of ``keys`` into an (n, d) float32 array; KeyError for a missing key."""
        keys = list(keys)
        if not keys:
            return np.zeros((0, 0), np.float32)
        return np.stack([self.get(namespace, key) for key in keys]).astype(np.float32, copy=False)

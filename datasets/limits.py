"""Limits on numbers read from annotation files, checked before anything is built from them.

A 13-byte ``data.yaml`` saying ``nc: 999999999`` once made an import allocate 22 GB; every count an
importer reads from a file (classes, boxes per image) is held to these bounds first, and a file that
breaks one fails alone with a message naming it.
"""

from __future__ import annotations

MAX_CLASSES = 10_000  # ImageNet-21k has 21,841; no detection or tagging set here comes near 10,000
MAX_BOXES_PER_IMAGE = 10_000  # dense crowd sets peak at a few thousand boxes per photo
SPLIT_NAMES = {"train": "train", "val": "val", "valid": "val", "validation": "val", "test": "test"}


def split_from_name(name: str) -> str | None:
    """The split a folder or subset name stands for (``train2017`` -> train, ``valid`` -> val), or None."""
    lowered = name.lower().strip()
    for prefix in ("validation", "valid", "train", "test", "val"):
        rest = lowered[len(prefix) :]
        if lowered.startswith(prefix) and (not rest or rest.isdigit()):
            return SPLIT_NAMES[prefix]
    return None


def check_count(count: int, limit: int, what: str) -> None:
    """ValueError when ``count`` (read from a file) is negative or over ``limit``."""
    if count < 0 or count > limit:
        raise ValueError(f"it says {count:,} {what}, more than the {limit:,} ModelDesk reads")

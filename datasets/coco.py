"""COCO object detection: a JSON file with ``images``, ``annotations`` and ``categories``.

Images are looked for next to the JSON, in an ``images/`` folder beside it, and one level up.
"""

from __future__ import annotations

import json
from pathlib import Path

from .detect import iter_files
from .items import ImportReport, Item
from .records import Box
from .safety import to_float


def _coco_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    found = []
    for path in iter_files(root):
        if path.suffix.lower() == ".json":
            try:
                data = json.loads(path.read_bytes())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and "images" in data and "annotations" in data:
                found.append(path)
    return found


def _locate(json_path: Path, file_name: str) -> Path | None:
    rel = Path(file_name.replace("\\", "/"))
    if rel.is_absolute() or ".." in rel.parts:
        rel = Path(rel.name)
    here = json_path.parent
    for folder in (here, here / "images", here.parent, here.parent / "images"):
        for candidate in (folder / rel, folder / rel.name):
            if candidate.is_file():
                return candidate
    return None


def read_coco(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every image listed in the COCO JSON file(s) under ``root``."""
    base = root.parent if root.is_file() else root
    items: list[Item] = []
    for json_path in _coco_files(root):
        name = json_path.relative_to(base).as_posix()
        try:
            data = json.loads(json_path.read_bytes())
            categories = {c["id"]: str(c["name"]) for c in data.get("categories", [])}
            images = {img["id"]: img for img in data["images"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            items.append(Item(source=name, error=f"cannot read COCO file ({exc!r})"))
            continue
        boxes: dict = {image_id: [] for image_id in images}
        bad = 0
        for ann in data["annotations"]:
            try:
                x, y, w, h = (to_float(v) for v in ann["bbox"])  # a huge integer gives inf: refused later
                label = categories[ann["category_id"]]
                boxes[ann["image_id"]].append(Box(label, x, y, x + w, y + h))
            except (KeyError, TypeError, ValueError):
                bad += 1
        if bad:
            report.warn(f"{name}: skipped {bad} annotation(s) without a valid bbox, category or image id")
        for image_id, image in images.items():
            file_name = str(image.get("file_name", ""))
            path = _locate(json_path, file_name) if file_name else None
            if path is None:
                items.append(
                    Item(
                        source=file_name or f"image id {image_id}",
                        error=f"image listed in {name} was not found",
                    )
                )
                continue
            items.append(
                Item(
                    source=path.relative_to(base).as_posix() if path.is_relative_to(base) else path.name,
                    path=path,
                    boxes=boxes[image_id],
                )
            )
    return len(items), items


def coco_document(images: list[dict], annotations: list[dict], labels: list[str]) -> str:
    """A COCO JSON document (categories are numbered from 1 in ``labels`` order)."""
    return json.dumps(
        {
            "info": {"description": "exported by ModelDesk"},
            "images": images,
            "annotations": annotations,
            "categories": [{"id": i + 1, "name": n, "supercategory": ""} for i, n in enumerate(labels)],
        },
        ensure_ascii=False,
        indent=1,
    )

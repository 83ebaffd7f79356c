"""Label Studio exports: JSON (a list of tasks, each ``{"data": {"image"|"text"}, "annotations":
[{"result": [...]}]}``) and JSON-MIN (a list of flat rows, ``{"image"|"text", "<from_name>": ...}``).

Read: ``choices`` (tags or a class, for photos and texts) and ``rectanglelabels`` (boxes, given in
percent of the photo). Regions of other kinds (polygons, brushes, keypoints) are left out, said once.
Label Studio has no splits; a file named ``train.json``, ``val.json`` or ``test.json`` (as ModelDesk
exports them) gives its tasks that split.
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import safejson
from .detect import iter_files, sniff_json
from .items import ImportReport, Item
from .limits import MAX_BOXES_PER_IMAGE, split_from_name
from .locate import ImageIndex
from .records import Box
from .safety import to_float

_MEDIA_KEYS = ("image", "text")
_ROW_KEYS = {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time", "image", "text"}


def _rectangle(value: dict) -> Box:
    """A ``rectanglelabels`` value as a box in fractions of the photo (x, y, width, height in percent)."""
    labels = value.get("rectanglelabels") or []
    if not labels:
        raise ValueError("a rectangle without rectanglelabels")
    if to_float(value.get("rotation") or 0) != 0:
        raise ValueError("a rotated rectangle (ModelDesk boxes are upright)")
    x, y, w, h = (to_float(value[k]) / 100 for k in ("x", "y", "width", "height"))
    return Box(str(labels[0]), x, y, x + w, y + h)


def _choices(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = value.get("choices", [])
    return [str(v) for v in value] if isinstance(value, list) else []


def _from_results(results: list) -> tuple[list[Box], list[str], int]:
    boxes, tags, other = [], [], 0
    for result in results:
        kind, value = result.get("type"), result.get("value") or {}
        if kind == "rectanglelabels":
            boxes.append(_rectangle(value))
        elif kind == "choices":
            tags += _choices(value)
        else:
            other += 1
    return boxes, tags, other


def _from_min_row(row: dict) -> tuple[list[Box], list[str], int]:
    boxes, tags, other = [], [], 0
    for key, value in row.items():
        if key in _ROW_KEYS:
            continue
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for region in value:
                if "rectanglelabels" in region:
                    boxes.append(_rectangle(region))
                else:
                    other += 1
        else:
            tags += _choices(value)
    return boxes, tags, other


def parse_task(task, name: str) -> tuple[str, str, list[Box], list[str], int]:
    """(media key "image" or "text", its value, boxes, tags, regions left out) of one task or row."""
    if not isinstance(task, dict):
        raise ValueError(f"{name}: an entry is not a Label Studio task")  # noqa: TRY004 - a file's content: the importers catch ValueError
    data = task.get("data")
    if not isinstance(data, dict):
        data = task
    key = next((k for k in _MEDIA_KEYS if isinstance(data.get(k), str)), None)
    if key is None:
        raise ValueError(f'{name}: a task has neither "image" nor "text" in its data')
    if "annotations" in task:
        annotations = [a for a in task["annotations"] or [] if not a.get("was_cancelled")]
        results = annotations[-1].get("result", []) if annotations else []  # the latest annotation
        boxes, tags, other = _from_results(results)
    else:
        boxes, tags, other = _from_min_row(task)
    if len(boxes) > MAX_BOXES_PER_IMAGE:
        raise ValueError(f"{name}: a task holds more than {MAX_BOXES_PER_IMAGE:,} rectangles")
    return key, data[key], boxes, list(dict.fromkeys(tags)), other


def read_labelstudio(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every task of the Label Studio JSON or JSON-MIN file(s) under ``root``."""
    base = root.parent if root.is_file() else root
    files = [root] if root.is_file() else [p for p in iter_files(root) if sniff_json(p) == "labelstudio"]
    index = ImageIndex(base)
    items: list[Item] = []
    left_out = 0
    for json_path in files:
        name = json_path.relative_to(base).as_posix()
        try:
            tasks = safejson.load_file(json_path)
            if not isinstance(tasks, list):
                raise ValueError("it is not a list of tasks")  # noqa: TRY004 - a file's content: the importers catch ValueError
        except (ValueError, OSError) as exc:
            items.append(Item(source=name, error=f"cannot read Label Studio file {name}: {exc}"))
            continue
        for number, task in enumerate(tasks, 1):
            try:
                key, value, boxes, tags, other = parse_task(task, name)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                items.append(Item(source=f"{name} task {number}", error=str(exc)))
                continue
            left_out += other
            if key == "text":
                items.append(
                    Item(
                        source=f"{name}#{number}",
                        text=value,
                        labels=tags,
                        split=split_from_name(json_path.stem),
                    )
                )
                continue
            path = index.find(value, near=json_path.parent)
            if path is None:
                items.append(Item(source=value, error=f"image of task {number} in {name} was not found"))
                continue
            source = index.source(path)
            split = split_from_name(json_path.stem)  # Label Studio has no splits; ModelDesk's export files do
            items.append(
                Item(source=source, path=path, boxes=boxes, labels=tags, normalised=True, split=split)
            )
    if left_out:
        report.warn(f"{left_out} region(s) other than rectangles and choices were left out")
    return len(items), items


def labelstudio_document(entries, target: str) -> str:
    """A Label Studio JSON export: one task per photo, ``entries`` being (path, width, height, boxes,
    tags); boxes as ``rectanglelabels`` in percent, tags as ``choices``."""
    tasks = []
    for number, (path, width, height, boxes, tags) in enumerate(entries, 1):
        result = [
            {
                "id": f"r{number}-{k}",
                "type": "rectanglelabels",
                "from_name": "label",
                "to_name": "image",
                "original_width": width,
                "original_height": height,
                "image_rotation": 0,
                "value": {
                    "x": b.x0 / width * 100,
                    "y": b.y0 / height * 100,
                    "width": (b.x1 - b.x0) / width * 100,
                    "height": (b.y1 - b.y0) / height * 100,
                    "rotation": 0,
                    "rectanglelabels": [b.label],
                },
            }
            for k, b in enumerate(boxes)
        ]
        if tags:
            result.append(
                {
                    "id": f"r{number}-tags",
                    "type": "choices",
                    "from_name": "choice" if target == "label" else "tags",
                    "to_name": "image",
                    "value": {"choices": list(tags)},
                }
            )
        tasks.append(
            {"id": number, "data": {"image": path}, "annotations": [{"id": number, "result": result}]}
        )
    return json.dumps(tasks, ensure_ascii=False, indent=1)

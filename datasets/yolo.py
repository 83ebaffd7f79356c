"""YOLO: one ``.txt`` per image (``class cx cy w h``, normalised), class names in ``classes.txt``,
``obj.names`` or ``data.yaml`` (the simple ``names:`` list or mapping forms, read without PyYAML)."""

from __future__ import annotations

import re
from pathlib import Path

from .detect import iter_files
from .items import ImportReport, Item
from .records import Box
from .verify import IMAGE_EXTS

_NAME_FILES = ("classes.txt", "obj.names", "data.yaml", "dataset.yaml")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse_yaml_names(text: str) -> list[str]:
    """Class names from a YOLO ``data.yaml``: ``names: [a, b]``, a ``- a`` list or ``0: a`` mapping."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"^names\s*:\s*(.*)$", line)
        if not match:
            continue
        rest = match.group(1).split(" #")[0].strip()
        if rest.startswith("[") or rest.startswith("{"):
            body = rest
            j = index
            while body.count("[") + body.count("{") > body.count("]") + body.count("}") and j + 1 < len(
                lines
            ):
                j += 1
                body += " " + lines[j].strip()
            if body.startswith("["):
                return [_unquote(v) for v in body.strip("[] ").split(",") if v.strip()]
            pairs = [p.split(":", 1) for p in body.strip("{} ").split(",") if p.strip()]
            return [_unquote(v) for _k, v in sorted(pairs, key=lambda kv: int(kv[0]))]
        listed, mapped = [], {}
        for follow in lines[index + 1 :]:
            if not follow.strip() or follow.lstrip().startswith("#"):
                continue
            if not follow[:1].isspace():
                break
            item = follow.strip()
            if item.startswith("- "):
                listed.append(_unquote(item[2:]))
            elif ":" in item:
                key, value = item.split(":", 1)
                mapped[int(_unquote(key))] = _unquote(value.split(" #")[0])
        if mapped:
            return [mapped[k] for k in sorted(mapped)]
        return listed
    match = re.search(r"^nc\s*:\s*(\d+)", text, re.M)
    if match:
        return [str(i) for i in range(int(match.group(1)))]
    raise ValueError("no names: entry found")


def read_class_names(root: Path) -> list[str]:
    """The class list of a YOLO folder; ValueError when none is found."""
    for name in _NAME_FILES:
        for path in [root / name] + sorted(root.glob(f"*/{name}")):
            if path.is_file():
                text = path.read_text(encoding="utf-8-sig")
                if path.suffix == ".yaml":
                    try:
                        return parse_yaml_names(text)
                    except (ValueError, SyntaxError) as exc:
                        raise ValueError(f"{path}: cannot read class names ({exc})") from None
                return [line.strip() for line in text.splitlines() if line.strip()]
    raise ValueError(f"{root}: no classes.txt, obj.names or data.yaml with the class names")


def _label_file(image: Path, root: Path) -> Path | None:
    beside = image.with_suffix(".txt")
    if beside.is_file():
        return beside
    parts = list(image.relative_to(root).parts)
    for i in range(len(parts) - 1, -1, -1):  # .../images/x/y.jpg -> .../labels/x/y.txt
        if parts[i] == "images":
            candidate = root.joinpath(*parts[:i], "labels", *parts[i + 1 :]).with_suffix(".txt")
            if candidate.is_file():
                return candidate
    return None


def parse_label_file(path: Path, names: list[str]) -> list[tuple[str, float, float, float, float]]:
    """(label, cx, cy, w, h) rows of one YOLO label file, normalised coordinates."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            cls = int(parts[0])
            cx, cy, w, h = (float(v) for v in parts[1:5])
        except ValueError:
            raise ValueError(f"line {number} is not 'class cx cy w h': {line.strip()[:60]!r}") from None
        if len(parts) < 5:
            raise ValueError(f"line {number} has {len(parts)} values, expected 5")
        if not 0 <= cls < len(names):
            raise ValueError(f"line {number}: class {cls} is not in the {len(names)} class names")
        rows.append((names[cls], cx, cy, w, h))
    return rows


def read_yolo(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every image under ``root``, with boxes in normalised coordinates; the import loop
    scales them to pixels with the image's verified size."""
    names = read_class_names(root)
    images = [p for p in iter_files(root) if p.suffix.lower() in IMAGE_EXTS]
    return len(images), _yolo_items(root, images, names)


def _yolo_items(root: Path, images: list[Path], names: list[str]):
    for image in images:
        source = image.relative_to(root).as_posix()
        label_path = _label_file(image, root)
        if label_path is None:
            yield Item(source=source, path=image, boxes=[])
            continue
        try:
            rows = parse_label_file(label_path, names)
        except (ValueError, OSError) as exc:
            yield Item(source=source, error=f"label file {label_path.name}: {exc}")
            continue
        boxes = [Box(label, cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2) for label, cx, cy, w, h in rows]
        yield Item(source=source, path=image, boxes=boxes, normalised=True)


def yolo_line(index: int, box: Box, width: int, height: int) -> str:
    """One label-file line for ``box`` in an image of ``width`` x ``height`` pixels."""
    cx, cy = (box.x0 + box.x1) / 2 / width, (box.y0 + box.y1) / 2 / height
    w, h = (box.x1 - box.x0) / width, (box.y1 - box.y0) / height
    return f"{index} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}"

"""YOLO: one ``.txt`` per image (``class cx cy w h``, normalised).

Layouts read: Ultralytics (``data.yaml`` with ``names`` as a list or a mapping and ``train``/``val``/
``test`` folders or image lists), Darknet (``obj.data`` naming ``obj.names`` and ``train.txt``/
``valid.txt``), ``classes.txt`` beside the images, and label files beside the images or in a
``labels/`` (or ``Annotations/``) folder mirroring ``images/`` (or ``Images/``, ``JPEGImages/``) at any
depth. The split comes from the train/val/test lists when the dataset has them.
"""

from __future__ import annotations

from pathlib import Path

from . import flatyaml
from .detect import iter_files
from .items import ImportReport, Item
from .limits import MAX_BOXES_PER_IMAGE, MAX_CLASSES, check_count, split_from_name
from .records import Box
from .verify import IMAGE_EXTS

_NAME_FILES = ("data.yaml", "dataset.yaml", "obj.data", "classes.txt", "obj.names")
_IMAGE_FOLDERS = {"images", "jpegimages", "img", "imgs"}
_LABEL_FOLDERS = ("labels", "Labels", "annotations", "Annotations")
MAX_LABEL_FILE_BYTES = 4 << 20  # 10,000 boxes of ~40 characters: well under 1 MiB
_SPLIT_KEYS = {"train": "train", "val": "val", "valid": "val", "test": "test"}


def _names_from(value, source: str) -> dict[int, str]:
    if isinstance(value, list):
        check_count(len(value), MAX_CLASSES, "class names")
        return dict(enumerate(value))
    if isinstance(value, dict):
        check_count(len(value), MAX_CLASSES, "class names")
        try:
            return {int(k): v for k, v in value.items()}
        except ValueError:
            raise ValueError(f"{source}: the names mapping has a key that is not a class number") from None
    raise ValueError(f"{source}: names is {value!r}, expected a list or a mapping")


def _yaml_names(data: dict) -> dict[int, str]:
    if "names" in data and data["names"] != "":
        return _names_from(data["names"], "names")
    if "nc" in data:
        try:
            count = int(data["nc"])
        except ValueError:
            raise ValueError(f"nc is {data['nc']!r}, not a number of classes") from None
        check_count(count, MAX_CLASSES, "classes (nc)")
        return {i: str(i) for i in range(count)}
    raise ValueError("no names: entry found")


def parse_yaml_names(text: str) -> list[str]:
    """Class names from a YOLO ``data.yaml``: ``names: [a, b]``, a ``- a`` list or ``0: a`` mapping
    (``nc: N`` alone names them 0..N-1, for N up to :data:`~.limits.MAX_CLASSES`)."""
    names = _yaml_names(flatyaml.parse(text))
    return [names[k] for k in sorted(names)]


def _read_text(path: Path, limit: int = flatyaml.MAX_BYTES) -> str:
    if path.stat().st_size > limit:
        raise ValueError(f"{path.name} is larger than {limit:,} bytes")
    return path.read_text(encoding="utf-8-sig")


def _name_lines(path: Path) -> dict[int, str]:
    names = [line.strip() for line in _read_text(path).splitlines() if line.strip()]
    check_count(len(names), MAX_CLASSES, "class names")
    return dict(enumerate(names))


def _darknet_data(path: Path) -> dict[str, str]:
    """``key = value`` lines of a Darknet ``obj.data``."""
    out = {}
    for line in _read_text(path).splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            out[key.strip().lower()] = value.strip()
    return out


def _within(root: Path, relative: str, bases: list[Path]) -> Path | None:
    """``relative`` resolved against ``bases``, the first that exists inside ``root``; Darknet and
    Roboflow write paths relative to another folder (``data/obj/...``, ``../train/images``)."""
    rel = Path(relative.replace("\\", "/"))
    tries = [rel] + [Path(*rel.parts[i:]) for i in range(1, len(rel.parts))]
    top = root.resolve()
    for base in bases:
        for candidate in tries:
            path = (base / candidate).resolve() if not candidate.is_absolute() else candidate.resolve()
            if path.is_relative_to(top) and path.exists():
                return path
    return None


class _Layout:
    """The class names and the split of each image a YOLO folder states."""

    def __init__(self, root: Path):
        self.root = root
        self.names: dict[int, str] | None = None
        self.split_of: dict[Path, str] = {}  # resolved image or folder -> split
        for file_name in _NAME_FILES:
            for path in [root / file_name] + sorted(root.glob(f"*/{file_name}")):
                if path.is_file() and self.names is None:
                    try:
                        self._read(path)
                    except (ValueError, OSError) as exc:
                        raise ValueError(f"{path}: cannot read the class names ({exc})") from None
        if self.names is None:
            raise ValueError(f"{root}: no data.yaml, obj.data, classes.txt or obj.names with the class names")

    def _read(self, path: Path) -> None:
        if path.suffix == ".yaml":
            data = flatyaml.parse(_read_text(path))
            self.names = _yaml_names(data)
            base = path.parent / str(data.get("path") or ".")
            self._splits(data, [base, path.parent, self.root])
        elif path.suffix == ".data":
            data = _darknet_data(path)
            if "names" not in data:
                raise ValueError("it names no 'names =' file")
            names = _within(self.root, data["names"], [path.parent, self.root, self.root.parent])
            if names is None:
                raise ValueError(f"its names file {data['names']} was not found")
            self.names = _name_lines(names)
            if "classes" in data and data["classes"].isdigit() and int(data["classes"]) != len(self.names):
                raise ValueError(
                    f"classes = {data['classes']} but {names.name} lists {len(self.names)} names"
                )
            self._splits(data, [path.parent, self.root, self.root.parent])
        else:
            self.names = _name_lines(path)

    def _splits(self, data: dict, bases: list[Path]) -> None:
        for key, split in _SPLIT_KEYS.items():
            values = data.get(key) or []
            for value in [values] if isinstance(values, str) else values:
                target = _within(self.root, str(value), bases)
                if target is None:
                    continue
                if target.is_dir():
                    self.split_of[target] = split
                else:  # a list of images, one path a line
                    for line in _read_text(target, 64 << 20).splitlines():
                        image = (
                            _within(self.root, line.strip(), [target.parent] + bases)
                            if line.strip()
                            else None
                        )
                        if image is not None:
                            self.split_of[image] = split

    def split(self, image: Path) -> str | None:
        """The split the dataset states for ``image`` (its list, its folder, or a split-named folder)."""
        resolved = image.resolve()
        if resolved in self.split_of:
            return self.split_of[resolved]
        for parent in resolved.parents:
            if parent in self.split_of:
                return self.split_of[parent]
        if self.split_of:
            return None
        for part in image.relative_to(self.root).parts[:-1]:  # images/train/..., train/images/...
            found = split_from_name(part)
            if found:
                return found
        return None


def read_class_names(root: Path) -> list[str]:
    """The class list of a YOLO folder; ValueError when none is found."""
    names = _Layout(root).names or {}
    return [names[k] for k in sorted(names)]


def _label_file(image: Path, root: Path) -> Path | None:
    beside = image.with_suffix(".txt")
    if beside.is_file():
        return beside
    parts = list(image.relative_to(root).parts)
    for i in range(len(parts) - 2, -1, -1):  # .../images/x/y.jpg -> .../labels/x/y.txt
        if parts[i].lower() in _IMAGE_FOLDERS:
            for folder in _LABEL_FOLDERS:
                candidate = root.joinpath(*parts[:i], folder, *parts[i + 1 :]).with_suffix(".txt")
                if candidate.is_file():
                    return candidate
    return None


def parse_label_file(path: Path, names) -> list[tuple[str, float, float, float, float]]:
    """(label, cx, cy, w, h) rows of one YOLO label file, normalised coordinates.

    ``names`` maps class numbers to names (a list or a dict).
    """
    if isinstance(names, list):
        names = dict(enumerate(names))
    rows = []
    for number, line in enumerate(_read_text(path, MAX_LABEL_FILE_BYTES).splitlines(), 1):
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
        if cls not in names:
            raise ValueError(f"line {number}: class {cls} is not in the {len(names)} class names")
        rows.append((names[cls], cx, cy, w, h))
        if len(rows) > MAX_BOXES_PER_IMAGE:
            raise ValueError(f"it holds more than {MAX_BOXES_PER_IMAGE:,} boxes")
    return rows


def read_yolo(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every image under ``root``, with boxes in normalised coordinates; the import loop
    scales them to pixels with the image's verified size."""
    layout = _Layout(root)
    files = list(iter_files(root))
    images = [p for p in files if p.suffix.lower() in IMAGE_EXTS]
    labels = {p for p in files if p.suffix.lower() == ".txt" and p.name.lower() not in ("classes.txt",)}
    matched = {image: _label_file(image, root) for image in images}
    used = {p for p in matched.values() if p is not None}
    folders = {f.lower() for f in _LABEL_FOLDERS}
    listed = {p for p in labels if folders & {part.lower() for part in p.relative_to(root).parts[:-1]}}
    unmatched = sorted(listed - used)
    if unmatched:
        shown = ", ".join(p.relative_to(root).as_posix() for p in unmatched[:3])
        report.warn(f"{len(unmatched)} label file(s) match no image and were not read: {shown}")
    if images and not used:
        report.warn(
            f"none of the {len(images)} photos has a label file (looked for NAME.txt beside each photo and "
            "in labels/ or Annotations/ mirroring images/): they import without boxes"
        )
    return len(images), _yolo_items(root, images, matched, layout)


def _yolo_items(root: Path, images: list[Path], matched: dict, layout: _Layout):
    for image in images:
        source = image.relative_to(root).as_posix()
        split = layout.split(image)
        label_path = matched[image]
        if label_path is None:
            yield Item(source=source, path=image, boxes=[], split=split)
            continue
        try:
            rows = parse_label_file(label_path, layout.names)
        except (ValueError, OSError) as exc:
            yield Item(source=source, error=f"label file {label_path.name}: {exc}")
            continue
        boxes = [Box(label, cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2) for label, cx, cy, w, h in rows]
        yield Item(source=source, path=image, boxes=boxes, normalised=True, split=split)


def yolo_line(index: int, box: Box, width: int, height: int) -> str:
    """One label-file line for ``box`` in an image of ``width`` x ``height`` pixels."""
    cx, cy = (box.x0 + box.x1) / 2 / width, (box.y0 + box.y1) / 2 / height
    w, h = (box.x1 - box.x0) / width, (box.y1 - box.y0) / height
    return f"{index} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}"

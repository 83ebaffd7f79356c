"""Pascal VOC: one XML file per image, beside it or in ``Annotations/`` next to ``JPEGImages/``.

The split comes from ``ImageSets/Main/{train,val,test}.txt``; the masks of ``SegmentationClass/`` and
``SegmentationObject/`` are not photos and are not imported.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

from .detect import iter_files
from .items import ImportReport, Item
from .limits import MAX_BOXES_PER_IMAGE
from .records import Box
from .safexml import parse_file
from .verify import IMAGE_EXTS


def _find_image(xml_path: Path, filename: str | None, root: Path) -> Path | None:
    stem = xml_path.stem
    folders = [xml_path.parent]
    if xml_path.parent.name.lower() == "annotations":
        folders += [
            xml_path.parent.parent / "JPEGImages",
            xml_path.parent.parent / "images",
            xml_path.parent.parent,
        ]
    folders.append(root)
    names = [Path(filename).name] if filename else []
    for folder in folders:
        for name in names:
            if (folder / name).is_file():
                return folder / name
        for ext in IMAGE_EXTS:
            for candidate in (folder / (stem + ext), folder / (stem + ext.upper())):
                if candidate.is_file():
                    return candidate
    return None


def _number(node, tag: str) -> float:
    text = node.findtext(tag)
    if text is None:
        raise ValueError(f"box without <{tag}>")
    return float(text)


def parse_voc(xml_path: Path) -> tuple[str | None, list[Box]]:
    """The ``<filename>`` and the boxes of one VOC annotation file (ValueError if malformed)."""
    node = parse_file(xml_path)
    if node.tag != "annotation":
        raise ValueError(f"not a Pascal VOC annotation (root element <{node.tag}>)")
    boxes: list[Box] = []
    for obj in node.iter("object"):
        name = (obj.findtext("name") or "").strip()
        bnd = obj.find("bndbox")
        if not name or bnd is None:
            raise ValueError("an <object> lacks <name> or <bndbox>")
        if len(boxes) >= MAX_BOXES_PER_IMAGE:
            raise ValueError(f"it holds more than {MAX_BOXES_PER_IMAGE:,} objects")
        boxes.append(
            Box(name, _number(bnd, "xmin"), _number(bnd, "ymin"), _number(bnd, "xmax"), _number(bnd, "ymax"))
        )
    return node.findtext("filename"), boxes


_SEGMENTATION = {"segmentationclass", "segmentationobject", "segmentationclassaug"}


class _SplitLists:
    """``ImageSets/Main/<split>.txt`` beside ``Annotations/``: which image stem is in which split."""

    def __init__(self):
        self._by_root: dict[Path, dict[str, str]] = {}

    def split(self, xml_path: Path) -> str | None:
        voc_root = xml_path.parent.parent
        if voc_root not in self._by_root:
            found: dict[str, str] = {}
            for split in ("train", "val", "test"):
                listed = voc_root / "ImageSets" / "Main" / f"{split}.txt"
                if listed.is_file() and listed.stat().st_size < (64 << 20):
                    for line in listed.read_text(encoding="utf-8-sig", errors="replace").splitlines():
                        if line.split():
                            found.setdefault(line.split()[0], split)
            self._by_root[voc_root] = found
        return self._by_root[voc_root].get(xml_path.stem)


def read_voc(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every VOC XML under ``root`` (or one XML file); images without XML come unlabeled."""
    xml_files = [root] if root.is_file() else [p for p in iter_files(root) if p.suffix.lower() == ".xml"]
    base = root.parent if root.is_file() else root
    items, used, splits = [], set(), _SplitLists()
    for xml_path in xml_files:
        source = xml_path.relative_to(base).as_posix()
        try:
            filename, boxes = parse_voc(xml_path)
        except (ValueError, OSError) as exc:
            items.append(Item(source=source, error=f"cannot read VOC annotation: {exc}"))
            continue
        image = _find_image(xml_path, filename, base)
        if image is None:
            items.append(
                Item(
                    source=source,
                    error=f"image {filename or xml_path.stem} named in the annotation was not found",
                )
            )
            continue
        used.add(image.resolve())
        items.append(
            Item(
                source=image.relative_to(base).as_posix() if image.is_relative_to(base) else image.name,
                path=image,
                boxes=boxes,
                split=splits.split(xml_path),
            )
        )
    if root.is_dir():
        for image in iter_files(root):
            if _SEGMENTATION & {p.lower() for p in image.relative_to(root).parts[:-1]}:
                continue
            if image.suffix.lower() in IMAGE_EXTS and image.resolve() not in used:
                items.append(Item(source=image.relative_to(root).as_posix(), path=image, boxes=[]))
    return len(items), items


def voc_xml(filename: str, width: int, height: int, boxes: list[Box], depth: int = 3) -> str:
    """One VOC annotation document; coordinates are rounded to whole pixels as VOC expects."""
    objects = "".join(
        f"\t<object>\n\t\t<name>{escape(b.label)}</name>\n\t\t<pose>Unspecified</pose>\n"
        f"\t\t<truncated>0</truncated>\n\t\t<difficult>0</difficult>\n\t\t<bndbox>\n"
        f"\t\t\t<xmin>{round(b.x0)}</xmin>\n\t\t\t<ymin>{round(b.y0)}</ymin>\n"
        f"\t\t\t<xmax>{round(b.x1)}</xmax>\n\t\t\t<ymax>{round(b.y1)}</ymax>\n\t\t</bndbox>\n\t</object>\n"
        for b in boxes
    )
    return (
        f"<annotation>\n\t<folder>JPEGImages</folder>\n\t<filename>{escape(filename)}</filename>\n"
        f"\t<size>\n\t\t<width>{width}</width>\n\t\t<height>{height}</height>\n\t\t<depth>{depth}</depth>\n"
        f"\t</size>\n\t<segmented>0</segmented>\n{objects}</annotation>\n"
    )

"""Pascal VOC: one XML file per image, beside it or in ``Annotations/`` next to ``JPEGImages/``."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from xml.sax.saxutils import escape

from .detect import iter_files
from .items import ImportReport, Item
from .records import Box
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
    try:
        tree = ET.parse(xml_path)
    except ET.ParseError as exc:
        raise ValueError(f"not valid XML ({exc})") from None
    node = tree.getroot()
    if node.tag != "annotation":
        raise ValueError(f"not a Pascal VOC annotation (root element <{node.tag}>)")
    boxes = []
    for obj in node.iter("object"):
        name = (obj.findtext("name") or "").strip()
        bnd = obj.find("bndbox")
        if not name or bnd is None:
            raise ValueError("an <object> lacks <name> or <bndbox>")
        boxes.append(
            Box(name, _number(bnd, "xmin"), _number(bnd, "ymin"), _number(bnd, "xmax"), _number(bnd, "ymax"))
        )
    return node.findtext("filename"), boxes


def read_voc(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every VOC XML under ``root`` (or one XML file); images without XML come unlabeled."""
    xml_files = [root] if root.is_file() else [p for p in iter_files(root) if p.suffix.lower() == ".xml"]
    base = root.parent if root.is_file() else root
    items, used = [], set()
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
            )
        )
    if root.is_dir():
        for image in iter_files(root):
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

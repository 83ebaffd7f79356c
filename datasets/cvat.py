"""CVAT "for images 1.1" XML: ``<annotations>`` with one ``<image name width height subset>`` per photo
holding ``<box label xtl ytl xbr ybr>`` and ``<tag label>`` elements.

Polygons, polylines and points become boxes around them until segmentation lands (said once per
file); the ``subset`` attribute (``Train``, ``Validation``, ``Test``) gives the split.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from .detect import iter_files
from .items import ImportReport, Item
from .limits import MAX_BOXES_PER_IMAGE, split_from_name
from .locate import ImageIndex
from .records import Box
from .safety import to_float
from .safexml import parse_file

_OUTLINES = ("polygon", "polyline", "points")


def _outline_box(node) -> Box:
    pairs = [p.split(",") for p in (node.get("points") or "").split(";") if p.strip()]
    if not pairs:
        raise ValueError(f"a <{node.tag}> without points")
    xs = [to_float(x) for x, _y in pairs]
    ys = [to_float(y) for _x, y in pairs]
    return Box(node.get("label") or "", min(xs), min(ys), max(xs), max(ys))


def parse_image(node) -> tuple[list[Box], list[str], int]:
    """(boxes, tags, outlines turned into boxes) of one ``<image>`` element; ValueError if malformed."""
    boxes, tags, outlines = [], [], 0
    for child in node:
        label = (child.get("label") or "").strip()
        if child.tag in ("box", *_OUTLINES) and not label:
            raise ValueError(f"a <{child.tag}> without a label")
        if child.tag == "box":
            boxes.append(Box(label, *(to_float(child.get(k)) for k in ("xtl", "ytl", "xbr", "ybr"))))
        elif child.tag in _OUTLINES:
            boxes.append(_outline_box(child))
            outlines += 1
        elif child.tag == "tag" and label:
            tags.append(label)
        if len(boxes) > MAX_BOXES_PER_IMAGE:
            raise ValueError(f"it holds more than {MAX_BOXES_PER_IMAGE:,} shapes")
    return boxes, tags, outlines


def read_cvat(root: Path, report: ImportReport) -> tuple[int, list[Item]]:
    """Items for every ``<image>`` of the CVAT XML file(s) under ``root`` (or one XML file)."""
    base = root.parent if root.is_file() else root
    files = [root] if root.is_file() else [p for p in iter_files(root) if p.suffix.lower() == ".xml"]
    index = ImageIndex(base)
    items: list[Item] = []
    for xml_path in files:
        name = xml_path.relative_to(base).as_posix()
        try:
            top = parse_file(xml_path)
        except (ValueError, OSError) as exc:
            items.append(Item(source=name, error=f"cannot read CVAT file: {exc}"))
            continue
        if top.tag != "annotations":
            continue  # another XML in the folder (a VOC file, metadata)
        outlines = 0
        for node in top.iter("image"):
            reference = node.get("name") or ""
            try:
                boxes, tags, count = parse_image(node)
            except ValueError as exc:
                items.append(Item(source=reference or name, error=f"{name}: {exc}"))
                continue
            outlines += count
            path = index.find(reference, near=xml_path.parent) if reference else None
            if path is None:
                items.append(Item(source=reference or name, error=f"image listed in {name} was not found"))
                continue
            split = split_from_name(node.get("subset") or "")
            items.append(Item(source=index.source(path), path=path, boxes=boxes, labels=tags, split=split))
        if outlines:
            report.warn(
                f"{name}: {outlines} polygon(s), line(s) or point set(s) became the boxes around them "
                "(ModelDesk finds objects with boxes; outlines are not kept)"
            )
    return len(items), items


_SUBSETS = {"train": "Train", "val": "Validation", "test": "Test"}


def cvat_document(entries, labels: list[str]) -> str:
    """A CVAT for images 1.1 document; ``entries`` are (name, width, height, split, boxes, tags)."""
    head = "".join(f"<label><name>{escape(n)}</name><type>any</type></label>" for n in labels)
    parts = [
        '<?xml version="1.0" encoding="utf-8"?>\n<annotations>\n  <version>1.1</version>\n',
        f"  <meta><task><name>ModelDesk export</name><labels>{head}</labels></task></meta>\n",
    ]
    for index, (name, width, height, split, boxes, tags) in enumerate(entries):
        subset = f" subset={quoteattr(_SUBSETS[split])}" if split in _SUBSETS else ""
        parts.append(
            f'  <image id="{index}" name={quoteattr(name)} width="{width}" height="{height}"{subset}>\n'
        )
        for b in boxes:
            parts.append(
                f'    <box label={quoteattr(b.label)} occluded="0" source="manual" xtl="{b.x0!r}" '
                f'ytl="{b.y0!r}" xbr="{b.x1!r}" ybr="{b.y1!r}" z_order="0"></box>\n'
            )
        parts += [f'    <tag label={quoteattr(t)} source="manual"></tag>\n' for t in tags]
        parts.append("  </image>\n")
    parts.append("</annotations>\n")
    return "".join(parts)

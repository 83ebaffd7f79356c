"""XML parsed without DTDs or entities: annotation files never need them, and an entity that expands
to gigabytes ("billion laughs") or reads a local file is the classic XML attack.

defusedxml is not a dependency; refusing any ``<!DOCTYPE``/``<!ENTITY`` before parsing closes the
same holes for the files importers read (VOC, CVAT).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

MAX_XML_BYTES = 256 << 20  # a CVAT file of 100,000 images with boxes is about 100 MB


def parse_file(path: Path) -> ET.Element:
    """The root element of the XML file at ``path``; ValueError saying what is wrong otherwise."""
    size = path.stat().st_size
    if size > MAX_XML_BYTES:
        raise ValueError(f"it is larger than {MAX_XML_BYTES >> 20} MB")
    data = path.read_bytes()
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ValueError("it declares a DTD or entities, which annotation files do not need and are not read")
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise ValueError(f"not valid XML ({exc})") from None

"""Render the app icon (``assets/modeldesk.svg``) to the raster formats installers want.

PNG for Linux desktop entries, ``.ico`` for Windows, ``.icns`` for macOS; Qt draws the SVG, Pillow
writes the container formats. Build-time only.

Usage::

    python3 packaging/make_icons.py --out packaging/assets --png 256 [--ico] [--icns]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SVG = HERE / "assets" / "modeldesk.svg"


def render_png(size: int) -> bytes:
    """The icon as PNG bytes, ``size`` x ``size`` pixels, transparent background."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    image = QImage(size, size, QImage.Format_ARGB32)
    image.fill(Qt.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    QSvgRenderer(str(SVG)).render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    image.save(buffer, "PNG")
    buffer.close()
    return bytes(data)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "assets")
    parser.add_argument("--png", type=int, metavar="SIZE", help="write modeldesk-SIZE.png")
    parser.add_argument("--ico", action="store_true", help="write modeldesk.ico (16-256 px)")
    parser.add_argument("--icns", action="store_true", help="write modeldesk.icns (16-1024 px)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.png:
        (args.out / f"modeldesk-{args.png}.png").write_bytes(render_png(args.png))
    if args.ico or args.icns:
        from PIL import Image

        big = Image.open(io.BytesIO(render_png(1024))).convert("RGBA")
        if args.ico:
            big.save(args.out / "modeldesk.ico", sizes=[(s, s) for s in (16, 24, 32, 48, 64, 128, 256)])
        if args.icns:
            big.save(args.out / "modeldesk.icns")
    return 0


if __name__ == "__main__":
    sys.exit(main())

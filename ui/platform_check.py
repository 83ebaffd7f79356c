"""Say which system library Qt's window plugin lacks, before Qt aborts for want of it.

On Linux, Qt opens windows through its ``xcb`` plugin, which links system libraries that a minimal
desktop may lack (``libxcb-cursor0`` above all, needed since Qt 6.5). Without one, creating the
QApplication aborts the process (exit 134) with a hint buried in Qt's log. :func:`missing_libraries`
loads the plugin the way Qt would, without Qt, and :func:`advice` turns what is missing into one
message that names the packages to install.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: library -> (Debian/Ubuntu package, Fedora package, Arch package)
PACKAGES = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil", "xcb-util-renderutil"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb", "libxcb"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon", "libxkbcommon"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl", "libglvnd"),
    "libGL.so.1": ("libgl1", "libglvnd-glx", "libglvnd"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig", "fontconfig"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs", "dbus"),
}

#: libraries Qt opens at run time instead of linking (so ``ldd`` cannot see them)
OPENED_AT_RUN_TIME = ("libxcb-cursor.so.0",)

_NOT_FOUND = re.compile(r"^\s*(\S+)\s*=>\s*not found", re.MULTILINE)
_CANNOT_OPEN = re.compile(r"(\S+\.so[.\d]*): cannot open shared object file")


def uses_xcb(environ=os.environ, platform: str = sys.platform) -> bool:
    """Whether Qt will open its windows through the xcb plugin here."""
    if not platform.startswith("linux"):
        return False
    chosen = environ.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0].strip()
    if chosen:
        return chosen == "xcb"
    # Qt 6 prefers Wayland in a Wayland session and falls back to xcb elsewhere
    return not (environ.get("WAYLAND_DISPLAY") and environ.get("XDG_SESSION_TYPE") == "wayland")


def xcb_plugin() -> Path | None:
    """The xcb platform plugin of the Qt that PySide6 loads, or None when it is not there."""
    try:
        import PySide6
    except ImportError:
        return None
    path = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return path if path.is_file() else None


def missing_libraries(plugin: Path, *, ldd: str | None = "", load=ctypes.CDLL) -> list[str]:
    """The system libraries ``plugin`` needs that cannot be found (empty when it loads), with those
    Qt opens at run time (:data:`OPENED_AT_RUN_TIME`).

    ``ldd`` (found on PATH when "") lists every linked library missing at once; without it (None),
    loading the plugin names the first.
    """
    ldd = shutil.which("ldd") if ldd == "" else ldd
    return _missing_linked(plugin, ldd, load) + [
        name for name in OPENED_AT_RUN_TIME if not _loads(name, load)
    ]


def _loads(library: str, load) -> bool:
    try:
        load(library)
    except OSError:
        return False
    return True


def _missing_linked(plugin: Path, ldd, load) -> list[str]:
    if ldd:
        try:
            listing = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            listing = ""
        missing = list(dict.fromkeys(_NOT_FOUND.findall(listing)))
        if missing or listing:
            return missing
    try:
        load(str(plugin))
    except OSError as error:
        found = _CANNOT_OPEN.search(str(error))
        return [found.group(1)] if found else []
    return []


def advice(missing: list[str]) -> str:
    """One message naming the missing libraries and the commands that install them."""
    known = [PACKAGES[name] for name in missing if name in PACKAGES]
    lines = [
        "ModelDesk cannot open its window: Qt needs the system "
        + ("library " if len(missing) == 1 else "libraries ")
        + ", ".join(missing)
        + ", which "
        + ("is" if len(missing) == 1 else "are")
        + " not installed."
    ]
    if known:
        debian, fedora, arch = (sorted({packages[i] for packages in known}) for i in range(3))
        lines += [
            "Install with one of:",
            "  sudo apt install " + " ".join(debian) + "      # Debian, Ubuntu",
            "  sudo dnf install " + " ".join(fedora) + "      # Fedora",
            "  sudo pacman -S " + " ".join(arch) + "      # Arch",
        ]
    lines.append("The command line works without them: see `modeldesk --help`.")
    return "\n".join(lines)


def check_window_libraries(environ=os.environ) -> str:
    """The advice to show instead of opening the window, or "" when nothing is missing."""
    if not uses_xcb(environ):
        return ""
    plugin = xcb_plugin()
    missing = missing_libraries(plugin) if plugin is not None else []
    return advice(missing) if missing else ""

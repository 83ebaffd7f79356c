"""Build the ModelDesk ``.deb`` from a PyInstaller one-folder build.

Layout: the app in ``/opt/modeldesk``, ``/usr/bin/modeldesk`` a link to it, a desktop entry and
icons under ``/usr/share``, the licences under ``/usr/share/doc/modeldesk``. The maintainer scripts
only refresh the desktop and icon caches: nothing under a user's home (the workspace, settings,
caches) is created, migrated or removed by installing, upgrading, removing or purging the package.
The app itself migrates its workspace on first start after an upgrade.

Usage::

    python3 packaging/linux/make_deb.py --app build/installer/dist/modeldesk --version 0.1.0 --out dist
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ASSETS = HERE.parent / "assets"
PREFIX = "opt/modeldesk"

#: System packages the bundled Qt needs at run time that a desktop normally has but a minimal system
#: lacks (PyInstaller leaves libc, libGL/EGL and X/font libraries to the system on purpose).
DEPENDS = (
    "libc6 (>= 2.31)",
    "libgl1",
    "libegl1",
    "libfontconfig1",
    "libfreetype6",
    "libxkbcommon0",
    "libxkbcommon-x11-0",
    "libx11-xcb1",
    "libxcb1",
    "libxcb-cursor0",
    "libxcb-icccm4",
    "libxcb-image0",
    "libxcb-keysyms1",
    "libxcb-randr0",
    "libxcb-render-util0",
    "libxcb-shape0",
    "libxcb-xfixes0",
    "libxcb-xkb1",
    "libxcb-shm0",
    "libxcb-sync1",
    "libxcb-render0",
    "libdbus-1-3",
    "libglib2.0-0",
    "libpulse0",  # QtMultimedia links it: recording sounds, the camera on the Deploy page
)
RECOMMENDS = ("xdg-desktop-portal", "desktop-file-utils")

CAPTION = "Train image models on your own data, on your own computer, offline."
DESCRIPTION = """\
 ModelDesk takes you from a folder of pictures to a model that runs on this
 computer: import and label images, train from a template on the CPUs and GPUs
 it finds, read an honest evaluation, then export, compress and serve the model.
 Nothing is downloaded at run time.
 .
 This package bundles its own Python, Qt (LGPL-3.0, replaceable: the libraries
 are plain files under /opt/modeldesk/_internal/PySide6/Qt/lib) and ONNX Runtime."""

POSTINST = """#!/bin/sh
# Refresh the menu and icon caches. Never touches users' home folders (their workspaces stay).
set -e
if [ "$1" = "configure" ]; then
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q /usr/share/applications || true
  command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t /usr/share/icons/hicolor || true
fi
exit 0
"""
POSTRM = """#!/bin/sh
# Refresh the menu and icon caches. Never touches users' home folders: removing or purging the
# package leaves every workspace (by default ~/.local/share/ModelDesk) where it is.
set -e
if [ "$1" = "remove" ] || [ "$1" = "purge" ]; then
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q /usr/share/applications || true
  command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t /usr/share/icons/hicolor || true
fi
exit 0
"""


def folder_kib(path: Path) -> int:
    """Installed size in KiB as dpkg counts it (file sizes, links as entries)."""
    total = 0
    for item in path.rglob("*"):
        total += item.lstat().st_size if item.is_symlink() or item.is_file() else 0
    return max(1, total // 1024)


def known_licences() -> dict:
    """``app/about.py``'s ``KNOWN_LICENCES`` (for packages whose metadata states none), read as text."""
    import ast

    tree = ast.parse((HERE.parents[1] / "app" / "about.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "KNOWN_LICENCES":
            return ast.literal_eval(node.value)
    return {}


def third_party_notice(app: Path) -> str:
    """The licences of what the build bundles, from the dist-info folders PyInstaller copied."""
    known = {k.lower().replace("_", "-"): v for k, v in known_licences().items()}
    lines = [
        "ModelDesk bundles Python (PSF-2.0) and these components. Their licence texts are in the",
        f"*.dist-info folders under /{PREFIX}/_internal.",
        "",
    ]
    internal = app / "_internal"
    for info in sorted(internal.glob("*.dist-info")):
        meta = (
            (info / "METADATA").read_text(encoding="utf-8", errors="replace")
            if (info / "METADATA").exists()
            else ""
        )
        fields = {}
        for line in meta.splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(": ")
            if key in ("Name", "Version", "License-Expression", "License") and key not in fields:
                fields[key] = value.strip()
        name = fields.get("Name", info.name)
        stated = fields.get("License-Expression") or fields.get("License") or ""
        if not stated or stated.upper() == "UNKNOWN":
            stated = known.get(name.lower().replace("_", "-"), "see its licence file")
        licence = stated
        lines.append(f"{name} {fields.get('Version', '')}: {licence[:120]}")
    lines += [
        "",
        "Qt 6 (through PySide6) is used under the LGPL-3.0. It is linked dynamically; you may replace",
        f"the Qt libraries in /{PREFIX}/_internal/PySide6/Qt/lib with your own build of the same version.",
        "",
    ]
    return "\n".join(lines)


def stage(app: Path, root: Path, version: str, arch: str, png: Path | None) -> None:
    """Lay out the package tree under ``root``."""
    target = root / PREFIX
    shutil.copytree(app, target, symlinks=True)
    (root / "usr/bin").mkdir(parents=True)
    os.symlink(f"/{PREFIX}/modeldesk", root / "usr/bin/modeldesk")
    apps = root / "usr/share/applications"
    apps.mkdir(parents=True)
    shutil.copy2(HERE / "modeldesk.desktop", apps / "modeldesk.desktop")
    scalable = root / "usr/share/icons/hicolor/scalable/apps"
    scalable.mkdir(parents=True)
    shutil.copy2(ASSETS / "modeldesk.svg", scalable / "modeldesk.svg")
    if png is not None and png.exists():
        raster = root / "usr/share/icons/hicolor/256x256/apps"
        raster.mkdir(parents=True)
        shutil.copy2(png, raster / "modeldesk.png")
    doc = root / "usr/share/doc/modeldesk"
    doc.mkdir(parents=True)
    (doc / "copyright").write_text(
        "ModelDesk\nLicense: Apache-2.0\n\n" + third_party_notice(app), encoding="utf-8"
    )
    debian = root / "DEBIAN"
    debian.mkdir()
    control = {
        "Package": "modeldesk",
        "Version": version,
        "Architecture": arch,
        "Maintainer": "ModelDesk maintainers <maintainers@modeldesk.invalid>",
        "Installed-Size": str(folder_kib(root) - folder_kib(debian)),
        "Depends": ", ".join(DEPENDS),
        "Recommends": ", ".join(RECOMMENDS),
        "Section": "science",
        "Priority": "optional",
        "Homepage": "https://github.com/modeldesk/modeldesk",
        "Description": f"{CAPTION}\n{DESCRIPTION}",
    }
    (debian / "control").write_text("".join(f"{k}: {v}\n" for k, v in control.items()), encoding="utf-8")
    for name, text in (("postinst", POSTINST), ("postrm", POSTRM)):
        (debian / name).write_text(text, encoding="utf-8")
        os.chmod(debian / name, 0o755)


def build(
    app: Path, out: Path, version: str, arch: str, png: Path | None = None, compression: str = "xz"
) -> Path:
    """Write ``out/modeldesk_VERSION_ARCH.deb`` and return its path."""
    if not (app / "modeldesk").is_file():
        raise SystemExit(f"{app}: no 'modeldesk' executable in it; run the PyInstaller build first")
    out.mkdir(parents=True, exist_ok=True)
    deb = out / f"modeldesk_{version}_{arch}.deb"
    with tempfile.TemporaryDirectory(prefix="modeldesk-deb-") as tmp:
        root = Path(tmp) / "root"
        stage(app, root, version, arch, png)
        partial = deb.with_suffix(".deb.part")
        subprocess.run(
            ["dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", str(root), str(partial)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        os.replace(partial, deb)
    return deb


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", type=Path, required=True, help="the PyInstaller one-folder build")
    parser.add_argument("--version", required=True)
    parser.add_argument("--arch", default="amd64")
    parser.add_argument("--out", type=Path, default=Path("dist"))
    parser.add_argument("--png", type=Path, help="a 256x256 PNG icon (make_icons.py)")
    parser.add_argument("--compression", default="xz", choices=("xz", "zstd", "gzip"))
    args = parser.parse_args(argv)
    deb = build(args.app, args.out, args.version, args.arch, args.png, args.compression)
    print(f"wrote {deb} ({deb.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Build the Linux downloads from a checkout: a PyInstaller one-folder app from a regular (not
# editable) install of the package, then the .deb and the portable archive.
#
#   packaging/build.sh                 # -> dist/modeldesk_VERSION_ARCH.deb, dist/modeldesk-VERSION-linux-ARCH.tar.xz
#
# Needs: the run-time dependencies installed in $PYTHON's environment (pip install .), PyInstaller
# (installed here from PyPI when missing: pip install 'modeldesk[installer]'), dpkg-deb and xz.
# Environment: PYTHON (default python3), DIST (default dist), MODELDESK_KEEP_ACCELERATORS=1 keeps
# onnxruntime's GPU provider libraries (for a build made with onnxruntime-gpu), SKIP_DEB=1, SKIP_ARCHIVE=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
DIST="${DIST:-$ROOT/dist}"
WORK="$ROOT/build/installer"
VERSION="$("$PYTHON" -c 'import sys; sys.path.insert(0, "packaging"); import collect; print(collect.version())')"
ARCH="$(dpkg --print-architecture 2>/dev/null || uname -m)"
t0=$(date +%s)

if ! "$PYTHON" -c 'import PyInstaller' 2>/dev/null; then
  echo "== installing PyInstaller"
  "$PYTHON" -m pip install -q 'pyinstaller>=6.6'
fi

echo "== regular install of modeldesk into $WORK/site"
rm -rf "$WORK/site" "$ROOT/build/lib" "$ROOT"/build/bdist.*   # no stale module from an older build
mkdir -p "$WORK" "$DIST"
"$PYTHON" -m pip install -q --no-deps --target "$WORK/site" "$ROOT"
rm -rf "$WORK/site/bin"

echo "== icons"
"$PYTHON" packaging/make_icons.py --out "$WORK/icons" --png 256

echo "== PyInstaller one-folder build"
rm -rf "$WORK/dist"
# PYTHONPATH: the installed copy wins over any checkout or editable install on the path.
env -u PYTHONPATH PYTHONPATH="$WORK/site" MODELDESK_SITE="$WORK/site" MODELDESK_ICONS="$WORK/icons" QT_QPA_PLATFORM=offscreen \
  "$PYTHON" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$WORK/dist" --workpath "$WORK/pyinstaller" packaging/modeldesk.spec
APP="$WORK/dist/modeldesk"
"$APP/modeldesk" --version
t1=$(date +%s)

if [ "${SKIP_DEB:-0}" != 1 ]; then
  echo "== .deb"
  "$PYTHON" packaging/linux/make_deb.py --app "$APP" --version "$VERSION" --arch "$ARCH" --out "$DIST" --png "$WORK/icons/modeldesk-256.png"
fi
if [ "${SKIP_ARCHIVE:-0}" != 1 ]; then
  echo "== portable archive"
  STAGE="$WORK/portable/modeldesk-$VERSION"
  rm -rf "$WORK/portable" && mkdir -p "$STAGE"
  cp -a "$APP/." "$STAGE/"
  cp packaging/linux/PORTABLE.txt "$STAGE/README.txt"
  cp packaging/assets/modeldesk.svg packaging/linux/modeldesk.desktop "$STAGE/"
  ARCHIVE="$DIST/modeldesk-$VERSION-linux-$ARCH.tar.xz"
  XZ_OPT="-6 -T0" tar -C "$WORK/portable" -cJf "$ARCHIVE.part" "modeldesk-$VERSION" && mv "$ARCHIVE.part" "$ARCHIVE"
fi
t2=$(date +%s)

echo "== done: frozen build $((t1 - t0)) s, packages $((t2 - t1)) s"
du -sh "$APP" | sed 's/^/installed folder: /'
ls -l "$DIST"/modeldesk*"$VERSION"* 2>/dev/null || true
"$PYTHON" packaging/sizes.py "$APP" --top 12

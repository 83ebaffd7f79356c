#!/usr/bin/env bash
# Build the macOS download (NOT RUN in this repository's own environment: it has no Mac; the
# installers workflow runs it on a macos-14 runner). From a checkout:
#
#   pip install '.[installer]' && bash packaging/macos/build.sh
#   -> dist/ModelDesk-VERSION-macos-ARCH.dmg holding ModelDesk.app
#
# Signing and notarisation (optional; without them the .app is ad-hoc signed and Gatekeeper asks
# the user to confirm the first start): MACOS_SIGN_IDENTITY ("Developer ID Application: ..."),
# and for notarisation APPLE_ID, APPLE_TEAM_ID, APPLE_APP_PASSWORD (an app-specific password).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
WORK="$ROOT/build/installer"
DIST="$ROOT/dist"
VERSION="$("$PYTHON" -c 'import sys; sys.path.insert(0, "packaging"); import collect; print(collect.version())')"
ARCH="$(uname -m)"

"$PYTHON" -c 'import PyInstaller' 2>/dev/null || "$PYTHON" -m pip install -q 'pyinstaller>=6.6'

echo "== regular install of modeldesk"
rm -rf "$WORK/site" "$ROOT/build/lib" "$ROOT"/build/bdist.*
mkdir -p "$WORK" "$DIST"
"$PYTHON" -m pip install -q --no-deps --target "$WORK/site" "$ROOT"
rm -rf "$WORK/site/bin"

echo "== icons"
"$PYTHON" packaging/make_icons.py --out "$WORK/icons" --png 256 --icns

echo "== PyInstaller .app"
rm -rf "$WORK/dist"
env -u PYTHONPATH PYTHONPATH="$WORK/site" MODELDESK_SITE="$WORK/site" MODELDESK_ICONS="$WORK/icons" \
  QT_QPA_PLATFORM=offscreen "$PYTHON" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$WORK/dist" --workpath "$WORK/pyinstaller" packaging/modeldesk.spec
APP="$WORK/dist/ModelDesk.app"
"$APP/Contents/MacOS/modeldesk" --version

if [ -n "${MACOS_SIGN_IDENTITY:-}" ]; then
  echo "== signing (hardened runtime)"
  codesign --deep --force --options runtime --timestamp \
    --entitlements packaging/macos/entitlements.plist --sign "$MACOS_SIGN_IDENTITY" "$APP"
  codesign --verify --deep --strict "$APP"
fi

echo "== disk image"
STAGE="$WORK/dmg"
rm -rf "$STAGE" && mkdir -p "$STAGE"
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"
DMG="$DIST/ModelDesk-$VERSION-macos-$ARCH.dmg"
rm -f "$DMG"
hdiutil create -volname "ModelDesk $VERSION" -srcfolder "$STAGE" -ov -format UDZO "$DMG"

if [ -n "${MACOS_SIGN_IDENTITY:-}" ]; then
  codesign --force --timestamp --sign "$MACOS_SIGN_IDENTITY" "$DMG"
  if [ -n "${APPLE_ID:-}" ]; then
    echo "== notarisation"
    xcrun notarytool submit "$DMG" --apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" \
      --password "$APPLE_APP_PASSWORD" --wait
    xcrun stapler staple "$DMG"
  fi
fi

ls -l "$DMG"
"$PYTHON" packaging/sizes.py "$APP" --top 12

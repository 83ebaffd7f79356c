"""Smoke run of the frozen (installer) build: start, make the sample project from the first-run
screen, train the fast template, predict one image, quit; then the command line's demo.

Skips when there is no frozen build: ``packaging/build.sh`` makes one in
``build/installer/dist/modeldesk``, or point ``MODELDESK_FROZEN`` at an installed ``modeldesk``
executable. The installers workflow runs it on each platform after building; the main CI does not
build the installer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXE = "modeldesk.exe" if sys.platform == "win32" else "modeldesk"


def frozen_executable() -> Path | None:
    configured = os.environ.get("MODELDESK_FROZEN")
    candidate = Path(configured) if configured else ROOT / "build" / "installer" / "dist" / "modeldesk" / EXE
    return candidate if candidate.is_file() else None


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(frozen_executable() is None, reason="no frozen build (run packaging/build.sh)")]


def clean_env(home: Path) -> dict:
    """No Python of ours reachable: no PYTHONPATH, a fresh home, offscreen Qt."""
    env = {"HOME": str(home), "USERPROFILE": str(home), "PATH": os.environ.get("PATH", ""),
           "QT_QPA_PLATFORM": "offscreen", "LANG": "C.UTF-8", "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_DATA_HOME": str(home / ".local" / "share")}
    if sys.platform == "win32":
        env.update(SYSTEMROOT=os.environ.get("SYSTEMROOT", ""), APPDATA=str(home / "AppData"),
                   LOCALAPPDATA=str(home / "AppData" / "Local"))
    return env


def run(args, home, timeout=600):
    return subprocess.run([str(frozen_executable()), *map(str, args)], capture_output=True, text=True,
                          env=clean_env(home), timeout=timeout, cwd=home)


def test_frozen_version(tmp_path):
    result = run(["--version"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "installer build" in result.stdout


def test_frozen_first_run_trains_and_predicts(tmp_path):
    result = run(["-m", "modeldesk.ui.smoke", "--workspace", tmp_path / "ws", "--json"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["template"].endswith("/fast")
    assert report["model"] and (tmp_path / "ws" / "models").is_dir()
    assert report["prediction"]["label"] == "circle"
    assert report["first_window_s"] > 0 and report["window_to_model_s"] > report["sample_project_s"]


def test_frozen_demo_runs_every_step(tmp_path):
    result = run(["demo", "--workspace", tmp_path / "ws"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every step worked" in result.stdout

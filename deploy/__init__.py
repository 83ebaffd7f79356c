"""Deployment: the model artifact, the one preprocessing, prediction, compression, export, the local
service and the deploy bundle. Imports nothing else from ModelDesk and no Qt.

The public names are loaded on first use, so ``import modeldesk.deploy.artifact`` (as the trainers
do) does not pay for onnx, the quantization tools or Starlette.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ArtifactError": "artifact",
    "ModelArtifact": "artifact",
    "load_artifact": "artifact",
    "new_model_id": "artifact",
    "save_artifact": "artifact",
    "build_bundle": "bundle",
    "compress_artifact": "compress",
    "export_artifact": "export",
    "Predictor": "predictor",
    "ImageDecodeError": "preprocess",
    "ImageSpec": "preprocess",
    "preprocess_image": "preprocess",
    "create_session": "runtime",
    "create_app": "service",
    "serve": "service",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)

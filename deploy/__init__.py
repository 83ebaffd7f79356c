"""Deployment: the model artifact, the one preprocessing, prediction, compression, export, the local
service and the deploy bundle. Imports nothing else from ModelDesk and no Qt."""

from .artifact import ArtifactError, ModelArtifact, load_artifact, new_model_id, save_artifact
from .bundle import build_bundle
from .compress import compress_artifact
from .export import export_artifact
from .predictor import Predictor
from .preprocess import ImageDecodeError, ImageSpec, preprocess_image
from .runtime import create_session
from .service import create_app, serve

__all__ = [
    "ArtifactError", "ImageDecodeError", "ImageSpec", "ModelArtifact", "Predictor", "build_bundle",
    "compress_artifact", "create_app", "create_session", "export_artifact", "load_artifact", "new_model_id",
    "preprocess_image", "save_artifact", "serve",
]

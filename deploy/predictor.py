"""In-app prediction on a model artifact: the same code path the service and the bundle use."""

from __future__ import annotations

import os

import numpy as np

from .artifact import ModelArtifact, load_artifact
from .preprocess import MAX_PIXELS, ImageDecodeError, image_to_tensor, load_image
from .runtime import create_session


def format_predictions(probabilities: np.ndarray, labels: list[str]) -> list[dict]:
    """Turn an (N, n_classes) probability array into ``{"label", "score", "scores"}`` dicts."""
    results = []
    for row in np.asarray(probabilities, dtype=np.float64):
        best = int(np.argmax(row))
        results.append({
            "label": labels[best],
            "score": float(row[best]),
            "scores": {label: float(p) for label, p in zip(labels, row)},
        })
    return results


class Predictor:
    """Run an artifact's graph on images.

    Parameters
    ----------
    artifact : ModelArtifact or path
        The model artifact (its folder, ``model.json`` or ``model.onnx``).
    device : str
        ``auto`` (best available execution provider, CPU last), ``cpu``, ``cuda``...
    threads : int or None
        Intra-op threads; None lets ONNX Runtime use every core.
    batch_size : int
        Images per ``session.run`` call in :meth:`predict`.
    max_pixels : int
        Images with more pixels are refused (decompression-bomb guard).

    The session is created once; ONNX Runtime sessions are safe to ``run`` from several threads, and
    this class keeps no per-call state, so one Predictor can serve concurrent callers.
    """

    def __init__(self, artifact, device: str = "auto", threads: int | None = None, *,
                 batch_size: int = 16, max_pixels: int = MAX_PIXELS):
        self.artifact = artifact if isinstance(artifact, ModelArtifact) else load_artifact(artifact)
        self.device = device
        self.threads = threads
        self.batch_size = int(batch_size)
        self.max_pixels = int(max_pixels)
        self.spec = self.artifact.spec
        self.labels = self.artifact.labels
        self.session = create_session(self.artifact.model_path, device=device, threads=threads)
        self.input_name = self.artifact.input_name
        self.output_name = self.artifact.output_name
        names = [i.name for i in self.session.get_inputs()]
        if self.input_name not in names:
            self.input_name = names[0]

    @property
    def providers(self) -> list[str]:
        """Execution providers the session really uses, best first."""
        return self.session.get_providers()

    def preprocess(self, source) -> np.ndarray:
        """Decode and preprocess one path/bytes source to a (3, S, S) float32 array."""
        image = load_image(source, max_pixels=self.max_pixels, draft_size=self.spec.size)
        return image_to_tensor(image, self.spec)

    def predict_tensors(self, batch: np.ndarray) -> np.ndarray:
        """Probabilities (N, n_classes) for an already preprocessed (N, 3, S, S) batch."""
        batch = np.ascontiguousarray(batch, dtype=np.float32)
        if batch.ndim != 4 or batch.shape[1:] != (3, self.spec.size, self.spec.size):
            raise ValueError(f"expected a batch of shape (N, 3, {self.spec.size}, {self.spec.size}), "
                             f"got {batch.shape}")
        if len(batch) == 0:
            return np.zeros((0, len(self.labels)), np.float32)
        return self.session.run([self.output_name], {self.input_name: batch})[0]

    def predict(self, sources, *, names=None) -> list[dict]:
        """Predict a label for each source (paths or bytes), in order.

        Returns one ``{"label", "score", "scores": {label: probability}}`` dict per source.
        Raises ``ImageDecodeError`` naming the first source that is not a usable image (by its
        entry in ``names`` when given, e.g. the uploaded file names of in-memory images).
        """
        if isinstance(sources, (str, bytes, bytearray)) or hasattr(sources, "__fspath__"):
            sources = [sources]
        sources = list(sources)
        results: list[dict] = []
        for start in range(0, len(sources), self.batch_size):
            batch = np.stack([self._preprocess_named(sources, i, names)
                              for i in range(start, min(start + self.batch_size, len(sources)))])
            results.extend(format_predictions(self.predict_tensors(batch), self.labels))
        return results

    def _preprocess_named(self, sources, index: int, names) -> np.ndarray:
        try:
            return self.preprocess(sources[index])
        except ImageDecodeError as exc:
            if names is None or isinstance(sources[index], (str, os.PathLike)):
                raise
            raise ImageDecodeError(f"{names[index]}: {str(exc).partition(': ')[2] or exc}") from None

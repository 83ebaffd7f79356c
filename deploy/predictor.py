"""In-app prediction on a model artifact: the same code path the service and the bundle use.

The predictor reads the model card, takes the input of its kind and the output of its target from
``inputs`` and never looks at a task name.
"""

from __future__ import annotations

import os

import numpy as np

from .artifact import ArtifactError, ModelArtifact, load_artifact
from .inputs import InputError, input_for, output_for
from .outputs import format_predictions  # noqa: F401  (re-exported: part of this module's API)
from .preprocess import MAX_PIXELS
from .runtime import create_runtime_session


class Predictor:
    """Run an artifact's graph on inputs of the kind its card names.

    Parameters
    ----------
    artifact : ModelArtifact or path
        The model artifact (its folder, ``model.json`` or ``model.onnx``).
    device : str
        ``auto`` (best available execution provider, CPU last), ``cpu``, ``cuda``...
    threads : int or None
        Intra-op threads; None lets ONNX Runtime use every core.
    batch_size : int or None
        Items per ``session.run`` call in :meth:`predict` (default: what the input kind allows).
    max_pixels : int
        Images with more pixels are refused (decompression-bomb guard).

    The session is created once; ONNX Runtime sessions are safe to ``run`` from several threads, and
    this class keeps no per-call state, so one Predictor can serve concurrent callers.
    """

    def __init__(
        self,
        artifact,
        device: str = "auto",
        threads: int | None = None,
        *,
        batch_size: int | None = None,
        max_pixels: int = MAX_PIXELS,
    ):
        self.artifact = artifact if isinstance(artifact, ModelArtifact) else load_artifact(artifact)
        self.device = device
        self.threads = threads
        self.input = input_for(self.artifact.card, max_pixels=max_pixels)
        self.output = output_for(self.artifact.card)
        self.batch_size = int(batch_size or self.input.batch_size)
        self.max_pixels = int(max_pixels)
        self.labels = self.artifact.labels
        try:
            # the way compression measured this model to run fastest (the card's runtime)
            self.session = create_runtime_session(
                self.artifact.model_path,
                (self.artifact.card.get("runtime") or {}).get("name"),
                device=device,
                threads=threads,
            )
        except ValueError:  # ours: an unknown device name
            raise
        except Exception as exc:  # onnxruntime's own types (InvalidProtobuf, Fail...) for a broken file
            raise ArtifactError(
                f"{self.artifact.model_path}: the model file is damaged or not an ONNX "
                f"model ({str(exc).splitlines()[0][:160]})"
            ) from None
        self.input_name = self.artifact.input_name
        self.output_name = self.artifact.output_name
        names = [i.name for i in self.session.get_inputs()]
        if self.input_name not in names:
            self.input_name = names[0]

    @property
    def spec(self):
        """The image preprocessing of an image model."""
        return self.input.spec

    @property
    def providers(self) -> list[str]:
        """Execution providers the session really uses, best first."""
        return self.session.get_providers()

    def preprocess(self, source) -> np.ndarray:
        """Decode and preprocess one source (a path, bytes, or a text) to the array of one item."""
        return self.input.load(source)

    def predict_tensors(self, batch: np.ndarray) -> np.ndarray:
        """The first output (e.g. probabilities (N, n_classes)) for an already preprocessed batch."""
        if isinstance(batch, np.ndarray) and batch.dtype != object:
            batch = np.ascontiguousarray(batch, dtype=np.float32)
        check = getattr(self.input, "check_batch", None)
        if check is not None:
            check(batch)
        if len(batch) == 0:
            return np.zeros((0, len(self.labels)), np.float32)
        return self.session.run(self.output.names[:1], self.input.feeds(list(batch), self.input_name))[0]

    def predict(self, sources, *, names=None) -> list[dict]:
        """Predict for each source (paths, bytes or texts), in order.

        Returns one dict per source: ``{"label", "score", "scores"}`` plus what the model's target
        adds (``"tags"`` for tag models, ``"boxes"`` for detectors). Raises ``InputError`` (or the input kind's own ValueError
        subclass, e.g. ``ImageDecodeError``) naming the first source that cannot be used (by its entry
        in ``names`` when given, e.g. the uploaded file names of in-memory images).
        """
        if isinstance(sources, (str, bytes, bytearray)) or hasattr(sources, "__fspath__"):
            sources = [sources]
        sources = list(sources)
        results: list[dict] = []
        for start in range(0, len(sources), self.batch_size):
            chunk = range(start, min(start + self.batch_size, len(sources)))
            results.extend(self.run_items([self._load_named(sources, i, names) for i in chunk]))
        return results

    def prepare(self, sources, *, names=None) -> list:
        """Decode every source into a model-ready item (the first half of :meth:`predict`)."""
        sources = list(sources)
        return [self._load_named(sources, i, names) for i in range(len(sources))]

    def run_items(self, items: list) -> list[dict]:
        """Predictions for prepared items, in batches of ``batch_size`` (the second half)."""
        results: list[dict] = []
        step = 1 if getattr(self.output, "one_per_run", False) else self.batch_size  # masks: a photo's size
        for start in range(0, len(items), step):
            if hasattr(items[start], "run_on"):  # a large photo a segmentation model cuts into tiles
                item = items[start]
                outputs = item.run_on(
                    self.session, self.output.names, self.input_name, getattr(self.input, "size_input", None)
                )
                results.extend(self.output.format(outputs))
                continue
            results.extend(
                self.output.format(
                    self.session.run(
                        self.output.names, self.input.feeds(items[start : start + step], self.input_name)
                    )
                )
            )
        return results

    def _load_named(self, sources, index: int, names) -> np.ndarray:
        try:
            return self.input.load(sources[index])
        except ValueError as exc:
            if (
                names is None
                or isinstance(sources[index], os.PathLike)
                or (isinstance(sources[index], str) and not self.input.inline)
            ):
                raise
            error = type(exc) if getattr(exc, "user_error", False) else InputError
            raise error(f"{names[index]}: {str(exc).partition(': ')[2] or exc}") from None

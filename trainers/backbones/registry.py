"""Backbone registry: frozen pretrained feature extractors, built once as ONNX and cached on disk."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from modeldesk.deploy.preprocess import ImageSpec
from modeldesk.deploy.runtime import create_session
from modeldesk.fileio import atomic_write

log = logging.getLogger(__name__)


def write_atomically(path, data: bytes) -> Path:
    """Write a built graph atomically and durably (it is built once and reused for ever)."""
    return atomic_write(path, data, durable=True)


@dataclass(frozen=True)
class Backbone:
    """A frozen pretrained network that turns preprocessed images into features.

    Parameters
    ----------
    name : registry name, e.g. ``"efficientnet-lite0"``.
    version : changes whenever the built graph would change; part of every cache key.
    description : one line for people.
    spec : the preprocessing the graph expects (input ``image``, float32 NCHW).
    outputs : output name -> channels (``embedding``, ``logits``, ``stride8``...).
    build : returns the ONNX model; called only on a cache miss.
    """

    name: str
    version: str
    description: str
    spec: ImageSpec
    outputs: Mapping[str, int]
    build: Callable[[], onnx.ModelProto] = field(repr=False, compare=False)
    input_name: str = "image"

    @property
    def key(self) -> str:
        """Name and version: what feature caches are keyed by."""
        return f"{self.name}@{self.version}"

    def onnx_path(self, cache_dir) -> Path:
        """Path of the built ``.onnx`` in ``cache_dir``, building and writing it atomically if missing."""
        cache_dir = Path(cache_dir)
        path = cache_dir / f"{self.name}-{self.version}.onnx"
        if path.is_file():
            return path
        log.info("building backbone %s into %s", self.key, path)
        return write_atomically(path, self.build().SerializeToString())

    def load_onnx(self, cache_dir) -> onnx.ModelProto:
        """The backbone graph as an ONNX model (built and cached on first use)."""
        return onnx.load(os.fspath(self.onnx_path(cache_dir)))

    def create_session(self, cache_dir, *, device: str = "auto", threads: int | None = None):
        """An ONNX Runtime session on the cached graph (see ``deploy.runtime.create_session``)."""
        return create_session(self.onnx_path(cache_dir), device=device, threads=threads)


_REGISTRY: dict[str, Backbone] = {}


def register_backbone(backbone: Backbone) -> Backbone:
    """Add ``backbone`` to the registry (replacing one with the same name) and return it."""
    _REGISTRY[backbone.name] = backbone
    return backbone


def get_backbone(name: str) -> Backbone:
    """The registered backbone called ``name``; ValueError naming the choices otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown backbone {name!r}; available: {', '.join(sorted(_REGISTRY))}") from None


def list_backbones() -> list[Backbone]:
    """All registered backbones, by name."""
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]

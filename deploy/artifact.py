"""The model artifact: a directory holding ``model.onnx`` (one graph) and ``model.json`` (the card).

The card says how to feed the graph (``preprocessing``, whose ``kind`` names the input, e.g. an
ImageSpec dict), what its outputs mean (``target``: ``"label"``, ``"tags"``...; ``labels``) and where it
came from (``template``, ``metrics``, ``versions``, ``created``). Every other
part of ModelDesk (trainers, the predictor, export, compression, the service, the bundle) reads and
writes artifacts only through this module.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .preprocess import ImageSpec

MODEL_FILE = "model.onnx"
CARD_FILE = "model.json"
REQUIRED_KEYS = ("id", "task", "labels", "preprocessing")


class ArtifactError(ValueError):
    """A path is not a usable model artifact; the message says why."""

    user_error = True


@dataclass(frozen=True)
class ModelArtifact:
    """A loaded artifact: where it lives and its model card."""

    path: Path
    card: dict = field(repr=False)

    @property
    def model_path(self) -> Path:
        return self.path / MODEL_FILE

    @property
    def id(self) -> str:
        return self.card["id"]

    @property
    def labels(self) -> list[str]:
        return list(self.card["labels"])

    @property
    def spec(self) -> ImageSpec:
        """The image preprocessing (image models only)."""
        return ImageSpec.from_dict(self.card["preprocessing"])

    @property
    def input_kind(self) -> str:
        """What the model takes: ``"image"``, ``"text"``, ``"audio"``."""
        return self.card["preprocessing"].get("kind", "image")

    @property
    def target(self) -> str:
        """What the model predicts: ``"label"``, ``"tags"``, ``"boxes"``."""
        return self.card.get("target", "label")

    @property
    def input_name(self) -> str:
        return self.card.get("input_name", "image")

    @property
    def output_name(self) -> str:
        return self.card.get("output_name", "probabilities")

    def model_bytes(self) -> bytes:
        """The serialized ONNX graph."""
        return self.model_path.read_bytes()

    def size_bytes(self) -> int:
        """Bytes on disk of the graph and the card together."""
        return sum(p.stat().st_size for p in (self.model_path, self.path / CARD_FILE))


def new_model_id() -> str:
    """A new, sortable, unique model id such as ``m-20261202-103512-3f9a1c``."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"m-{stamp}-{uuid.uuid4().hex[:6]}"


def _complete_card(card: dict) -> dict:
    card = dict(card)
    card.setdefault("id", new_model_id())
    card.setdefault("task", "image-classification")
    card.setdefault("target", "label")
    card.setdefault("preprocessing", ImageSpec().to_dict())
    card.setdefault("template", None)
    card.setdefault("metrics", {})
    card.setdefault("versions", {})
    card.setdefault("created", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    card.setdefault("input_name", "image")
    card.setdefault("output_name", "probabilities")
    card.setdefault("warnings", [])
    if not card.get("labels"):
        raise ArtifactError("the model card needs a non-empty list of labels")
    card["labels"] = [str(label) for label in card["labels"]]
    return card


def save_artifact(directory, onnx_model, card: dict) -> Path:
    """Write an artifact to ``directory`` atomically and return its path.

    Parameters
    ----------
    directory : str or Path
        Target folder; it is replaced if it already holds an artifact.
    onnx_model : onnx.ModelProto or bytes
        The single classifier graph.
    card : dict
        The model card; missing optional keys get defaults (``id``, ``created``...).

    Files are written into a temporary sibling folder which is then renamed into place, so a crash
    never leaves a half-written artifact under ``directory``.
    """
    directory = Path(directory)
    data = onnx_model if isinstance(onnx_model, (bytes, bytearray)) else onnx_model.SerializeToString()
    card = _complete_card(card)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_folder(directory.parent, f".{directory.name}.")
    try:
        (tmp / MODEL_FILE).write_bytes(bytes(data))
        (tmp / CARD_FILE).write_text(json.dumps(card, indent=2, ensure_ascii=False), encoding="utf-8")
        if directory.exists():
            if not (directory / CARD_FILE).exists() and any(directory.iterdir()):
                raise ArtifactError(f"{directory}: exists and is not a model artifact; not overwriting it")
            old = directory.with_name(f".{directory.name}.old-{uuid.uuid4().hex[:6]}")
            os.replace(directory, old)
            os.replace(tmp, directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, directory)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return directory


def _new_folder(parent: Path, prefix: str) -> Path:
    """A new, uniquely named folder whose mode follows the umask (``mkdtemp`` would make it 0700)."""
    while True:
        path = parent / f"{prefix}{uuid.uuid4().hex[:8]}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def load_artifact(path) -> ModelArtifact:
    """Load an artifact from its directory, its ``model.json`` or its ``model.onnx`` path."""
    if isinstance(path, ModelArtifact):
        return path
    path = Path(path)
    if path.is_file() and path.name in (MODEL_FILE, CARD_FILE):
        path = path.parent
    if not path.exists():
        raise ArtifactError(f"{path}: no such model artifact")
    if not path.is_dir():
        raise ArtifactError(
            f"{path}: not a model artifact (expected a folder with {MODEL_FILE} and {CARD_FILE})"
        )
    missing = [name for name in (MODEL_FILE, CARD_FILE) if not (path / name).is_file()]
    if missing:
        raise ArtifactError(f"{path}: not a model artifact (missing {', '.join(missing)})")
    try:
        card = json.loads((path / CARD_FILE).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{path / CARD_FILE}: unreadable model card ({exc})") from None
    if not isinstance(card, dict):
        raise ArtifactError(f"{path / CARD_FILE}: the model card must be a JSON object")
    absent = [key for key in REQUIRED_KEYS if key not in card]
    if absent:
        raise ArtifactError(f"{path / CARD_FILE}: the model card lacks {', '.join(absent)}")
    from .inputs import INPUT_KINDS, OUTPUT_KINDS, input_class

    if not isinstance(card["preprocessing"], dict):
        raise ArtifactError(f"{path / CARD_FILE}: the model card's preprocessing is missing")
    kind = card["preprocessing"].get("kind", "image")
    if kind not in INPUT_KINDS:
        raise ArtifactError(
            f"{path}: this model takes {kind!r} inputs, which this version of the app "
            f"cannot read (it reads {', '.join(INPUT_KINDS)})"
        )
    problem = input_class(kind).check_preprocessing(card["preprocessing"])
    if problem:
        raise ArtifactError(f"{path / CARD_FILE}: {problem}")
    target = card.get("target", "label")
    if target not in OUTPUT_KINDS:
        raise ArtifactError(
            f"{path}: this model predicts {target!r}, which this version of the app "
            f"cannot read (it reads {', '.join(OUTPUT_KINDS)})"
        )
    return ModelArtifact(path=path, card=card)

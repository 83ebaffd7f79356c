"""Model inputs and outputs, keyed by what the model card says.

The predictor, the service, the console and the bundle never look at a task name: they ask this
module for the input of the card's ``preprocessing["kind"]`` (``"image"`` now; ``"text"`` and
``"audio"`` register the same way) and for the output of the card's ``target`` (``"label"``,
``"tags"``, ...). Entries are lazy ``".module:Class"`` strings relative to this package, so that the
deploy bundle, which copies these modules verbatim, resolves them the same way.

A new input kind is one module with a :class:`ModelInput` subclass, one line in ``INPUT_KINDS``.
"""

from __future__ import annotations

import base64
import binascii
import importlib
from typing import Any

import numpy as np

#: input kind -> ".module:Class" (relative to this package)
INPUT_KINDS = {
    "image": ".image_input:ImageInput",
    "audio": ".audio_input:AudioInput",
    "text": ".text_input:TextInput",
}
#: target -> ".module:Class"
OUTPUT_KINDS = {
    "label": ".outputs:LabelOutput",
    "tags": ".outputs:TagsOutput",
    "boxes": ".boxes_output:BoxesOutput",
    "anomaly": ".anomaly_output:AnomalyOutput",
    "mask": ".mask_output:MaskOutput",
}


class InputError(ValueError):
    """An input (an upload, a file, a JSON value) cannot be used; the message names it and says why."""

    user_error = True


class ModelInput:
    """How one kind of input becomes the graph's input tensor.

    Subclasses set the class attributes and implement :meth:`load` and :meth:`collate`.

    Attributes
    ----------
    kind : the card's ``preprocessing["kind"]``.
    batch_size : items per ``session.run`` (1 where items cannot be stacked).
    json_fields : (one item, a list of items) field names in a JSON request body.
    upload_types : content-type prefixes accepted as a raw request body or a multipart file.
    noun : what one item is called in messages ("image", "text", "clip").
    json_encoding : how a file goes into a JSON body: ``"base64"`` (its bytes) or ``"text"`` (as it is).
    json_example : what a JSON value looks like, for the bundle's README.

    inline : True when a ``str`` source is the item itself (a text), not the path of a file.
    compress_in_batches : True when compression measures the graph on stacked batches
        (``deploy/compress.py``); False: one item at a time (``deploy/compress_clips.py``).
    not_compressible : when set, why compression has nothing to gain for this input (one sentence;
        ``{size_mb}`` is the model's size).
    pictures : True when an item is a picture (video frames can feed it; compression judges a picture
        classifier on every labeled photo).
    """

    kind = ""
    batch_size = 16
    json_fields: tuple[str, str] = ("input", "inputs")
    upload_types: tuple[str, ...] = ()
    noun = "input"
    json_encoding = "base64"
    json_example = "<base64 of the file>"
    inline = False
    compress_in_batches = False
    not_compressible = ""
    pictures = False

    @classmethod
    def check_preprocessing(cls, preprocessing: dict) -> str | None:
        """What is wrong with a card's ``preprocessing`` for this input (None: nothing)."""
        return None

    def __init__(self, card: dict, **options):
        self.card = card
        self.options = options

    def load(self, source) -> Any:
        """One source (a path, bytes, or a JSON value) -> the array for one item (a text input: its string)."""
        raise NotImplementedError

    def collate(self, items: list) -> np.ndarray:
        """Items from :meth:`load` -> one batch for the graph's input."""
        return np.stack(items)

    def example(self):
        """One made-up item for a warm-up prediction at start (None: no warm-up)."""
        return None

    def cost(self, source) -> int:
        """About how many bytes decoding ``source`` holds in memory (the service budgets them)."""
        return len(source) if isinstance(source, (bytes, bytearray, str)) else 0

    def feeds(self, items: list, input_name: str) -> dict:
        """The graph's inputs for a batch of loaded items (one input by default; a model with more,
        e.g. a text model that also takes sentence embeddings or a detector that takes the original
        image sizes, adds them here)."""
        return {input_name: self.collate(items)}

    def from_json_value(self, value, where: str):
        """A JSON value of the request body -> a source for :meth:`load` (base64 by default)."""
        return decode_base64(value, where)

    example_file = "input.bin"

    #: how the browser console (``static/console.js``) takes this input: ``widget`` ("file" or
    #: "text"), ``preview`` of a chosen file ("image" or "clip"), ``accept`` (the file dialog's filter),
    #: ``types``/``suffixes``/``untyped`` (which files it takes) and ``refused`` (said of the others),
    #: ``hint``, ``drop_title``, ``drop_formats``, and ``record`` (whether it can record a clip).
    console: dict = {"widget": "file", "preview": "image", "accept": "*/*", "untyped": True, "record": False}

    def words(self) -> str:
        """What an input is, in a few words, for the console's facts ("224 × 224 px")."""
        return self.noun

    def readme_text(self) -> str:
        """One sentence for the deploy bundle's README: what an input is and how it is prepared."""
        return f"one {self.noun} per item."

    def describe(self) -> dict:
        """What the service's documents and console need to know about this input."""
        return {
            "kind": self.kind,
            "noun": self.noun,
            "words": self.words(),
            "console": self.console,
            "json_fields": list(self.json_fields),
            "upload_types": list(self.upload_types),
        }


def decode_base64(value, where: str) -> bytes:
    """Bytes of a base64 string (a ``data:`` URL works too); InputError naming ``where``."""
    if not isinstance(value, str):
        raise InputError(f"{where} must be a base64 string")
    if value.startswith("data:"):
        value = value.partition(",")[2]
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"{where} is not valid base64") from None
    if not data:
        raise InputError(f"{where} is empty")
    return data


def _resolve(reference: str):
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module, __package__), attribute)


def register_input(kind: str, reference: str) -> None:
    """Add an input kind (``reference``: ``".module:Class"`` or ``"package.module:Class"``)."""
    INPUT_KINDS[kind] = reference


def register_output(target: str, reference: str) -> None:
    """Add an output kind for a target."""
    OUTPUT_KINDS[target] = reference


def input_kind(card: dict) -> str:
    return (card.get("preprocessing") or {}).get("kind", "image")


def output_kind(card: dict) -> str:
    return card.get("target", "label")


def input_class(kind: str) -> type[ModelInput]:
    """The :class:`ModelInput` subclass registered for an input kind (InputError for an unknown one)."""
    if kind not in INPUT_KINDS:
        raise InputError(
            f"this model takes {kind!r} inputs, which this version cannot read "
            f"(it reads: {', '.join(INPUT_KINDS)})"
        )
    return _resolve(INPUT_KINDS[kind])


def input_for(card: dict, **options) -> ModelInput:
    """The input of a model card; ``options`` go to the input class (e.g. ``max_pixels``)."""
    return input_class(input_kind(card))(card, **options)


def output_for(card: dict):
    """The output formatter of a model card."""
    kind = output_kind(card)
    if kind not in OUTPUT_KINDS:
        raise InputError(
            f"this model predicts {kind!r}, which this version cannot read "
            f"(it reads: {', '.join(OUTPUT_KINDS)})"
        )
    return _resolve(OUTPUT_KINDS[kind])(card)


def modules() -> list[str]:
    """File names of the sibling modules that the registered inputs and outputs live in."""
    return sorted(
        {
            ref.partition(":")[0].lstrip(".") + ".py"
            for ref in (*INPUT_KINDS.values(), *OUTPUT_KINDS.values())
            if ref.startswith(".")
        }
    )

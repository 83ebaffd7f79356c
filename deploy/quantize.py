"""Static int8 quantization through ONNX Runtime's own tools, calibrated on preprocessed images."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                      quant_pre_process, quantize_static)

log = logging.getLogger(__name__)

FORMATS = {"qdq": QuantFormat.QDQ, "qop": QuantFormat.QOperator}


class TensorReader(CalibrationDataReader):
    """Feeds already preprocessed (N, 3, S, S) tensors to the calibrator in small batches."""

    def __init__(self, input_name: str, tensors: np.ndarray, batch_size: int = 8):
        self.input_name = input_name
        self.tensors = np.asarray(tensors, np.float32)
        self.batch_size = int(batch_size)
        self._position = 0

    def get_next(self):
        if self._position >= len(self.tensors):
            return None
        batch = self.tensors[self._position:self._position + self.batch_size]
        self._position += self.batch_size
        return {self.input_name: batch}

    def rewind(self):
        self._position = 0


def quantize_model(model: onnx.ModelProto, calibration: np.ndarray, *, input_name: str, fmt: str = "qdq",
                   per_channel: bool = False) -> bytes:
    """Quantize ``model`` statically: uint8 activations, int8 weights; return the serialized graph.

    ``calibration`` holds preprocessed tensors at the model's input size. The graph first goes
    through ONNX Runtime's quantization pre-processing (shape inference, fusions) when that works.
    """
    if len(calibration) == 0:
        raise ValueError("static quantization needs at least one calibration image")
    with tempfile.TemporaryDirectory(prefix="modeldesk-quant-") as tmp:
        source = Path(tmp) / "fp32.onnx"
        prepared = Path(tmp) / "prepared.onnx"
        output = Path(tmp) / "int8.onnx"
        onnx.save(model, source)
        try:
            quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        except Exception as exc:  # pre-processing is an optimisation; quantize the raw graph instead
            log.warning("quantization pre-processing failed (%s); quantizing the graph as is", exc)
            prepared = source
        quantize_static(
            str(prepared), str(output), TensorReader(input_name, calibration),
            quant_format=FORMATS[fmt], per_channel=per_channel,
            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
        )
        return output.read_bytes()

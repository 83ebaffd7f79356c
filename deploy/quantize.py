"""Static int8 quantization through ONNX Runtime's own tools, calibrated on preprocessed images.

The convolutional backbone is quantized (uint8 activations, int8 weights); the classifier head
(``Gemm``/``MatMul``/``Softmax`` on the pooled features) stays in float by default: it costs almost
nothing to run, and quantizing it was measured to wreck accuracy (the head's weights carry the folded
feature standardisation, whose range int8 cannot hold: 0.92 -> 0.60 on sign_digits, against 0.91 with
the head kept in float).
"""

from __future__ import annotations

import functools
import logging
import platform
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quant_pre_process,
    quantize_static,
)

log = logging.getLogger(__name__)

FORMATS = {"qdq": QuantFormat.QDQ, "qop": QuantFormat.QOperator}
HEAD_OPS = {"Gemm", "MatMul", "Softmax"}
# Nodes named under these prefixes stay in float too: a detector's 1x1 head convolution (folded
# feature standardisation, like the classifier heads) and its box decoding.
# The "not sure" signal's nodes (trainers/novelty.py) too: a cosine to reference points, cheap in float.
# And an image classifier's feature pooling: its grid cells are integer arithmetic on the map's size,
# which int8 has nothing to do with (ONNX Runtime's quantizer would warn about it node by node).
# And an anomaly model's patch features and distances to its memory bank: 8 bits cannot hold a small
# difference of two large squared norms.
# And a segmentation graph's neck, per-pixel head, mirror averaging, refinement and tail (the photo's size
# comes through float arithmetic there: 8 bits would make a 72-pixel-high mask 71): its backbone is 8-bit.
FLOAT_PREFIXES = (
    "det/",
    "head/novelty/",
    "feat/",
    "patch/",
    "anomaly/",
    "seg/",
    "seghead/",
    "segflip/",
    "segref/",
    "segtail/",
)
# Share of the convolutions, counted from the input, that "keep first layers float" leaves in float.
FIRST_FLOAT_SHARE = 0.12


@functools.cache
def int8_products_may_saturate() -> bool:
    """True on an x86 processor without VNNI (AVX2 only, e.g. AMD Zen 1-3, Intel before Ice Lake).

    There ONNX Runtime's 8-bit convolutions add pairs of uint8 x int8 products in 16 bits, which
    saturate when the weights use all 8 bits; per-channel weights do. Measured on an AVX2-only AMD
    EPYC, float -> 8-bit -> 7-bit per-channel weights (ONNX Runtime's ``reduce_range``): the tests'
    small segmentation model, mean IoU 0.877 -> 0.801 -> 0.874 (per tensor: 0.885 with 8 bits, 0.798
    with 7); sign_digits' fast classifier (``bench/deploy.py``, 779 photos, head re-fitted), accuracy
    0.920 -> 0.900 -> 0.922.
    """
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686", "x86"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace").split()
        return not {"avx512_vnni", "avx_vnni", "amx_int8"} & set(flags)
    except OSError:  # not Linux: numpy's own CPU detection (it does not report AVX-VNNI)
        try:
            from numpy._core._multiarray_umath import __cpu_features__
        except ImportError:  # numpy 1.x
            from numpy.core._multiarray_umath import __cpu_features__  # type: ignore[no-redef]
        return not __cpu_features__.get("AVX512VNNI", False)


class TensorReader(CalibrationDataReader):
    """Feeds already preprocessed (N, 3, S, S) tensors to the calibrator in small batches.

    ``tensors`` may also be a dict of every input the graph takes (e.g. a detector's image sizes
    beside its images), all with the same number of rows.
    """

    def __init__(self, input_name: str, tensors, batch_size: int = 8):
        self.input_name = input_name
        feeds = tensors if isinstance(tensors, dict) else {input_name: tensors}
        self.feeds = {name: np.asarray(value, np.float32) for name, value in feeds.items()}
        self.tensors = self.feeds[input_name] if input_name in self.feeds else next(iter(self.feeds.values()))
        self.batch_size = int(batch_size)
        self._position = 0

    def get_next(self):
        if self._position >= len(self.tensors):
            return None
        end = self._position + self.batch_size
        batch = {name: value[self._position : end] for name, value in self.feeds.items()}
        self._position = end
        return batch

    def rewind(self):
        self._position = 0


class Quantizer:
    """Quantize one fp32 graph several ways, preparing it and calibrating its activations once.

    Parameters
    ----------
    model : onnx.ModelProto
        The fp32 graph at the input size the calibration tensors have.
    calibration : ndarray or dict
        Preprocessed (N, 3, S, S) calibration tensors (or every input's, see :class:`TensorReader`).
    input_name : str
        The graph's image input.
    keep_head_float : bool
        Leave ``Gemm``/``MatMul``/``Softmax`` nodes in float.
    tmp_dir : path-like, optional
        Where its scratch folder goes (the app passes the workspace's ``tmp/``, which it cleans on
        start, so a killed compression leaves nothing in the system's temp folder); default: system temp.
    batch_size : int
        Calibration images per run. The ranges do not depend on it (minimum and maximum over every
        image); the memory does: a run holds every activation of its batch.

    Use as a context manager (or call :meth:`close`) to remove its temporary files.
    """

    def __init__(
        self,
        model: onnx.ModelProto,
        calibration,
        *,
        input_name: str,
        keep_head_float: bool = True,
        tmp_dir=None,
        batch_size: int = 8,
    ):
        if len(calibration if not isinstance(calibration, dict) else calibration[input_name]) == 0:
            raise ValueError("static quantization needs at least one calibration image")
        self.model = model
        self.calibration = calibration
        self.input_name = input_name
        self.keep_head_float = keep_head_float
        self.batch_size = int(batch_size)
        if tmp_dir is not None:
            Path(tmp_dir).mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix="modeldesk-quant-", dir=tmp_dir))
        self._prepared: Path | None = None
        self._excluded: list[str] = []

    def _prepare(self) -> Path:
        if self._prepared is None:
            source = self._tmp / "fp32.onnx"
            onnx.save(self.model, source)
            prepared = self._tmp / "prepared.onnx"
            try:
                quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
            except Exception as exc:  # pre-processing is an optimisation; quantize the raw graph instead
                log.warning("quantization pre-processing failed (%s); quantizing the graph as is", exc)
                prepared = source
            if self.keep_head_float:
                model = onnx.load(str(prepared))
                used = {n.name for n in model.graph.node}
                for index, node in enumerate(model.graph.node):
                    if not node.name:  # exclusion works by node name
                        node.name = f"{node.op_type.lower()}_{index}"
                        while node.name in used:
                            node.name += "_"
                        used.add(node.name)
                self._excluded = [
                    n.name
                    for n in model.graph.node
                    if n.op_type in HEAD_OPS or n.name.startswith(FLOAT_PREFIXES)
                ]
                prepared = self._tmp / "named.onnx"
                onnx.save(model, prepared)
            self._prepared = prepared
        return self._prepared

    def first_layers(self) -> list[str]:
        """Names of the nodes up to and including the first ``FIRST_FLOAT_SHARE`` of the convolutions.

        The first, high-resolution layers see the raw image and hold few weights; keeping them in
        float is the classic mixed-precision fix when full int8 loses accuracy (measured on
        sign_digits with EfficientNet-Lite0: 0.895 -> 0.911, fp32 0.911, still 1.9x faster than fp32).
        """
        graph = onnx.load(str(self._prepare()), load_external_data=False).graph
        convs = [i for i, n in enumerate(graph.node) if n.op_type == "Conv"]
        if not convs:
            return []
        count = max(1, round(FIRST_FLOAT_SHARE * len(convs)))
        return [n.name for n in graph.node[: convs[count - 1] + 1]]

    def quantize(self, fmt: str = "qdq", per_channel: bool = False, keep_first: bool = False) -> bytes:
        """The serialized graph quantized as ``fmt`` (``qdq`` or ``qop``), per channel or per tensor,
        optionally with its first layers kept in float (see :meth:`first_layers`). Per-channel
        weights get 7 bits where 8 would saturate (:func:`int8_products_may_saturate`)."""
        prepared = self._prepare()
        excluded = self._excluded + (self.first_layers() if keep_first else [])
        output = self._tmp / f"int8-{fmt}-{int(per_channel)}-{int(keep_first)}.onnx"
        quantize_static(
            str(prepared),
            str(output),
            TensorReader(self.input_name, self.calibration, self.batch_size),
            quant_format=FORMATS[fmt],
            per_channel=per_channel,
            reduce_range=per_channel and int8_products_may_saturate(),
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            nodes_to_exclude=excluded or None,
            calibration_cache_path=str(self._tmp / "calibration.json"),
            extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
        )
        data = output.read_bytes()
        output.unlink()
        return data

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def quantize_model(
    model: onnx.ModelProto,
    calibration: np.ndarray,
    *,
    input_name: str,
    fmt: str = "qdq",
    per_channel: bool = False,
    keep_head_float: bool = True,
    tmp_dir=None,
) -> bytes:
    """Quantize ``model`` once (see :class:`Quantizer`); return the serialized graph."""
    with Quantizer(
        model, calibration, input_name=input_name, keep_head_float=keep_head_float, tmp_dir=tmp_dir
    ) as quantizer:
        return quantizer.quantize(fmt, per_channel)

"""The one place that creates ONNX Runtime inference sessions.

Every session gets explicit SessionOptions and a provider list that always ends with the CPU
provider, so a missing GPU library degrades to the CPU instead of silently doing nothing.
"""

from __future__ import annotations

import logging
import os

import onnxruntime as ort

log = logging.getLogger(__name__)

try:
    from modeldesk.devices import PROVIDER_PREFERENCE, providers_of
except ImportError:  # inside a deploy bundle, which ships the one device table beside this module
    from .devices import PROVIDER_PREFERENCE, providers_of


def providers_for(device: str = "auto") -> list[str]:
    """Provider list for a device name (``auto``, ``cpu``, ``cuda``, ``cuda:1``...), CPU last."""
    available = set(ort.get_available_providers())
    base = device.split(":", 1)[0].lower()
    if base == "auto":
        wanted = [p for p in PROVIDER_PREFERENCE if p in available and p != "TensorrtExecutionProvider"]
    else:
        wanted = [p for p in providers_of(device) if p in available]
    if "CPUExecutionProvider" not in wanted:
        wanted.append("CPUExecutionProvider")
    return wanted


def create_session(model, *, device: str = "auto", threads: int | None = None,
                   providers: list | None = None, spin: bool = True) -> ort.InferenceSession:
    """Create an inference session for ``model`` (a path or serialized bytes).

    ``threads`` caps intra-op threads (None lets ONNX Runtime use every core); ``providers``
    overrides the list derived from ``device`` and gets the CPU provider appended if missing.
    ``spin=False`` stops idle intra-op threads from busy-waiting, which leaves the cores to other
    work running beside inference (image decoding in the feature pipeline).
    """
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    chosen = list(providers) if providers else providers_for(device)
    names = [p[0] if isinstance(p, tuple) else p for p in chosen]
    if "CPUExecutionProvider" not in names:
        chosen.append("CPUExecutionProvider")
    if device.startswith("cuda:") and not providers:
        index = int(device.split(":", 1)[1])
        chosen = [("CUDAExecutionProvider", {"device_id": index}) if p == "CUDAExecutionProvider" else p
                  for p in chosen]
    source = os.fspath(model) if isinstance(model, os.PathLike) else model
    session = ort.InferenceSession(source, sess_options=options, providers=chosen)
    used = session.get_providers()
    if names[0] != "CPUExecutionProvider" and used[0] == "CPUExecutionProvider":
        log.warning("asked for %s but ONNX Runtime fell back to the CPU", names[0])
    return session

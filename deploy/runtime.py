"""The one place that creates ONNX Runtime inference sessions.

Every session gets explicit SessionOptions and a provider list that always ends with the CPU
provider, so a missing GPU library degrades to the CPU instead of silently doing nothing.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import onnxruntime as ort

log = logging.getLogger(__name__)

try:
    from modeldesk.devices import PROVIDER_PREFERENCE, providers_of
except ImportError:  # inside a deploy bundle, which ships the one device table beside this module
    from .devices import PROVIDER_PREFERENCE, providers_of  # type: ignore[no-redef]


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


def create_session(
    model,
    *,
    device: str = "auto",
    threads: int | None = None,
    providers: list | None = None,
    spin: bool = True,
) -> ort.InferenceSession:
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
        chosen = [
            ("CUDAExecutionProvider", {"device_id": index}) if p == "CUDAExecutionProvider" else p
            for p in chosen
        ]
    source = os.fspath(model) if isinstance(model, os.PathLike) else model
    session = ort.InferenceSession(source, sess_options=options, providers=chosen)
    used = session.get_providers()
    if names[0] != "CPUExecutionProvider" and used[0] == "CPUExecutionProvider":
        log.warning("asked for %s but ONNX Runtime fell back to the CPU", names[0])
    return session


# How a model's graph is run on the CPU, a dimension compression measures (the card's ``runtime``):
# ``onnxruntime``: one session whose threads split each operator's work;
# ``onnxruntime-split``: a batch cut into one slice per thread, each run whole by a one-thread session
# at the same time. Small int8 graphs have little work per operator, so threads that meet after every
# operator of every image wait more than they compute; slices meet once per batch.
RUNTIMES = ("onnxruntime", "onnxruntime-split")
MAX_SLICES = 8


class SplitBatchSession:
    """An ``InferenceSession`` look-alike that runs a batch as ``threads`` slices at once.

    Each slice goes to its own one-thread CPU session (ONNX Runtime releases the GIL while it runs);
    a single item goes to one session with ``threads`` intra-op threads instead, so a single request
    is never slower than with a plain session. Every output must be batch-first
    (the slices' outputs are concatenated along axis 0). Safe to call from several threads at once.
    """

    def __init__(self, model, *, threads: int, spin: bool = True):
        from concurrent.futures import ThreadPoolExecutor

        self.threads = max(1, int(threads))
        source = model.SerializeToString() if hasattr(model, "SerializeToString") else model
        self.whole = create_session(source, device="cpu", threads=self.threads, spin=spin)
        # each slice holds its own copy of the weights and memory arena: a many-core machine gets at most
        # MAX_SLICES (the batches the service gathers are a few dozen images)
        count = min(self.threads, MAX_SLICES)
        self.slices = [create_session(source, device="cpu", threads=1, spin=spin) for _ in range(count)]
        self._pool = (
            ThreadPoolExecutor(count - 1, thread_name_prefix="modeldesk-slice") if count > 1 else None
        )

    def run(self, output_names, feeds: dict, run_options=None):
        rows = len(next(iter(feeds.values()))) if feeds else 0
        if self._pool is None or rows < 2:
            return self.whole.run(output_names, feeds, run_options)
        count = min(len(self.slices), rows)
        bounds = [rows * i // count for i in range(count + 1)]
        parts = [
            {name: value[bounds[i] : bounds[i + 1]] for name, value in feeds.items()} for i in range(count)
        ]
        futures = [
            self._pool.submit(self.slices[i].run, output_names, parts[i], run_options)
            for i in range(1, count)
        ]
        first = self.slices[0].run(output_names, parts[0], run_options)
        results = [first] + [future.result() for future in futures]
        return [np.concatenate([r[k] for r in results], axis=0) for k in range(len(first))]

    def get_inputs(self):
        return self.whole.get_inputs()

    def get_outputs(self):
        return self.whole.get_outputs()

    def get_providers(self):
        return self.whole.get_providers()

    def close(self) -> None:
        """Let the slice threads go (they also go when the session is garbage collected)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)


def create_runtime_session(
    model, runtime: str | None = None, *, device: str = "auto", threads: int | None = None
):
    """A session for ``model`` run the way ``runtime`` (one of :data:`RUNTIMES`) says.

    ``onnxruntime-split`` applies on the CPU only, with ``threads`` (default: every core) above one,
    to graphs whose inputs and outputs are all batch-first (:func:`batch_first`); otherwise, and for
    ``None`` or ``onnxruntime``, this is :func:`create_session`.
    """
    runtime = runtime or "onnxruntime"
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}; choose from {', '.join(RUNTIMES)}")
    count = int(threads or os.cpu_count() or 1)
    if runtime == "onnxruntime-split" and count > 1 and providers_for(device) == ["CPUExecutionProvider"]:
        split = SplitBatchSession(model, threads=count)
        if batch_first(split.whole):
            return split
        split.close()
    return create_session(model, device=device, threads=threads)


def batch_first(session) -> bool:
    """Whether every input and output of ``session`` has the same symbolic first dimension (the batch),
    so that a batch can be cut into slices and their outputs put back together (a detector's list of
    boxes of the whole batch cannot)."""
    shapes = [arg.shape for arg in list(session.get_inputs()) + list(session.get_outputs())]
    first = {shape[0] if shape else None for shape in shapes}
    return len(first) == 1 and isinstance(next(iter(first)), str)

"""Which ONNX Runtime execution providers really work here.

Being listed by ``onnxruntime.get_available_providers()`` only means the build knows the provider;
the CUDA provider, for one, is listed by ``onnxruntime-gpu`` even when CUDA or cuDNN is missing, and
ONNX Runtime then quietly runs on the CPU. So each provider is tried on a tiny Add model: it works
when a session can be created with it, the session really uses it, and the output is right.

Accelerator providers are tried in a child process by default, so a driver that crashes the
process while loading cannot take the caller down.

Run ``python -m modeldesk.scheduler.providers`` to print the result as JSON.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys

log = logging.getLogger(__name__)

# The compute providers the app can use, best first.
KNOWN_PROVIDERS = (
    "TensorrtExecutionProvider",
    "CUDAExecutionProvider",
    "ROCMExecutionProvider",
    "DmlExecutionProvider",
    "CoreMLExecutionProvider",
    "OpenVINOExecutionProvider",
    "CPUExecutionProvider",
)
# Listed by some builds but not a local compute device.
NOT_COMPUTE = {"AzureExecutionProvider": "remote endpoint provider, not a local device"}
PROBE_TIMEOUT_S = 180.0


def tiny_add_model() -> bytes:
    """Serialized ONNX model computing ``y = a + b`` on float32 [1, 4] tensors."""
    from onnx import TensorProto, helper

    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "provider_probe", [a, b], [y])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="modeldesk-scheduler"
    )
    model.ir_version = 8  # readable by every ONNX Runtime from 1.10 on
    return model.SerializeToString()


def try_provider(name: str, model: bytes | None = None) -> tuple[bool, str]:
    """Create a session on provider ``name`` and run the Add model; returns (working, reason).

    Never raises: every failure becomes ``(False, reason)``.
    """
    try:
        import numpy as np
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = 1
        chosen = [name] if name == "CPUExecutionProvider" else [name, "CPUExecutionProvider"]
        session = ort.InferenceSession(model or tiny_add_model(), sess_options=options, providers=chosen)
        used = session.get_providers()
        if name not in used:
            return False, f"session fell back to {', '.join(used) or 'nothing'}"
        a = np.arange(4, dtype=np.float32).reshape(1, 4)
        (out,) = session.run(None, {"a": a, "b": a})
        if not np.allclose(out, a * 2):
            return False, "wrong result from a test Add"
        return True, "ok"
    except Exception as exc:  # noqa: BLE001 - a provider may raise anything while loading
        return False, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def _listed() -> list[str]:
    import onnxruntime as ort

    return list(ort.get_available_providers())


def _probe_in_child(names: list[str]) -> dict:
    """Try ``names`` in a child Python; returns name -> [working, reason]."""
    command = [sys.executable, "-m", "modeldesk.scheduler.providers", "--only", *names]
    result = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [
            f"exit code {result.returncode}"
        ]
        raise RuntimeError(f"provider check process failed: {tail[0]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_providers(isolate: bool | None = None) -> tuple[dict, dict]:
    """Which execution providers work; never raises.

    Parameters
    ----------
    isolate : bool or None
        Try accelerator providers in a child process (None: yes, unless running frozen).

    Returns
    -------
    providers : dict
        name -> bool, for every known compute provider and any other listed one.
    notes : dict
        name -> reason ("ok", "not in this onnxruntime build", the error, ...).
    """
    try:
        listed = _listed()
    except Exception as exc:  # noqa: BLE001 - reported below
        reason = f"onnxruntime unusable: {type(exc).__name__}: {exc}"
        return ({name: False for name in KNOWN_PROVIDERS}, {name: reason for name in KNOWN_PROVIDERS})
    if isolate is None:
        isolate = not getattr(sys, "frozen", False)
    names = list(KNOWN_PROVIDERS) + [n for n in listed if n not in KNOWN_PROVIDERS and n not in NOT_COMPUTE]
    working, notes = {}, {}
    for name in names:
        if name not in listed:
            working[name], notes[name] = False, "not in this onnxruntime build"
    accelerators = [n for n in names if n in listed and n != "CPUExecutionProvider"]
    if accelerators and isolate:
        try:
            for name, (ok, reason) in _probe_in_child(accelerators).items():
                working[name], notes[name] = bool(ok), str(reason)
        except Exception as exc:  # noqa: BLE001 - a crash in the child is the answer
            for name in accelerators:
                working[name], notes[name] = False, f"check crashed or timed out: {exc}"
    else:
        for name in accelerators:
            working[name], notes[name] = try_provider(name)
    if "CPUExecutionProvider" in listed:
        working["CPUExecutionProvider"], notes["CPUExecutionProvider"] = try_provider("CPUExecutionProvider")
    for name, reason in NOT_COMPUTE.items():
        if name in listed:
            notes[name] = f"listed, ignored: {reason}"
    return {name: working[name] for name in names}, notes


def main(argv: list[str] | None = None) -> int:
    """Print ``{name: [working, reason]}`` as one JSON line."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="provider names to try (default: every listed one)")
    args = parser.parse_args(argv)
    names = args.only if args.only else _listed()
    print(json.dumps({name: list(try_provider(name)) for name in names}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

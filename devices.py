"""The one table of compute devices: the names users and scripts give (``--device``), the ONNX
Runtime execution providers each one runs on, and the words the app shows for it.

The scheduler (planning), deploy (creating sessions) and the app's "Run on" choices all read this
table, so a device the UI offers is one the planner and the runtime accept. Plain data, no imports:
the deploy bundle ships a copy of this file beside its runtime.
"""

from __future__ import annotations

#: device name -> (execution provider, words for people), best first.
DEVICES = {
    "tensorrt": ("TensorrtExecutionProvider", "NVIDIA GPU (TensorRT)"),
    "cuda": ("CUDAExecutionProvider", "NVIDIA GPU (CUDA)"),
    "rocm": ("ROCMExecutionProvider", "AMD GPU (ROCm)"),
    "directml": ("DmlExecutionProvider", "GPU (DirectML)"),
    "coreml": ("CoreMLExecutionProvider", "Apple Neural Engine / GPU (Core ML)"),
    "openvino": ("OpenVINOExecutionProvider", "Intel OpenVINO"),
    "cpu": ("CPUExecutionProvider", "Processor (CPU) only"),
}

#: device name -> its execution provider
DEVICE_PROVIDER = {name: provider for name, (provider, _) in DEVICES.items()}

#: Providers in the order "auto" prefers them (TensorRT only when asked for: it compiles slowly).
PROVIDER_PREFERENCE = tuple(provider for provider, _ in DEVICES.values())


def device_names() -> list[str]:
    """Every name ``--device`` accepts besides ``auto`` (and ``NAME:INDEX`` forms)."""
    return list(DEVICES)


def providers_of(device: str) -> list[str]:
    """The provider list for a device name, CPU last (TensorRT falls back to CUDA, then the CPU)."""
    base = device.split(":", 1)[0].lower()
    if base not in DEVICES:
        raise ValueError(f"unknown device {device!r}; use auto or one of: {', '.join(DEVICES)}")
    chain = [DEVICE_PROVIDER[base]]
    if base == "tensorrt":
        chain.append(DEVICE_PROVIDER["cuda"])
    if base != "cpu":
        chain.append(DEVICE_PROVIDER["cpu"])
    return chain

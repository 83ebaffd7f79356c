"""NVIDIA GPUs through NVML (the ``nvidia-ml-py`` package, imported as ``pynvml``)."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _why_no_nvml(exc: Exception, pynvml) -> str:
    """Turn an NVML initialisation error into a sentence for the user."""
    not_found = getattr(pynvml, "NVMLError_LibraryNotFound", ())
    not_loaded = getattr(pynvml, "NVMLError_DriverNotLoaded", ())
    if not_found and isinstance(exc, not_found):
        return "NVIDIA driver not found"
    if not_loaded and isinstance(exc, not_loaded):
        return "NVIDIA driver not loaded"
    return f"NVIDIA driver not usable: {exc}"


def _one_gpu(pynvml, index: int) -> dict:
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    gpu = {
        "index": index,
        "device": f"cuda:{index}",
        "vendor": "NVIDIA",
        "name": _text(pynvml.nvmlDeviceGetName(handle)),
        "memory_total_bytes": int(memory.total),
        "memory_free_bytes": int(memory.free),
        "utilization_percent": None,
    }
    try:
        gpu["utilization_percent"] = int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    except pynvml.NVMLError as exc:  # not supported on some boards (e.g. MIG slices)
        gpu["utilization_note"] = str(exc)
    return gpu


def nvidia_gpus() -> tuple[list, str, dict]:
    """List NVIDIA GPUs; never raises.

    Returns
    -------
    gpus : list of dict
        ``index``, ``device`` ("cuda:N"), ``name``, ``memory_total_bytes``, ``memory_free_bytes``,
        ``utilization_percent``.
    note : str
        Empty when GPUs were found, else why not ("no GPU found", "no GPU found (NVIDIA driver not found)", ...).
    driver : dict
        ``driver_version`` and ``cuda_driver_version`` when NVML answered.
    """
    try:
        import pynvml
    except ImportError:
        return [], "no GPU found (nvidia-ml-py is not installed, NVIDIA GPUs cannot be listed)", {}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - every NVML failure means "no usable driver"
        return [], f"no GPU found ({_why_no_nvml(exc, pynvml)})", {}
    try:
        driver = {}
        try:
            driver["driver_version"] = _text(pynvml.nvmlSystemGetDriverVersion())
            cuda = int(pynvml.nvmlSystemGetCudaDriverVersion())
            driver["cuda_driver_version"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
        except pynvml.NVMLError as exc:
            log.info("NVML driver version unavailable: %s", exc)
        gpus = [_one_gpu(pynvml, index) for index in range(pynvml.nvmlDeviceGetCount())]
        return gpus, ("" if gpus else "no GPU found"), driver
    except Exception as exc:  # noqa: BLE001 - reported, detection goes on
        log.warning("NVML query failed: %s", exc)
        return [], f"NVIDIA GPU query failed: {exc}", {}
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception as exc:  # noqa: BLE001
            log.debug("nvmlShutdown: %s", exc)

"""The resource view: CPU, memory, disk, GPUs and working ONNX Runtime execution providers."""

from __future__ import annotations

import logging
import os
import platform
import shutil
from pathlib import Path

from modeldesk.scheduler.cpu import cpu_info
from modeldesk.scheduler.gpus import nvidia_gpus
from modeldesk.scheduler.providers import check_providers

log = logging.getLogger(__name__)


def _memory() -> dict:
    import psutil

    memory = psutil.virtual_memory()
    return {"total_bytes": int(memory.total), "available_bytes": int(memory.available)}


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (a workspace may not be created yet)."""
    path = path.expanduser().absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _disk(workspace) -> dict:
    path = _existing(Path(workspace) if workspace is not None else Path.home())
    usage = shutil.disk_usage(path)
    return {"path": str(path), "free_bytes": int(usage.free), "total_bytes": int(usage.total)}


def _section(name: str, fn, fallback, errors: dict):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - detection never raises; the reason is reported
        log.warning("resource detection: %s failed: %s", name, exc)
        errors[name] = f"{type(exc).__name__}: {exc}"
        return fallback


def detect_resources(
    workspace=None, *, check_gpus: bool = True, isolate_providers: bool | None = None
) -> dict:
    """Describe the compute resources of this machine; never raises.

    Parameters
    ----------
    workspace : path-like, optional
        Folder whose disk's free space is reported (default: the home folder).
    check_gpus : bool
        Ask NVML about NVIDIA GPUs.
    isolate_providers : bool or None
        Try accelerator execution providers in a child process (see
        :func:`modeldesk.scheduler.providers.check_providers`).

    Returns
    -------
    dict
        JSON-ready: ``cpu`` (``model``, ``physical_cores``, ``logical_cores``, ``usable_cores``,
        ``isa``, ...), ``memory`` (``total_bytes``, ``available_bytes``), ``disk`` (``free_bytes``,
        ``total_bytes``, ``path``), ``gpus`` (list), ``gpu_note`` ("" or why there is none),
        ``providers`` (name -> bool), ``provider_notes`` (name -> reason), ``platform``, ``errors``
        (section -> message for any part that could not be read).
    """
    errors: dict = {}
    cores = os.cpu_count() or 1
    cpu = _section(
        "cpu",
        cpu_info,
        {
            "model": "unknown",
            "arch": platform.machine(),
            "physical_cores": cores,
            "logical_cores": cores,
            "usable_cores": cores,
            "isa": [],
            "note": "",
        },
        errors,
    )
    memory = _section("memory", _memory, {"total_bytes": 0, "available_bytes": 0}, errors)
    disk = _section(
        "disk",
        lambda: _disk(workspace),
        {"path": str(workspace or ""), "free_bytes": 0, "total_bytes": 0},
        errors,
    )
    if check_gpus:
        gpus, gpu_note, driver = _section("gpus", nvidia_gpus, ([], "GPU detection failed", {}), errors)
    else:
        gpus, gpu_note, driver = [], "GPU detection skipped", {}
    providers, notes = _section("providers", lambda: check_providers(isolate_providers), ({}, {}), errors)
    return {
        "cpu": cpu,
        "memory": memory,
        "disk": disk,
        "gpus": gpus,
        "gpu_note": gpu_note,
        "gpu_driver": driver,
        "providers": providers,
        "provider_notes": notes,
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "python": platform.python_version(),
        },
        "errors": errors,
    }


def _gib(value) -> str:
    return f"{(value or 0) / 2**30:.1f} GiB"


def format_resources(resources: dict) -> str:
    """Human-readable text for a :func:`detect_resources` result."""
    cpu = resources.get("cpu", {})
    memory = resources.get("memory", {})
    disk = resources.get("disk", {})
    lines = [
        f"CPU:       {cpu.get('model', 'unknown')} ({cpu.get('arch', '')})",
        f"Cores:     {cpu.get('physical_cores', '?')} physical, {cpu.get('logical_cores', '?')} logical"
        + (
            f", {cpu['usable_cores']} usable"
            if cpu.get("usable_cores") not in (None, cpu.get("logical_cores"))
            else ""
        ),
        f"ISA:       {', '.join(cpu.get('isa') or []) or 'none of note'}",
        f"Memory:    {_gib(memory.get('available_bytes'))} free of {_gib(memory.get('total_bytes'))}",
        f"Disk:      {_gib(disk.get('free_bytes'))} free at {disk.get('path', '?')}",
    ]
    gpus = resources.get("gpus") or []
    if gpus:
        for gpu in gpus:
            util = gpu.get("utilization_percent")
            lines.append(
                f"GPU {gpu['index']}:     {gpu['name']}, {_gib(gpu.get('memory_free_bytes'))} free of "
                f"{_gib(gpu.get('memory_total_bytes'))}" + (f", {util}% busy" if util is not None else "")
            )
    else:
        lines.append(f"GPU:       {resources.get('gpu_note') or 'no GPU found'}")
    lines.append("Providers:")
    notes = resources.get("provider_notes", {})
    for name, working in (resources.get("providers") or {}).items():
        mark = "yes" if working else "no "
        reason = "" if working else f"  ({notes.get(name, '')})"
        lines.append(f"  {mark} {name}{reason}")
    for section, message in (resources.get("errors") or {}).items():
        lines.append(f"Could not read {section}: {message}")
    return "\n".join(lines)

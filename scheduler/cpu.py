"""What the CPU is: model name, core counts and the instruction sets that matter for inference."""

from __future__ import annotations

import logging
import os
import platform
import subprocess
import sys

log = logging.getLogger(__name__)

# Instruction-set flags worth reporting, in the spelling Linux uses in /proc/cpuinfo.
ISA_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "neon",
    "asimd",
    "asimddp",
    "sve",
    "i8mm",
    "bf16",
)

# macOS sysctl feature names -> the Linux spelling above.
_MACOS_FLAGS = {
    "SSE4.2": "sse4_2",
    "AVX1.0": "avx",
    "AVX2": "avx2",
    "FMA": "fma",
    "F16C": "f16c",
    "AVX512F": "avx512f",
    "AVX512BW": "avx512bw",
    "AVX512VL": "avx512vl",
    "AVX512VNNI": "avx512_vnni",
    "hw.optional.neon": "neon",
    "hw.optional.arm.FEAT_DotProd": "asimddp",
    "hw.optional.arm.FEAT_I8MM": "i8mm",
    "hw.optional.arm.FEAT_BF16": "bf16",
}

# Windows IsProcessorFeaturePresent constants.
_WINDOWS_FEATURES = {39: "avx", 40: "avx2", 41: "avx512f", 36: "sse4_2", 19: "neon", 43: "asimddp"}


def usable_cores() -> int:
    """Logical cores this process may run on (CPU affinity / container limits when known)."""
    count = os.cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        count = min(count, len(os.sched_getaffinity(0)))
    quota = _cgroup_cpu_quota()
    if quota:
        count = max(1, min(count, int(quota + 0.999)))
    return count


def _cgroup_cpu_quota() -> float | None:
    """CPUs allowed by a cgroup v2 ``cpu.max`` quota, or None when unlimited or unknown."""
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as handle:
            quota, period = handle.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return int(quota) / int(period)


def _linux_cpu() -> tuple[str, set]:
    model, flags = "", set[str]()
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            if key in ("model name", "hardware", "cpu model") and not model:
                model = value.strip()
            elif key in ("flags", "features") and not flags:
                flags = set(value.split())
    return model, flags


def _sysctl(name: str) -> str:
    result = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5, check=False)
    return result.stdout.strip() if result.returncode == 0 else ""


def _macos_cpu() -> tuple[str, set]:
    model = _sysctl("machdep.cpu.brand_string")
    flags = set()
    words = (_sysctl("machdep.cpu.features") + " " + _sysctl("machdep.cpu.leaf7_features")).split()
    for word in words:
        if word in _MACOS_FLAGS:
            flags.add(_MACOS_FLAGS[word])
    for name, flag in _MACOS_FLAGS.items():
        if name.startswith("hw.optional") and _sysctl(name) == "1":
            flags.add(flag)
    return model, flags


def _windows_cpu() -> tuple[str, set]:
    import ctypes

    model = platform.processor()
    flags = set()
    present = ctypes.windll.kernel32.IsProcessorFeaturePresent  # type: ignore[attr-defined]
    for code, flag in _WINDOWS_FEATURES.items():
        if present(code):
            flags.add(flag)
    return model, flags


def cpu_info() -> dict:
    """Describe the CPU; never raises (unknown fields are empty and ``note`` says why).

    Returns
    -------
    dict
        ``model``, ``arch``, ``physical_cores``, ``logical_cores``, ``usable_cores``, ``isa`` (the
        flags of :data:`ISA_FLAGS` present), ``note``.
    """
    import psutil

    logical = psutil.cpu_count(logical=True) or os.cpu_count() or 1
    physical = psutil.cpu_count(logical=False) or logical
    info = {
        "model": "",
        "arch": platform.machine(),
        "physical_cores": int(physical),
        "logical_cores": int(logical),
        "usable_cores": usable_cores(),
        "isa": [],
        "note": "",
    }
    try:
        if sys.platform.startswith("linux"):
            model, flags = _linux_cpu()
        elif sys.platform == "darwin":
            model, flags = _macos_cpu()
        elif sys.platform == "win32":
            model, flags = _windows_cpu()
        else:
            model, flags = platform.processor(), set()
    except Exception as exc:  # noqa: BLE001 - detection must not fail; the reason is reported
        log.warning("could not read CPU details: %s", exc)
        model, flags = platform.processor(), set()
        info["note"] = f"CPU details unavailable: {exc}"
    info["model"] = model or platform.processor() or "unknown"
    info["isa"] = [flag for flag in ISA_FLAGS if flag in flags]
    return info

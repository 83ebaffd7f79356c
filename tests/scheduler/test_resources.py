"""The resource view never raises and reports what this machine has."""

import json
import os

import psutil
import pytest

from modeldesk.scheduler import cpu as cpu_module
from modeldesk.scheduler import detect_resources, format_resources
from modeldesk.scheduler import gpus as gpus_module
from modeldesk.scheduler import providers as providers_module


def test_detect_resources_reports_this_machine(tmp_path):
    found = detect_resources(tmp_path / "not-yet-created")
    json.dumps(found)
    assert found["cpu"]["logical_cores"] == psutil.cpu_count()
    assert found["cpu"]["usable_cores"] <= (os.cpu_count() or 1)
    assert found["memory"]["total_bytes"] == psutil.virtual_memory().total
    assert 0 < found["memory"]["available_bytes"] <= found["memory"]["total_bytes"]
    assert found["disk"]["path"] == str(tmp_path)  # nearest existing folder
    assert found["disk"]["free_bytes"] > 0
    assert found["providers"]["CPUExecutionProvider"] is True
    assert all(isinstance(v, bool) for v in found["providers"].values())
    assert set(found["providers"]) <= set(found["provider_notes"])
    if not found["gpus"]:
        assert found["gpu_note"].startswith("no GPU found")
    assert found["errors"] == {}


def test_isa_flags_come_from_proc_cpuinfo(monkeypatch):
    monkeypatch.setattr(cpu_module, "_linux_cpu", lambda: ("Test CPU", {"avx2", "fma", "amx_int8", "sse2"}))
    monkeypatch.setattr(cpu_module.sys, "platform", "linux")
    info = cpu_module.cpu_info()
    assert info["model"] == "Test CPU"
    assert info["isa"] == ["avx2", "fma", "amx_int8"]


def _broken_session(*args, **kwargs):
    raise RuntimeError("CUDA failure 35: driver too old")


def test_detect_never_raises_when_providers_fail(monkeypatch):
    import onnxruntime as ort

    listed = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(ort, "get_available_providers", lambda: listed)
    monkeypatch.setattr(ort, "InferenceSession", _broken_session)
    found = detect_resources(isolate_providers=False)
    assert found["providers"]["CUDAExecutionProvider"] is False
    assert found["providers"]["CPUExecutionProvider"] is False
    assert "driver too old" in found["provider_notes"]["CUDAExecutionProvider"]
    assert found["provider_notes"]["DmlExecutionProvider"] == "not in this onnxruntime build"
    assert "CUDAExecutionProvider" in format_resources(found)


def test_listed_provider_that_falls_back_to_cpu_is_not_working(monkeypatch):
    import onnxruntime as ort

    real = ort.InferenceSession

    class FallsBack(real):
        def __init__(self, model, sess_options=None, providers=None):
            super().__init__(model, sess_options=sess_options, providers=["CPUExecutionProvider"])

    monkeypatch.setattr(
        ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    monkeypatch.setattr(ort, "InferenceSession", FallsBack)
    working, notes = providers_module.check_providers(isolate=False)
    assert working["CUDAExecutionProvider"] is False
    assert "fell back" in notes["CUDAExecutionProvider"]
    assert working["CPUExecutionProvider"] is True


def test_a_crashing_provider_check_process_is_reported(monkeypatch):
    import onnxruntime as ort

    def crashed(names):
        raise RuntimeError("provider check process failed: Segmentation fault")

    monkeypatch.setattr(
        ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    monkeypatch.setattr(providers_module, "_probe_in_child", crashed)
    working, notes = providers_module.check_providers(isolate=True)
    assert working["CUDAExecutionProvider"] is False
    assert "Segmentation fault" in notes["CUDAExecutionProvider"]
    assert working["CPUExecutionProvider"] is True


def test_provider_check_in_a_child_process():
    assert providers_module._probe_in_child(["CPUExecutionProvider"]) == {
        "CPUExecutionProvider": [True, "ok"]
    }


def test_every_section_failing_still_gives_a_report(monkeypatch):
    def boom(*args, **kwargs):
        raise OSError("unreadable")

    monkeypatch.setattr("modeldesk.scheduler.resources.cpu_info", boom)
    monkeypatch.setattr("modeldesk.scheduler.resources._memory", boom)
    monkeypatch.setattr("modeldesk.scheduler.resources.nvidia_gpus", boom)
    monkeypatch.setattr("modeldesk.scheduler.resources.check_providers", boom)
    found = detect_resources()
    assert set(found["errors"]) == {"cpu", "memory", "gpus", "providers"}
    assert found["cpu"]["logical_cores"] >= 1
    assert found["gpus"] == []
    assert "Could not read memory" in format_resources(found)


def test_no_nvidia_driver_gives_a_plain_note(monkeypatch):
    pynvml = pytest.importorskip("pynvml")

    def missing():
        raise pynvml.NVMLError_LibraryNotFound()

    monkeypatch.setattr(pynvml, "nvmlInit", missing)
    gpus, note, driver = gpus_module.nvidia_gpus()
    assert gpus == [] and driver == {}
    assert note == "no GPU found (NVIDIA driver not found)"


def test_nvidia_gpus_are_listed_through_nvml(monkeypatch):
    pynvml = pytest.importorskip("pynvml")

    class Memory:
        total, free = 16 * 2**30, 12 * 2**30

    class Rates:
        gpu = 7

    fake = {
        "nvmlInit": lambda: None,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: 2,
        "nvmlDeviceGetHandleByIndex": lambda i: i,
        "nvmlDeviceGetMemoryInfo": lambda h: Memory,
        "nvmlDeviceGetName": lambda h: b"Fake RTX",
        "nvmlDeviceGetUtilizationRates": lambda h: Rates,
        "nvmlSystemGetDriverVersion": lambda: "550.1",
        "nvmlSystemGetCudaDriverVersion": lambda: 12040,
    }
    for name, value in fake.items():
        monkeypatch.setattr(pynvml, name, value)
    gpus, note, driver = gpus_module.nvidia_gpus()
    assert note == ""
    assert [g["device"] for g in gpus] == ["cuda:0", "cuda:1"]
    assert gpus[1]["name"] == "Fake RTX" and gpus[1]["memory_free_bytes"] == 12 * 2**30
    assert gpus[0]["utilization_percent"] == 7
    assert driver == {"driver_version": "550.1", "cuda_driver_version": "12.4"}


def test_format_resources_is_readable():
    text = format_resources(detect_resources())
    assert "Cores:" in text and "CPUExecutionProvider" in text
    assert "GPU" in text

"""The cost model and the planner: probes, caching, ETA, shares, threads, batch sizes."""

import json

import pytest

from modeldesk.scheduler import CostModel, Plan, plan
from modeldesk.scheduler.planner import cpu_thread_budget

GPU_MACHINE = {
    "cpu": {"usable_cores": 8, "logical_cores": 8},
    "memory": {"available_bytes": 8 * 2**30},
    "gpus": [{"index": 0, "device": "cuda:0", "name": "Fake GPU", "memory_free_bytes": 4 * 2**30}],
    "providers": {"CUDAExecutionProvider": True, "CPUExecutionProvider": True},
}


class CountingProbe:
    def __init__(self, seconds):
        self.seconds = seconds  # device -> seconds per item
        self.calls = []

    def __call__(self, device, batch_size, threads):
        self.calls.append((device, batch_size, threads))
        return self.seconds[device]


def test_probe_runs_once_and_the_figure_is_cached_on_disk(tmp_path):
    probe = CountingProbe({"cpu": 0.01})
    model = CostModel(tmp_path)
    assert model.measure("net", "cpu", 8, 2, probe)["items_per_s"] == pytest.approx(100)
    model.measure("net", "cpu", 8, 2, probe)
    again = CostModel(tmp_path)  # a new process reading the workspace cache
    assert again.measure("net", "cpu", 8, 2, probe)["items_per_s"] == pytest.approx(100)
    assert probe.calls == [("cpu", 8, 2)]
    assert json.loads((tmp_path / "cost_model.json").read_text())["version"] == 1


def test_real_runs_refine_the_figure_with_a_moving_average(tmp_path):
    model = CostModel(tmp_path, alpha=0.5)
    model.measure("net", "cpu", 8, 2, lambda d, b, t: 0.01)  # 100 items/s
    entry = model.record("net", "cpu", 8, 2, n_items=100, seconds=0.5)  # 200 items/s
    assert entry["items_per_s"] == pytest.approx(180)  # the first run outweighs the probe (0.8)
    assert entry["samples"] == 2 and entry["source"] == "run"
    entry = model.record("net", "cpu", 8, 2, n_items=100, seconds=1.0)  # 100 items/s
    assert entry["items_per_s"] == pytest.approx(140)  # then the moving average (alpha 0.5)
    assert CostModel(tmp_path).get("net", "cpu", 8, 2)["items_per_s"] == pytest.approx(140)


def test_nearest_configuration_is_used_and_cpu_scales_with_threads():
    model = CostModel(None)
    model.record("net", "cpu", 8, 1, n_items=10, seconds=1.0)
    assert model.items_per_s("net", "cpu", 8, 2) == pytest.approx(20)
    assert model.items_per_s("net", "cpu", 8, 2, exact=True) is None
    assert model.items_per_s("other", "cpu", 8, 1) is None
    assert model.estimate_seconds("net", 50, "cpu", 8, 1) == pytest.approx(5)


def test_batch_size_fits_in_memory():
    model = CostModel(None)
    assert model.pick_batch_size("net", "cuda:0", 1000, bytes_per_item=100, fixed_bytes=150) == 8
    assert model.pick_batch_size("net", "cuda:0", 50, bytes_per_item=100) == 1
    model.measure("net", "cuda:0", 1, 1, lambda d, b, t: (0.01, 30))  # the probe reports memory too
    assert model.pick_batch_size("net", "cuda:0", 1000) == 32
    assert model.pick_batch_size("unknown", "cpu", 10**12, default=8) == 8


def test_corrupt_cache_file_is_ignored(tmp_path):
    (tmp_path / "cost_model.json").write_text("{not json")
    model = CostModel(tmp_path)
    assert model.get("net", "cpu", 1, 1) is None
    model.record("net", "cpu", 1, 1, n_items=1, seconds=1)
    assert CostModel(tmp_path).get("net", "cpu", 1, 1)["items_per_s"] == 1


def test_eta_comes_from_the_cost_model_before_running():
    model = CostModel(None)
    model.record("net", "cpu", 8, 6, n_items=100, seconds=1.0)  # 100 items/s
    model.record("net", "cuda:0", 32, 1, n_items=300, seconds=1.0)  # 300 items/s
    probe = CountingProbe({})
    work = plan("net", 800, cost_model=model, probe=probe, resources=GPU_MACHINE, batch_size=None)
    assert probe.calls == []  # everything was known: nothing measured
    by_name = {d.name: d for d in work.devices}
    assert set(by_name) == {"cpu", "cuda:0"}
    assert by_name["cpu"].threads == 6  # 8 cores: one kept for the UI, one feeds the GPU
    assert work.eta_s == pytest.approx(800 / 400)
    assert by_name["cuda:0"].share == pytest.approx(0.75)
    assert by_name["cpu"].share == pytest.approx(0.25)


def test_plan_probes_unknown_devices_and_splits_by_throughput():
    probe = CountingProbe({"cpu": 0.004, "cuda:0": 0.001})
    work = plan("net", 1000, cost_model=CostModel(None), probe=probe, resources=GPU_MACHINE)
    assert sorted(call[0] for call in probe.calls) == ["cpu", "cuda:0"]
    shares = {d.name: d.share for d in work.devices}
    assert shares["cuda:0"] == pytest.approx(0.8)
    assert work.eta_s == pytest.approx(1000 / 1250)
    gpu = next(d for d in work.devices if d.name == "cuda:0")
    assert gpu.provider == "CUDAExecutionProvider" and gpu.batch_size > 8


def test_device_choice():
    model = CostModel(None)
    only_cpu = plan("net", 10, device="cpu", cost_model=model, resources=GPU_MACHINE)
    assert [d.name for d in only_cpu.devices] == ["cpu"] and only_cpu.devices[0].threads == 7
    assert [
        d.name for d in plan("net", 10, device="cuda", cost_model=model, resources=GPU_MACHINE).devices
    ] == ["cuda:0"]
    no_gpu = dict(GPU_MACHINE, gpus=[], providers={"CPUExecutionProvider": True})
    fallback = plan("net", 10, device="cuda:0", cost_model=model, resources=no_gpu)
    assert [d.name for d in fallback.devices] == ["cpu"]
    assert any("not available" in note for note in fallback.notes)
    with pytest.raises(ValueError):
        plan("net", 10, device="quantum", cost_model=model, resources=GPU_MACHINE)


def test_gpu_whose_probe_fails_is_left_out():
    def probe(device, batch_size, threads):
        if device.startswith("cuda"):
            raise RuntimeError("CUDA out of memory")
        return 0.01

    work = plan("net", 10, cost_model=CostModel(None), probe=probe, resources=GPU_MACHINE)
    assert [d.name for d in work.devices] == ["cpu"]
    assert any("out of memory" in note for note in work.notes)


def test_thread_budget_keeps_a_core_for_the_ui():
    assert cpu_thread_budget(8)[0] == 7
    assert cpu_thread_budget(3)[0] == 2
    threads, note = cpu_thread_budget(2)
    assert threads == 2 and "slowly" in note
    assert cpu_thread_budget(1)[0] == 1
    two_cores = {"cpu": {"usable_cores": 2}, "memory": {}, "gpus": [], "providers": {}}
    work = plan("net", 10, cost_model=CostModel(None), resources=two_cores)
    assert work.devices[0].threads == 2 and any("slowly" in n for n in work.notes)


def test_cpu_workers_split_the_threads_and_the_plan_round_trips_through_json():
    model = CostModel(None)
    model.record("net", "cpu", 8, 1, n_items=10, seconds=1)
    two = {"cpu": {"usable_cores": 2}, "memory": {"available_bytes": 2**30}, "gpus": [], "providers": {}}
    work = plan("net", 40, cost_model=model, resources=two, cpu_workers=2, batch_size=8)
    assert [(d.name, d.threads) for d in work.devices] == [("cpu:0", 1), ("cpu:1", 1)]
    assert work.eta_s == pytest.approx(2.0)
    data = json.loads(json.dumps(work.to_dict()))
    assert {"devices", "eta_s"} <= set(data)
    assert set(data["devices"][0]) >= {"name", "provider", "threads", "batch_size", "share", "items_per_s"}
    assert Plan.from_dict(data).to_dict() == data


def test_unmeasured_devices_get_equal_shares_and_no_eta():
    work = plan("net", 10, cost_model=CostModel(None), resources=GPU_MACHINE)
    assert work.eta_s is None
    assert [d.share for d in work.devices] == [0.5, 0.5]


def test_device_shares_name_the_device_a_session_should_use():
    from modeldesk.scheduler import DeviceShare

    names = ["cpu", "cpu:1", "cuda:1", "dask:tcp://10.0.0.2:4000", "dask:tcp://10.0.0.2:4000/cuda:0"]
    devices = [DeviceShare(n, "CPUExecutionProvider", 1, 1).device for n in names]
    assert devices == ["cpu", "cpu", "cuda:1", "cpu", "cuda:0"]


def test_a_prior_gives_a_first_eta_without_a_probe():
    two = {"cpu": {"usable_cores": 2}, "memory": {}, "gpus": [], "providers": {}}
    work = plan("net", 100, cost_model=CostModel(None), resources=two, prior_items_per_s=25)
    assert work.eta_s == pytest.approx(2.0)  # 2 threads x 25 items/s
    assert "prior" in work.devices[0].note


def test_every_device_the_app_offers_is_accepted_by_the_planner_and_the_runtime():
    """The "Run on" choices, the planner and ONNX Runtime sessions read one device table."""
    from modeldesk.app.workspace import Workspace
    from modeldesk.deploy.runtime import providers_for
    from modeldesk.devices import DEVICES

    every_provider_works = {
        "providers": {provider: True for provider, _ in DEVICES.values()},
        "gpus": [{"index": 0, "name": "GPU", "memory_total_bytes": 8e9}],
    }
    offered = [device for device, _ in Workspace.device_choices(every_provider_works)]
    assert set(offered) == {"auto", *DEVICES}
    for device in offered:
        providers = providers_for(device)
        assert providers[-1] == "CPUExecutionProvider"
        chosen = plan(
            "net",
            100,
            device=device,
            cost_model=CostModel(None),
            resources=every_provider_works,
            prior_items_per_s=100.0,
        )  # raises for a device it does not know
        assert chosen.devices

"""The Dask cluster backend (skipped when dask[distributed] is not installed)."""

import subprocess
import sys

import pytest

from modeldesk.scheduler import CostModel, plan, run_partitioned
from modeldesk.scheduler.cluster import INSTALL_HINT, ClusterError, DaskBackend, worker_resources


def test_importing_the_scheduler_does_not_import_dask():
    code = "import sys, modeldesk.scheduler; print(any(m.split('.')[0] in ('dask', 'distributed') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_without_dask_the_message_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ClusterError, match=r"pip install modeldesk\[cluster\]"):
        DaskBackend().start()
    assert "modeldesk[cluster]" in INSTALL_HINT


def test_worker_resources_declare_cores_gpus_and_memory():
    found = {
        "cpu": {"usable_cores": 6},
        "memory": {"available_bytes": 2**30},
        "gpus": [{"index": 0}, {"index": 1}],
        "providers": {"CUDAExecutionProvider": True},
    }
    assert worker_resources(found) == {"CPU": 6.0, "MEMORY": float(2**30), "GPU": 2.0}
    found["providers"] = {"CUDAExecutionProvider": False}
    assert "GPU" not in worker_resources(found)


def test_partitions_run_on_a_two_worker_local_cluster():
    pytest.importorskip("distributed")

    def process_chunk(share, chunk):
        from distributed import get_worker

        return [(item * 3, get_worker().address, share.local_device) for item in chunk]

    with DaskBackend(local_workers=2) as backend:
        work = plan(
            "triple",
            60,
            devices=backend,
            cost_model=CostModel(None),
            probe=lambda d, b, t: 0.001,
            batch_size=3,
        )
        assert len(work.devices) == 2 and all(d.name.startswith("dask:") for d in work.devices)
        assert work.eta_s == pytest.approx(60 / 2000)
        out = run_partitioned(work, range(60), process_chunk)
    assert [value for value, _, _ in out] == [3 * i for i in range(60)]
    assert {device for _, _, device in out} == {"cpu"}
    used = {address for _, address, _ in out}
    assert {f"dask:{address}" for address in used} == {d.name for d in work.devices}
    assert sum(s["items"] for s in work.run_stats.values()) == 60


class CountsItsCopies:
    """A unit of work that remembers, per copy, how many chunks it ran (like a cached session)."""

    def __init__(self):
        self.chunks = 0

    def __call__(self, share, chunk):
        self.chunks += 1
        return [(id(self), self.chunks) for _ in chunk]


def test_the_work_function_is_sent_once_so_its_state_lives_on_the_workers():
    pytest.importorskip("distributed")
    with DaskBackend(local_workers=2) as backend:
        work = plan("copies", 40, devices=backend, cost_model=CostModel(None), batch_size=2)
        out = run_partitioned(work, range(40), CountsItsCopies(), chunk_size=2)
    copies = {copy for copy, _ in out}
    assert len(copies) <= 2  # one copy per worker at most, not one per chunk
    assert max(count for _, count in out) > 1


def test_start_worker_declares_its_resources_and_the_planner_sees_its_gpu():
    distributed = pytest.importorskip("distributed")
    import threading
    import time

    from modeldesk.scheduler.cluster import start_worker

    found = {
        "cpu": {"usable_cores": 1},
        "memory": {"available_bytes": 2**30},
        "gpus": [{"index": 0}],
        "providers": {"CUDAExecutionProvider": True},
    }
    with distributed.LocalCluster(
        n_workers=0, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        thread = threading.Thread(
            target=start_worker,
            args=(cluster.scheduler_address,),
            kwargs={"nthreads": 1, "name": "md-worker", "resources": found},
            daemon=True,
        )
        thread.start()
        with DaskBackend(cluster.scheduler_address) as backend:
            deadline = time.monotonic() + 20
            while not backend.workers() and time.monotonic() < deadline:
                time.sleep(0.05)
            (worker,) = backend.workers()
            assert worker["name"] == "md-worker"
            assert worker["resources"] == {"CPU": 1.0, "MEMORY": float(2**30), "GPU": 1.0}
            shares = backend.device_shares()
            assert [s.device for s in shares] == ["cpu", "cuda:0"]
            assert shares[1].provider == "CUDAExecutionProvider"
            backend.client_.retire_workers()
        thread.join(20)
        assert not thread.is_alive()


def test_local_cpu_and_cluster_workers_share_one_run():
    pytest.importorskip("distributed")
    two = {"cpu": {"usable_cores": 2}, "memory": {"available_bytes": 2**30}, "gpus": [], "providers": {}}
    with DaskBackend(local_workers=1) as backend:
        work = plan(
            "mixed", 30, devices=["cpu", backend], resources=two, cost_model=CostModel(None), batch_size=2
        )
        assert [d.kind for d in work.devices] == ["cpu", "dask"]
        out = run_partitioned(work, range(30), lambda share, chunk: [(x, share.kind) for x in chunk])
    assert [x for x, _ in out] == list(range(30))
    assert {kind for _, kind in out} <= {"cpu", "dask"}
    assert sum(s["items"] for s in work.run_stats.values()) == 30


def test_the_local_cluster_listens_on_this_machine_only():
    pytest.importorskip("distributed")
    import psutil

    def listening():
        return {c.laddr for c in psutil.Process().net_connections() if c.status == psutil.CONN_LISTEN}

    before = listening()
    with DaskBackend(local_workers=2):
        opened = listening() - before
    assert opened and {address.ip for address in opened} <= {"127.0.0.1", "::1"}


def test_each_machine_is_probed_once_and_remembered_by_its_identity(tmp_path):
    pytest.importorskip("distributed")

    def probe(device, batch_size, threads):
        return 0.01

    with DaskBackend(local_workers=2) as backend:
        first = plan("work", 100, devices=backend, cost_model=CostModel(tmp_path), probe=probe, batch_size=4)
        ids = {w["identity"]["id"] for w in backend.workers()}
    assert len(ids) == 1  # two workers of one machine: one identity, measured once
    (entry,) = CostModel(tmp_path).entries()
    assert entry["device"] == f"dask:{ids.pop()}" and entry["source"] == "probe" and entry["samples"] == 1
    with DaskBackend(local_workers=2) as backend:  # a new connection, new worker addresses
        again = plan("work", 100, devices=backend, cost_model=CostModel(tmp_path), probe=probe, batch_size=4)
    assert CostModel(tmp_path).entries() == [entry] and again.eta_s == first.eta_s

"""run_partitioned: order, work stealing, cancellation, errors, throughput fed back."""

import threading
import time

import pytest

from modeldesk.scheduler import Cancelled, CostModel, DeviceShare, Plan, run_partitioned


def _plan(*devices, model=None, eta=None):
    shares = [
        DeviceShare(name, "CPUExecutionProvider", 1, batch, share=1 / len(devices), cost_device=name)
        for name, batch in devices
    ]
    return Plan("work", 0, shares, eta, cost_model=model)


def test_results_come_back_in_input_order_with_progress():
    seen = []
    work = _plan(("a", 3), ("b", 5))
    out = run_partitioned(
        work,
        range(50),
        lambda share, chunk: [x * x for x in chunk],
        progress=lambda done, total, eta: seen.append((done, total)),
    )
    assert out == [x * x for x in range(50)]
    assert seen[-1] == (50, 50)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert sum(s["items"] for s in work.run_stats.values()) == 50
    assert work.actual_s > 0


def test_a_faster_device_takes_proportionally_more_work():
    delays = {"fast": 0.002, "slow": 0.008}  # seconds per item: the fast device is 4x faster

    def process(share, chunk):
        time.sleep(delays[share.name] * len(chunk))
        return list(chunk)

    work = _plan(("fast", 2), ("slow", 2))
    assert run_partitioned(work, range(200), process) == list(range(200))
    fast, slow = work.run_stats["fast"]["items"], work.run_stats["slow"]["items"]
    assert fast + slow == 200
    assert fast > 2 * slow


def test_measured_throughput_goes_back_into_the_cost_model(tmp_path):
    model = CostModel(tmp_path)
    work = _plan(("cpu", 4), model=model)
    run_partitioned(work, range(20), lambda share, chunk: (time.sleep(0.001 * len(chunk)), chunk)[1])
    entry = CostModel(tmp_path).get("work", "cpu", 4, 1)
    assert entry["source"] == "run" and entry["samples"] == 1
    assert 0 < entry["items_per_s"] <= 1000 * 1.01


def test_should_stop_finishes_chunks_in_flight_then_raises_cancelled():
    started, finished = [], []
    stop = threading.Event()

    def process(share, chunk):
        started.append(chunk[0])
        if chunk[0] == 10:
            stop.set()
        time.sleep(0.01)
        finished.append(chunk[0])
        return [x + 1 for x in chunk]

    work = _plan(("a", 1), ("b", 1))
    with pytest.raises(Cancelled) as info:
        run_partitioned(work, range(100), process, should_stop=stop.is_set, chunk_size=1)
    assert sorted(started) == sorted(finished)  # nothing abandoned half-way
    assert len(finished) < 100
    assert info.value.done == len(finished) and info.value.total == 100
    assert all(info.value.results[i] == i + 1 for i in finished)


def test_the_first_error_stops_the_run_and_is_raised():
    def process(share, chunk):
        if 7 in chunk:
            raise KeyError("bad item 7")
        return list(chunk)

    with pytest.raises(KeyError, match="bad item 7"):
        run_partitioned(_plan(("a", 2), ("b", 2)), range(100), process)


def test_wrong_number_of_results_is_an_error():
    with pytest.raises(ValueError, match="2 results for 3 items"):
        run_partitioned(_plan(("a", 3)), range(3), lambda share, chunk: chunk[:2])


def test_backend_shares_run_through_the_backend():
    class Backend:
        def __init__(self):
            self.chunks = 0

        def run_chunk(self, share, process_chunk, chunk):
            self.chunks += 1
            return process_chunk(share, chunk)

    backend = Backend()
    work = _plan(("remote", 4))
    assert (
        run_partitioned(work, range(12), lambda s, c: [s.name] * len(c), backends={"remote": backend})
        == ["remote"] * 12
    )
    assert backend.chunks == 3


def test_empty_input():
    assert run_partitioned(_plan(("a", 4)), [], lambda s, c: c) == []

"""A device lost mid-run (a cluster worker that died) gives its chunk back; nothing runs twice."""

import threading
import time

import pytest

from modeldesk.scheduler import DeviceShare, Plan, run_partitioned
from modeldesk.scheduler.partition import DeviceLost


class FlakyBackend:
    """Runs chunks here, like a cluster worker would; dies on its ``die_on``-th chunk."""

    inflight = 2
    max_chunk_items = 3

    def __init__(self, die_on=None):
        self.die_on = die_on
        self.calls = 0
        self.lock = threading.Lock()

    def run_chunk(self, share, process_chunk, chunk):
        with self.lock:
            self.calls += 1
            dying = self.die_on is not None and self.calls >= self.die_on
        if dying:
            raise DeviceLost("worker left the cluster")
        return process_chunk(share, chunk)


def _plan(names, backends):
    shares = [
        DeviceShare(name, "CPUExecutionProvider", 1, 4, share=1 / len(names), cost_device=name)
        for name in names
    ]
    return Plan("work", 0, shares, None, backends=backends)


def test_a_lost_worker_s_chunks_are_done_once_by_the_others():
    seen = []
    lock = threading.Lock()

    def process(share, chunk):
        time.sleep(0.01)  # every device gets to take chunks
        with lock:
            seen.extend(chunk)
        return [(x, share.name) for x in chunk]

    dying = FlakyBackend(die_on=3)
    work = _plan(["cpu", "dask:a", "dask:b"], {"dask:a": dying, "dask:b": FlakyBackend()})
    out = run_partitioned(work, range(60), process)
    assert [x for x, _ in out] == list(range(60))
    assert sorted(seen) == list(range(60))  # every item processed exactly once
    stats = work.run_stats
    assert stats["dask:a"]["lost_chunks"] >= 1 and stats["dask:a"]["items"] > 0
    assert sum(s["items"] for s in stats.values()) == 60
    assert any("dask:a was lost" in note for note in work.notes)
    rows = {row["name"]: row for row in work.to_dict()["per_device"]}
    assert rows["dask:a"]["lost_chunks"] == stats["dask:a"]["lost_chunks"]


def test_remote_chunks_are_capped_and_run_through_pack_and_unpack():
    class Work:
        def __init__(self):
            self.packed, self.unpacked = [], []

        def __call__(self, share, chunk):
            return [x * 10 for x in chunk]

        def remote(self, share, payload):
            return [p.upper() for p in payload]

        def pack(self, share, chunk):
            self.packed.append(len(chunk))
            return [f"item{x}" for x in chunk]

        def unpack(self, share, chunk, out):
            self.unpacked.append(len(chunk))
            return [int(text[4:]) * 10 for text in out]

    work = Work()
    plan = _plan(["dask:a"], {"dask:a": FlakyBackend()})
    assert run_partitioned(plan, range(10), work, chunk_size=8) == [x * 10 for x in range(10)]
    assert max(work.packed) <= FlakyBackend.max_chunk_items and sum(work.unpacked) == 10


def test_when_every_device_is_lost_the_run_says_so():
    work = _plan(["dask:a"], {"dask:a": FlakyBackend(die_on=2)})
    with pytest.raises(DeviceLost, match="every device was lost"):
        run_partitioned(work, range(40), lambda share, chunk: list(chunk))

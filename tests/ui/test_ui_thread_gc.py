"""Garbage cycles are collected on the UI thread, never on the worker that happens to allocate."""

from __future__ import annotations

import gc
import threading

from modeldesk.ui.ui_thread_gc import UiThreadCollector


class Cycle:
    """Garbage only the cyclic collector frees; records the thread that freed it."""

    freed_on: list[str] = []

    def __init__(self):
        self.me = self

    def __del__(self):
        Cycle.freed_on.append(threading.current_thread().name)


def test_cycles_made_and_left_by_a_worker_are_freed_on_the_ui_thread(qtbot):
    Cycle.freed_on.clear()
    collector = UiThreadCollector(interval_ms=20).start()
    try:
        assert not gc.isenabled()

        def work():  # each burst crosses the youngest generation's threshold
            for _ in range(50):
                Cycle()
                junk = [[] for _ in range(2_000)]
                del junk
            for _ in range(2 * collector.thresholds[0]):  # garbage still over it when the worker ends
                Cycle()

        worker = threading.Thread(target=work, name="worker")
        worker.start()
        worker.join()
        assert Cycle.freed_on == [], "nothing may be collected on the worker"
        qtbot.waitUntil(lambda: len(Cycle.freed_on) == 50 + 2 * collector.thresholds[0], timeout=10_000)
        assert set(Cycle.freed_on) == {threading.main_thread().name}
    finally:
        collector.stop()
    assert gc.isenabled()


def test_what_lives_at_start_up_is_left_out_of_later_collections():
    collector = UiThreadCollector().start()
    try:
        collector.freeze()
        assert gc.get_freeze_count() > 1000  # at least the modules' objects
        later = Cycle()
        assert gc.is_tracked(later) and later not in gc.get_objects(generation=2)
    finally:
        collector.stop()
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_the_collector_follows_the_interpreter_s_thresholds():
    collector = UiThreadCollector()
    gc.collect()
    assert collector.check() is None  # nothing over a threshold just after a full collection
    gc.disable()
    try:
        junk = [[] for _ in range(collector.thresholds[0] + 10)]
        assert collector.check() == 0
        del junk
    finally:
        gc.enable()

"""The cluster panel under "Run on": each worker's cores, GPUs and speed; whether training uses it."""

import pytest

from modeldesk.ui.widgets.cluster_panel import ClusterPanel, worker_line

WORKERS = [
    {
        "name": "lab-pc",
        "host": "lab-pc",
        "cores": 8,
        "gpus": 1,
        "measured": {"items_per_s": 41.2},
        "refused": None,
    },
    {"name": "w2", "host": "old-laptop", "cores": 2, "gpus": 0, "measured": None, "refused": None},
    {
        "name": "w3",
        "host": "w3",
        "cores": 4,
        "gpus": 0,
        "measured": None,
        "refused": "it runs onnxruntime 1.17.0 (this app: 1.20.0)",
    },
]


def test_a_plan_with_cluster_workers_is_said_in_words():
    from modeldesk.ui.wording import plan_device_words

    plan = {
        "devices": [
            {"name": "cpu"},
            {"name": "dask:tcp://10.0.0.5:40001"},
            {"name": "dask:tcp://10.0.0.6:40001"},
        ]
    }
    assert plan_device_words(plan) == "on the CPU + 2 cluster workers"


def test_worker_lines_say_cores_gpus_speed_and_why_a_worker_is_not_used():
    assert worker_line(WORKERS[0]) == "lab-pc: 8 cores, 1 GPU, 41 images/s"
    assert worker_line(WORKERS[1]) == "w2 (old-laptop): 2 cores, no GPU, speed measured on first use"
    assert worker_line({**WORKERS[1], "cores": 1}).startswith("w2 (old-laptop): 1 core, no GPU")
    assert worker_line(WORKERS[2]).endswith("not used: it runs onnxruntime 1.17.0 (this app: 1.20.0)")


def test_the_panel_hides_without_a_cluster_and_lists_its_workers(qtbot, show_widget):
    panel = show_widget(ClusterPanel())
    panel.show_workers(None, [])
    assert not panel.isVisible() and panel.cluster_choice() == "off"
    panel.show_workers("tcp://10.0.0.5:8786", WORKERS)
    assert panel.isVisible()
    assert "(2 workers)" in panel.use.text() and "tcp://10.0.0.5:8786" in panel.use.text()
    assert "lab-pc: 8 cores, 1 GPU, 41 images/s" in panel.workers.text()
    assert panel.cluster_choice() is None  # the workspace's setting: use the cluster
    with qtbot.waitSignal(panel.changed):
        panel.use.setChecked(False)
    assert panel.cluster_choice() == "off"


def test_an_unreachable_cluster_is_said_and_not_used(show_widget):
    panel = show_widget(ClusterPanel())
    panel.show_unreachable("tcp://10.0.0.5:8786", "cannot reach the Dask scheduler at tcp://10.0.0.5:8786")
    assert panel.isVisible() and not panel.use.isEnabled()
    assert "Cannot reach it" in panel.workers.text()
    assert panel.cluster_choice() == "off"


def test_the_train_page_lists_the_workspace_cluster_s_workers(qtbot, ws, open_page):
    distributed = pytest.importorskip("distributed")
    from modeldesk.ui.pages.train import TrainPage

    with distributed.LocalCluster(
        n_workers=2, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        ws.use_cluster(cluster.scheduler_address)
        page = open_page(TrainPage, ws)
        qtbot.waitUntil(
            lambda: page.cluster.isVisible() and "(2 workers)" in page.cluster.use.text(), timeout=30000
        )
        assert page.cluster.workers.text().count("speed measured on first use") == 2
        assert page.cluster.cluster_choice() is None
        page.cluster.use.setChecked(False)
        assert page.cluster.cluster_choice() == "off"
        qtbot.waitUntil(lambda: not page.tasks.busy, timeout=60000)

"""'Improve as I label': counting new labels, submitting the fast recipe, a running job, the cooldown."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from modeldesk.app.keep_up import KeepUp, fast_template, is_auto_job, is_auto_model
from modeldesk.app.settings import Settings
from modeldesk.errors import UserError

TEMPLATES = [
    {"name": "image-classification/accurate", "time_budget_s": 300},
    {"name": "image-classification/fast", "time_budget_s": 60},
]


class FakeWorkspace:
    """What KeepUp uses of a Workspace, recording the runs it submits."""

    def __init__(self, root: Path):
        self.paths = SimpleNamespace(root=root)
        self.settings = Settings()
        self.running: list[dict] = []
        self.submitted: list[tuple] = []
        self.refuse: str | None = None

    def templates(self, task):
        return TEMPLATES

    def training_jobs(self, project):
        return self.running

    def submit_training(self, project, template, *, auto=False):
        if self.refuse:
            raise UserError(self.refuse)
        self.submitted.append((project, template, auto))
        return len(self.submitted)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def make(tmp_path, **options):
    ws, clock = FakeWorkspace(tmp_path), Clock()
    keep = KeepUp(ws, clock=clock, **{"every": 5, "cooldown_s": 60, **options})
    return ws, keep, clock


def test_off_by_default_and_remembered_per_project_in_the_settings(tmp_path):
    ws, keep, _ = make(tmp_path)
    assert not keep.enabled("cats")
    assert keep.labeled("cats", "image-classification", 50) is None and not ws.submitted
    keep.set_enabled("cats", True)
    assert Settings.load(tmp_path).keep_up_projects == ["cats"]
    keep.set_enabled("cats", False)
    assert Settings.load(tmp_path).keep_up_projects == []


def test_submits_the_fast_recipe_after_every_five_new_labels(tmp_path):
    ws, keep, clock = make(tmp_path)
    keep.set_enabled("cats", True)
    for labeled in range(11, 15):  # the first call counts one new label: 10 were there before
        assert keep.labeled("cats", "image-classification", labeled) is None
    assert "1 more label until" in keep.last_note
    assert keep.labeled("cats", "image-classification", 15) == 1
    assert ws.submitted == [("cats", "image-classification/fast", True)]
    clock.now += 600
    for labeled in range(16, 20):
        assert keep.labeled("cats", "image-classification", labeled) is None
    assert keep.labeled("cats", "image-classification", 20) == 2


def test_waits_for_a_running_job_and_for_the_cooldown(tmp_path):
    ws, keep, clock = make(tmp_path)
    keep.set_enabled("cats", True)
    keep.labeled("cats", "image-classification", 0)
    ws.running = [{"id": 7, "params": {"project": "cats"}}]
    assert keep.labeled("cats", "image-classification", 5) is None
    assert "training run is going on" in keep.last_note
    ws.running = []
    assert keep.labeled("cats", "image-classification", 6) == 1  # the count was kept meanwhile
    assert keep.labeled("cats", "image-classification", 11) is None, "within the cooldown"
    assert "a moment ago" in keep.last_note
    clock.now += 61
    assert keep.labeled("cats", "image-classification", 12) == 2
    assert len(ws.submitted) == 2


def test_a_project_that_cannot_train_yet_says_why_and_submits_nothing(tmp_path):
    ws, keep, _ = make(tmp_path)
    keep.set_enabled("cats", True)
    keep.labeled("cats", "image-classification", 0)
    ws.refuse = "Add a second class first."
    assert keep.labeled("cats", "image-classification", 5) is None
    assert keep.last_note == "Add a second class first."
    ws.refuse = None
    assert keep.labeled("cats", "image-classification", 6) == 1


def test_marks_and_the_fast_recipe_of_a_task_without_one_named_fast():
    assert fast_template(TEMPLATES) == "image-classification/fast"
    assert (
        fast_template([{"name": "a/slow", "time_budget_s": 90}, {"name": "a/quick", "time_budget_s": 30}])
        == "a/quick"
    )
    assert fast_template([]) is None
    assert is_auto_job({"params": {"auto": True}}) and not is_auto_job({"params": {}})
    assert is_auto_model({"metrics": {"origin": "keep_up"}}) and not is_auto_model({"metrics": {}})


def test_a_real_workspace_marks_the_auto_run_in_its_params(tmp_path, shapes_folder):
    from modeldesk.app.workspace import Workspace

    ws = Workspace(tmp_path / "ws", cleanup=False)
    try:
        ws.create_project("colors", "image-classification")
        ws.import_data("colors", shapes_folder)
        keep = KeepUp(ws, every=1)
        keep.set_enabled("colors", True)
        assert ws.settings.keep_up_projects == ["colors"]
        job_id = keep.labeled("colors", "image-classification", 8)
        assert job_id is not None, keep.last_note
        job = ws.jobs.get(job_id)
        assert job["params"]["auto"] is True and job["params"]["template"] == "image-classification/fast"
        ws.jobs.cancel(job_id)
    finally:
        ws.jobs.close(cancel_running=True, timeout=20)
        ws.close()


def test_the_switch_follows_a_renamed_project_and_goes_with_a_deleted_one(tmp_path):
    from modeldesk.app.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    try:
        ws.create_project("cats", "image-classification")
        ws.create_project("dogs", "image-classification")
        KeepUp(ws).set_enabled("cats", True)
        KeepUp(ws).set_enabled("dogs", True)
        ws.rename_project("cats", "felines")
        assert KeepUp(ws).enabled("felines") and not KeepUp(ws).enabled("cats")
        ws.delete_project("dogs")
        ws.create_project("dogs", "image-classification")
        assert not KeepUp(ws).enabled("dogs")
    finally:
        ws.close()
    reopened = Workspace(tmp_path / "ws")  # what the app finds after a restart
    try:
        assert reopened.settings.keep_up_projects == ["felines"]
    finally:
        reopened.close()

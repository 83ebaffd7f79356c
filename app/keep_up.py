""" "Improve as I label": retrain a project's fast recipe in the background after every few new labels.

The Label page calls :meth:`KeepUp.labeled` after each label it saves. Once ``every`` labels were added
since the last run (or since the switch was turned on) and no training run of the project is queued or
running and the cooldown has passed, a run of the project's fast recipe goes to the job queue like any
other, marked ``auto`` in its parameters; the model it makes is marked ``origin: "keep_up"`` in its
metrics so the pickers keep the user's own choice as their default. The switch is remembered per
project in the workspace settings (``keep_up_projects``).
"""

from __future__ import annotations

import logging
import time

from modeldesk.errors import UserError

log = logging.getLogger(__name__)

#: new labels between two background runs
EVERY = 5
#: seconds between two background runs at least, however fast the labels come
COOLDOWN_S = 60.0
#: what a model made by a background run says in its metrics (and the key it says it under)
ORIGIN_KEY, ORIGIN = "origin", "keep_up"


def is_auto_model(model: dict) -> bool:
    """Whether a model record (``list_models``) came from an "Improve as I label" run."""
    return (model.get("metrics") or {}).get(ORIGIN_KEY) == ORIGIN


def is_auto_job(job: dict) -> bool:
    """Whether a training job (``training_runs``) is an "Improve as I label" run."""
    return bool((job.get("params") or {}).get("auto"))


def fast_template(templates: list[dict]) -> str | None:
    """The quickest recipe of a task's templates (``Workspace.templates(task)``): ``<task>/fast``, else the
    one with the smallest time budget."""
    if not templates:
        return None
    for template in templates:
        if template["name"].endswith("/fast"):
            return template["name"]
    return min(templates, key=lambda t: t.get("time_budget_s") or float("inf"))["name"]


class KeepUp:
    """Counts a project's new labels and submits a background run of its fast recipe every ``every``.

    Parameters
    ----------
    workspace : the Workspace (``settings``, ``paths``, ``templates``, ``training_jobs``, ``submit_training``).
    every : new labels between runs.
    cooldown_s : seconds between runs at least.
    clock : a monotonic clock (tests pass their own).

    ``last_note`` says in one sentence why the last call did not start a run (or that it did).
    """

    def __init__(
        self, workspace, *, every: int = EVERY, cooldown_s: float = COOLDOWN_S, clock=time.monotonic
    ):
        self.ws = workspace
        self.every = int(every)
        self.cooldown_s = float(cooldown_s)
        self.clock = clock
        self._baseline: dict[str, int] = {}
        self._last_run: dict[str, float] = {}
        self.last_note = ""

    # -- the switch ----------------------------------------------------------------------------

    def enabled(self, project: str) -> bool:
        """Whether the switch is on for ``project``."""
        return project in self.ws.settings.keep_up_projects

    def set_enabled(self, project: str, on: bool) -> None:
        """Turn the switch on or off for ``project`` and save it in the workspace settings."""
        projects = [p for p in self.ws.settings.keep_up_projects if p != project]
        if on:
            projects.append(project)
        self.ws.settings.keep_up_projects = sorted(projects)
        self.ws.settings.save(self.ws.paths.root)
        self._baseline.pop(project, None)  # count from now

    # -- counting -------------------------------------------------------------------------------

    def labeled(self, project: str, task: str, labeled: int) -> int | None:
        """A label was saved and ``project`` now has ``labeled`` labeled samples: submit a background run
        when it is due.

        Returns the job id of the run submitted, or None (``last_note`` says why).
        """
        if not self.enabled(project):
            self.last_note = ""
            return None
        baseline = self._baseline.setdefault(project, max(labeled - 1, 0))  # this call brings one new label
        if labeled < baseline:  # labels were removed: count from here
            self._baseline[project] = baseline = labeled
        new = labeled - baseline
        if new < self.every:
            self.last_note = (
                f"{self.every - new} more label{'s' if self.every - new != 1 else ''} until the next update."
            )
            return None
        if self.ws.training_jobs(project):
            self.last_note = "A training run is going on; the model updates after it."
            return None
        last = self._last_run.get(project)
        if last is not None and self.clock() - last < self.cooldown_s:
            self.last_note = "The model was updated a moment ago; it updates again shortly."
            return None
        template = fast_template(self.ws.templates(task))
        if template is None:
            self.last_note = ""
            return None
        try:
            job_id = self.ws.submit_training(project, template, auto=True)
        except UserError as exc:  # not trainable yet (one class only, too few examples)
            self.last_note = str(exc)
            log.info("improve as I label: %s is not trainable yet: %s", project, exc)
            return None
        self._baseline[project] = labeled
        self._last_run[project] = self.clock()
        self.last_note = "Updating the model in the background…"
        log.info("improve as I label: job %s for %r after %d new labels", job_id, project, new)
        return job_id

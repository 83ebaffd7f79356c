"""The Workspace facade: the one set of calls behind both the command line and the desktop app.

It composes the core packages and holds no task logic of its own: datasets keep the data, the
scheduler runs jobs, trainers train, deploy exports and serves.
"""

from __future__ import annotations

import logging
import threading

from modeldesk.app.logs import fallback_log_file, setup_logging
from modeldesk.app.masks import MaskCalls
from modeldesk.app.models import ModelCalls
from modeldesk.app.paths import default_workspace
from modeldesk.app.projects import ProjectCalls
from modeldesk.app.recovery import open_paths, start_cleanup
from modeldesk.app.serving import ServingCalls
from modeldesk.app.settings import Settings
from modeldesk.app.tables import TableCalls
from modeldesk.app.training import APP_JOB_KINDS, TRAINING_TARGET, TrainingCalls
from modeldesk.datasets import Store
from modeldesk.trainers.tasks import FEW_EXAMPLES

log = logging.getLogger(__name__)

#: the names other layers take from here: the facade, the task registry's "too few examples" rule, and
#: the job kinds the app runs (``app/training.py``'s)
__all__ = ["APP_JOB_KINDS", "FEW_EXAMPLES", "TRAINING_TARGET", "Workspace"]


class Workspace(ProjectCalls, MaskCalls, TrainingCalls, ModelCalls, ServingCalls, TableCalls):
    """One workspace folder: the data store, the models, the caches and the job queue.

    A thin facade over four mixins, one per domain: tasks, projects and samples are
    ``app/projects.py``'s; templates, training runs, jobs, devices and the cluster ``app/training.py``'s;
    saved models, predictions, evaluation, export and labeling suggestions ``app/models.py``'s; which
    copy serves and the local service ``app/serving.py``'s. The longer flows behind them are in
    ``app/pipeline.py``. Here: opening the folder, cleaning up, closing.

    Parameters
    ----------
    root : path-like, optional
        The workspace folder; ``None`` uses ``MODELDESK_WORKSPACE`` or the platform's user data dir.
    cleanup : bool
        Remove what killed work left behind (old temporary files, orphan media), in the background.
    tie_jobs : bool
        Jobs this workspace starts are cancelled when this process dies (the command line, which
        waits for its jobs); the desktop app leaves them running to be picked up again.

    A folder that cannot be written opens read-only (``read_only`` is True): reading commands work,
    changes raise an error saying the folder is read-only. ``warnings`` lists problems found while
    opening (a damaged settings file).
    """

    def __init__(self, root=None, *, cleanup: bool = True, tie_jobs: bool = False):
        self.paths, self.read_only = open_paths(root if root is not None else default_workspace())
        setup_logging(fallback_log_file() if self.read_only else self.paths.log)
        self.store = Store(self.paths.root, read_only=self.read_only)
        self.warnings: list[str] = []
        self.settings = Settings.load(self.paths.root, self.warnings)
        self._cleanup = start_cleanup(self.store, self.paths.cache) if cleanup else None
        self._jobs = None
        self._tie_jobs = tie_jobs
        self._predictors: dict = {}
        self._lock = threading.Lock()

    # -- the workspace folder ---------------------------------------------------------------

    def cleanup(self) -> dict:
        """Remove what killed imports and writes left behind (older than an hour); returns counts."""
        removed = self.store.cleanup()
        if any(removed.values()):
            log.info("cleaned up leftovers: %s", removed)
        return removed

    def close(self) -> None:
        """Stop the background work of this process: the clean-up, following jobs (their workers run
        on, to be picked up by the next opening) and the store."""
        if self._cleanup is not None:
            self._cleanup.stop()
        if self._jobs is not None:
            # a job's monitor thread must not touch the database once the folder may be removed
            self._jobs.close()
        self.store.close()

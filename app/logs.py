"""Logging to a rotating file inside the workspace.

A log that cannot be written (a full disk, a read-only folder) must not flood the terminal with
"--- Logging error ---" tracebacks, one per record: the handler drops records quietly while writing
fails and tries again a little later.
"""

from __future__ import annotations

import logging
import logging.handlers
import time
from pathlib import Path

from platformdirs import user_log_dir

_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(process)d]: %(message)s"
RETRY_AFTER_S = 30.0


class QuietRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler that goes silent for a while when the file cannot be written."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.failed_at: float | None = None
        self.dropped = 0

    def emit(self, record: logging.LogRecord) -> None:
        if self.failed_at is not None:
            if time.monotonic() - self.failed_at < RETRY_AFTER_S:
                self.dropped += 1
                return
            self.failed_at = None
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        """Remember the failure and drop this record (instead of printing a traceback to stderr)."""
        self.failed_at = time.monotonic()
        self.dropped += 1
        try:
            if self.stream is not None:
                self.stream.close()
        except OSError:
            pass
        self.stream = None  # reopened on the next try


def fallback_log_file() -> Path:
    """Where the log goes when the workspace cannot hold it (a read-only workspace)."""
    return Path(user_log_dir("ModelDesk", appauthor=False)) / "modeldesk.log"


def setup_logging(log_file: Path, level: int = logging.INFO) -> logging.Handler | None:
    """Send the ``modeldesk`` loggers to ``log_file`` (1 MB x 5 files). Safe to call twice.

    Returns None (and logs nowhere) when the file's folder cannot be created.
    """
    log_file = Path(log_file)
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    root = logging.getLogger("modeldesk")
    for handler in root.handlers:
        if getattr(handler, "baseFilename", None) == str(log_file):
            return handler
    handler = QuietRotatingFileHandler(
        log_file, maxBytes=1_000_000, backupCount=5, encoding="utf-8", delay=True
    )
    handler.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(handler)
    root.setLevel(level)
    return handler

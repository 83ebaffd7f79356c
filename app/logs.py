"""Logging to a rotating file inside the workspace."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(process)d]: %(message)s"


def setup_logging(log_file: Path, level: int = logging.INFO) -> logging.Handler:
    """Send the ``modeldesk`` loggers to ``log_file`` (1 MB x 5 files). Safe to call twice."""
    log_file = Path(log_file)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger("modeldesk")
    for handler in root.handlers:
        if getattr(handler, "baseFilename", None) == str(log_file):
            return handler
    handler = logging.handlers.RotatingFileHandler(log_file, maxBytes=1_000_000, backupCount=5,
                                                   encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(handler)
    root.setLevel(level)
    return handler

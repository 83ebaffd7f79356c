"""Workspace settings: a small JSON file beside the database, with defaults for every key.

The desktop window keeps its own look-and-feel state (geometry, theme) in QSettings; these are the
settings that the command line and the window share.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from modeldesk.fileio import atomic_write

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"


@dataclass
class Settings:
    """Defaults used when a command or the window does not say otherwise."""

    device: str = "auto"
    default_template: str = "image-classification/accurate"
    service_host: str = "127.0.0.1"
    service_port: int = 8000
    thumbnail_size: int = 160

    @classmethod
    def load(cls, root) -> "Settings":
        """Read ``root/settings.json``; unknown keys are ignored and a damaged file is logged."""
        path = Path(root) / SETTINGS_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            log.error("%s is unreadable (%s); using default settings", path, exc)
            return cls()
        known = {f.name: f.type for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def save(self, root) -> Path:
        """Write atomically (temporary name, then rename)."""
        path = Path(root) / SETTINGS_FILE
        atomic_write(path, json.dumps(asdict(self), indent=2), durable=True)
        return path

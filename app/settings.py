"""Workspace settings: a small JSON file beside the database, with defaults for every key.

The desktop window keeps its own look-and-feel state (geometry, theme) in QSettings; these are the
settings that the command line and the window share.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, fields
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
    cluster: str = ""  # a Dask scheduler address that training uses beside this machine; "" for none
    cluster_credentials: str = ""  # the TLS credentials file for a tls:// cluster
    keep_up_projects: list = field(default_factory=list)  # projects whose "Improve as I label" is on

    @classmethod
    def load(cls, root, warnings: list | None = None) -> "Settings":
        """Read ``root/settings.json``; unknown keys are ignored.

        A file that is not a JSON object, or a value of the wrong type, falls back to the defaults
        (for the whole file, or that key) with a warning logged and appended to ``warnings``.
        """
        path = Path(root) / SETTINGS_FILE

        def warn(message: str) -> None:
            log.warning("%s", message)
            if warnings is not None:
                warnings.append(message)

        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            warn(f"{path} is unreadable ({exc}); using the default settings")
            return cls()
        if not isinstance(data, dict):
            warn(f"{path} holds {json.dumps(data)[:40]} instead of an object of settings; using the defaults")
            return cls()
        defaults = cls()
        values = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            value, default = data[f.name], getattr(defaults, f.name)
            if type(value) is not type(default):  # noqa: E721 - bool is not an int setting here
                warn(
                    f"{path}: {f.name} should be {type(default).__name__}, not {json.dumps(value)[:40]}; "
                    f"using the default {default!r}"
                )
                continue
            values[f.name] = value
        return cls(**values)

    def save(self, root) -> Path:
        """Write atomically (temporary name, then rename)."""
        path = Path(root) / SETTINGS_FILE
        atomic_write(path, json.dumps(asdict(self), indent=2), durable=True)
        return path

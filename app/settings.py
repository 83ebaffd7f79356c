"""Workspace settings: a small JSON file beside the database, with defaults for every key.

The desktop window keeps its own look-and-feel state (geometry, theme) in QSettings; these are the
settings that the command line and the window share.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from modeldesk import safejson
from modeldesk.fileio import atomic_write

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"
MAX_SETTINGS_BYTES = 1 << 20  # a few hundred bytes are expected; a bigger file is not settings


def _set_aside(path: Path) -> Path | None:
    """Rename a settings file that cannot be parsed to ``settings.json.broken-<time>`` (kept, never
    deleted, and no longer in the way of saving new settings); None when it cannot be renamed."""
    aside = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        os.replace(path, aside)
    except OSError as exc:
        log.warning("could not set %s aside: %s", path, exc)
        return None
    return aside


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
    def load(cls, root, warnings: list | None = None) -> Settings:
        """Read ``root/settings.json``; unknown keys are ignored.

        A file that is not a JSON object, or a value of the wrong type, falls back to the defaults
        (for the whole file, or that key) with a warning logged and appended to ``warnings``. A file
        that cannot be parsed at all (not JSON, nested too deep, a number too long) is also renamed to
        ``settings.json.broken-<time>``, so that it is kept and the next save does not overwrite it.
        """
        path = Path(root) / SETTINGS_FILE

        def warn(message: str) -> None:
            log.warning("%s", message)
            if warnings is not None:
                warnings.append(message)

        try:
            data = safejson.load_file(path, max_bytes=MAX_SETTINGS_BYTES)
        except FileNotFoundError:
            return cls()
        except safejson.JSONLimitError as exc:
            reason = str(exc).removeprefix(f"{path.name}: ").removeprefix("it ")
            aside = _set_aside(path)
            kept = f"it was kept as {aside.name}" if aside else "it was left in place"
            warn(f"{path} could not be read: it {reason}; using the default settings ({kept})")
            return cls()
        except OSError as exc:
            warn(f"{path} is unreadable ({exc.strerror or exc}); using the default settings")
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

"""A problem report: one zip with the app's logs and a description of this computer, no user data.

In the zip: ``environment.json`` (ModelDesk's version and install kind, the platform, CPUs, memory,
GPUs and execution providers, the bundled components, a few display-related environment
variables, counts of projects and models) and the workspace's log files (the app log and the
newest job logs). Never in it: images or other imported files, labels, the database, models,
settings values, project names. Paths under the user's home folder are written as ``~``.

Examples
--------
    from modeldesk.app.problem_report import write_problem_report
    write_problem_report(workspace.paths, "~/Desktop/modeldesk-report.zip")
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
import zipfile
from pathlib import Path

from modeldesk.app import about

#: Environment variables that explain display and locale problems and hold no secrets.
ENVIRONMENT_KEYS = (
    "LANG",
    "LC_ALL",
    "QT_QPA_PLATFORM",
    "QT_SCALE_FACTOR",
    "QT_SCREEN_SCALE_FACTORS",
    "XDG_SESSION_TYPE",
    "XDG_CURRENT_DESKTOP",
    "DESKTOP_SESSION",
    "MODELDESK_WORKSPACE",
)
#: Environment variables reported only as set or not set.
PRESENCE_KEYS = ("DISPLAY", "WAYLAND_DISPLAY", "CUDA_VISIBLE_DEVICES", "PYTHONPATH", "LD_LIBRARY_PATH")
JOB_LOGS = 10
MAX_LOG_BYTES = 5_000_000


def redact(text: str, home: str | None = None) -> str:
    """``text`` with the user's home folder written as ``~`` (it usually holds the user's name)."""
    home = home if home is not None else str(Path.home())
    if home and home not in ("/", "~"):
        text = text.replace(home, "~")
    return text


def _count(folder: Path, pattern: str) -> int:
    try:
        return sum(1 for _ in folder.glob(pattern))
    except OSError:
        return 0


def environment(paths=None, *, resources: bool = True) -> dict:
    """A JSON-ready description of this computer and this copy of ModelDesk.

    Parameters
    ----------
    paths : WorkspacePaths, optional
        The workspace, for counts (projects, models) and its disk; nothing of its content.
    resources : bool
        Include the resource view (CPUs, memory, GPUs, execution providers), which tries each
        provider and may take a few seconds.
    """
    report = {
        "created": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "app": about.summary(),
        "components": about.components(),
        "os": {
            "system": platform.system(),
            "release": platform.release(),
            "version": platform.version(),
            "libc": " ".join(platform.libc_ver()).strip(),
        },
        "environment": {key: os.environ[key] for key in ENVIRONMENT_KEYS if key in os.environ},
        "environment_set": {key: key in os.environ for key in PRESENCE_KEYS},
    }
    if paths is not None:
        report["workspace"] = {
            "models": _count(paths.models, "*"),
            "job_logs": _count(paths.log.parent / "jobs", "*.log"),
            "database_bytes": paths.db.stat().st_size if paths.db.exists() else 0,
        }
    if resources:
        try:
            from modeldesk.scheduler import detect_resources

            report["resources"] = detect_resources(paths.root if paths is not None else None)
        except Exception as exc:  # noqa: BLE001 - a report must be written even when this fails
            report["resources"] = {"error": f"{type(exc).__name__}: {exc}"}
    return report


def _log_files(paths) -> list[tuple[Path, str]]:
    """(file, name in the zip): the app log with its rotations, then the newest job logs."""
    if paths is None:
        return []
    found = [
        (p, f"logs/{p.name}") for p in sorted(paths.log.parent.glob(paths.log.name + "*")) if p.is_file()
    ]
    jobs = paths.log.parent / "jobs"
    if jobs.is_dir():
        newest = sorted((p for p in jobs.glob("*.log") if p.is_file()), key=lambda p: p.stat().st_mtime)[
            -JOB_LOGS:
        ]
        found += [(p, f"logs/jobs/{p.name}") for p in newest]
    return found


def _tail(path: Path, limit: int = MAX_LOG_BYTES) -> str:
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - limit))
        return handle.read().decode("utf-8", errors="replace")


def write_problem_report(paths, dest, *, resources: bool = True) -> Path:
    """Write the report zip to ``dest`` (written to a temporary name, then renamed) and return its path.

    Parameters
    ----------
    paths : WorkspacePaths or None
        The workspace whose logs go in (``Workspace.paths``).
    dest : path-like
        The zip to write; ``.zip`` is added when missing. Its folder must exist.
    resources : bool
        See :func:`environment`.
    """
    dest = Path(dest).expanduser()
    if dest.suffix.lower() != ".zip":
        dest = dest.with_name(dest.name + ".zip")
    if not dest.parent.is_dir():
        raise FileNotFoundError(f"{dest.parent}: folder not found; pick an existing folder for the report")
    home = str(Path.home())
    text = redact(json.dumps(environment(paths, resources=resources), indent=2, default=str), home)
    handle, staged = tempfile.mkstemp(prefix=".modeldesk-report-", suffix=".zip", dir=dest.parent)
    os.close(handle)
    try:
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("environment.json", text)
            for path, name in _log_files(paths):
                try:
                    archive.writestr(name, redact(_tail(path), home))
                except OSError as exc:
                    archive.writestr(name + ".unreadable.txt", f"{type(exc).__name__}: {exc}")
            archive.writestr(
                "README.txt",
                (
                    "ModelDesk problem report: environment.json describes the computer and the app; logs/ holds\n"
                    "the app's log files. No images, labels, models or database are included.\n"
                ),
            )
        os.replace(staged, dest)
    except BaseException:
        Path(staged).unlink(missing_ok=True)
        raise
    return dest


def default_report_name() -> str:
    """A file name for the save dialog: ``modeldesk-report-YYYYmmdd-HHMMSS.zip``."""
    return time.strftime("modeldesk-report-%Y%m%d-%H%M%S.zip")

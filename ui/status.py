"""Where a project stands, step by step, for the sidebar (Qt-free; runs in a worker thread)."""

from __future__ import annotations

#: Below this many examples a class is "too small to learn from".
MIN_PER_CLASS = 10


def small_classes(labels: dict[str, int], minimum: int = MIN_PER_CLASS) -> list[tuple[str, int]]:
    """(label, count) for the classes with fewer than ``minimum`` examples, smallest first."""
    return sorted(((n, c) for n, c in labels.items() if c < minimum), key=lambda nc: (nc[1], nc[0]))


def project_status(ws, project: str) -> dict[str, tuple[str, str]]:
    """Map each step key to ``(state, detail)``; state is ``done``, ``active``, ``warn`` or ``todo``."""
    stats = ws.stats(project)
    models = ws.list_models(project)
    samples, labeled = stats["samples"], stats["labeled"]
    status: dict[str, tuple[str, str]] = {}
    status["data"] = ("done", f"{samples:,} images") if samples else ("active", "Add images")
    if not samples:
        status["label"] = ("todo", "Nothing to label yet")
    elif labeled < samples:
        status["label"] = ("active", f"{labeled:,} of {samples:,} labeled")
    elif small_classes(stats["labels"]):
        status["label"] = ("warn", "Some classes need more examples")
    else:
        status["label"] = ("done", f"All {samples:,} labeled")
    needed = 1 if stats.get("task") == "object-detection" else 2
    trainable = len([c for c in stats["labels"].values() if c > 0]) >= needed
    if models:
        status["train"] = ("done", f"{len(models)} model{'s' if len(models) > 1 else ''}")
        metrics = models[-1].get("metrics") or {}
        score = metrics.get("accuracy", metrics.get("map50"))
        key = "Accuracy" if "accuracy" in metrics else "mAP@50"
        status["evaluate"] = ("done", f"{key} {score:.0%}" if isinstance(score, (int, float))
                              else "Latest model")
        status["deploy"] = ("active", "Export or run a service")
    else:
        status["train"] = (("active", "Ready to train") if trainable
                           else ("todo", f"Needs {needed} labeled class{'es' if needed > 1 else ''}"))
        status["evaluate"] = ("todo", "After training")
        status["deploy"] = ("todo", "After training")
    if ws.training_jobs(project):
        status["train"] = ("active", "Training now")
    return status

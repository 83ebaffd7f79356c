"""Where a project stands, step by step, for the sidebar (Qt-free; runs in a worker thread).

Whether a project can train comes from the Workspace (``training_readiness``), which asks the
training rules themselves: the sidebar never keeps its own copy of "needs two classes".
"""

from __future__ import annotations

from .wording import few_examples, learned_classes, nouns, plural, score_words, small_classes


def mark_deployed(project: str | None) -> None:
    """Remember that ``project``'s model was served or exported (the Deploy step shows as done)."""
    from .settings import settings

    if project:
        settings().setValue(f"deployed/{project}", True)


def was_deployed(project: str | None) -> bool:
    """Whether :func:`mark_deployed` was called for ``project`` (UI thread: an INI read)."""
    from .settings import settings

    return bool(project) and str(settings().value(f"deployed/{project}", "false")).lower() == "true"


def project_status(
    ws, project: str, model_id: str | None = None, deployed: bool = False
) -> dict[str, tuple[str, str]]:
    """Map each step key to ``(state, detail)`` or ``(state, detail, tooltip)``; state is ``done``,
    ``active``, ``warn`` or ``todo``; the detail is short enough for the sidebar.

    ``model_id`` is the model shown everywhere (its score is the Evaluate step's detail); the newest
    model when None or unknown.
    """
    info = ws.project_info(project)
    stats = ws.stats(project)
    models = ws.list_models(project)
    one, many = nouns(info.get("input_kind"))
    samples, labeled = stats["samples"], stats["labeled"]
    missing = ws.training_readiness(project) if samples else f"Add {many} first."
    status: dict[str, tuple] = {}
    status["data"] = ("done", plural(samples, one, many)) if samples else ("active", f"Add {many}")
    if not samples:
        status["label"] = ("todo", "Nothing to label yet")
    elif labeled < samples:
        status["label"] = ("active", f"{labeled:,} of {samples:,} labeled")
    elif missing and not models:
        status["label"] = ("warn", "Not enough to train yet", missing)
    elif small_classes(learned_classes(info, stats["labels"]), few_examples(info)):
        status["label"] = (
            "warn",
            "Some classes are small",
            "A class with few examples is learned badly: add more where the Data page says so.",
        )
    else:
        status["label"] = ("done", f"All {samples:,} labeled")
    if models:
        status["train"] = ("done", plural(len(models), "model"))
        shown = next((m for m in models if m["id"] == model_id), models[-1])
        status["evaluate"] = ("done", score_words(shown.get("metrics") or {}))
        status["deploy"] = ("done", "Served or exported") if deployed else ("active", "Try, serve or export")
    else:
        status["train"] = ("todo", "Not ready yet", missing) if missing else ("active", "Ready to train")
        status["evaluate"] = ("todo", "After training")
        status["deploy"] = ("todo", "After training")
    if ws.training_jobs(project):
        status["train"] = ("active", "Training now")
    return status

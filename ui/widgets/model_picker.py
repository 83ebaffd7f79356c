"""Filling the "which model" combo box that the Evaluate and Deploy pages share."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtWidgets import QComboBox


def model_title(model: dict) -> str:
    """A picker line: date, recipe and accuracy."""
    created = model.get("created")
    when = datetime.fromtimestamp(created).strftime("%d %b %H:%M") if isinstance(created, (int, float)) else ""
    accuracy = (model.get("metrics") or {}).get("accuracy")
    score = f" · right {accuracy:.0%}" if isinstance(accuracy, (int, float)) else ""
    return f"{when} · {model.get('template', '')}{score}".strip(" ·")


def fill_model_picker(picker: QComboBox, ws, project: str | None, keep: str | None) -> tuple[list, str | None]:
    """Put the project's models in ``picker``, newest first, without emitting its signals.

    Returns (models newest first, the id to show: ``keep`` while it still exists, else the newest).
    """
    models = list(reversed(ws.list_models(project))) if project else []
    picker.blockSignals(True)
    picker.clear()
    for model in models:
        picker.addItem(model_title(model), model["id"])
    picker.blockSignals(False)
    if not any(m["id"] == keep for m in models):
        keep = models[0]["id"] if models else None
    return models, keep

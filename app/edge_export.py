"""``modeldesk export MODEL... OUT --edge``: an edge bundle of workspace models (see
:mod:`modeldesk.deploy.edge.bundle`)."""

from __future__ import annotations

from pathlib import Path

from modeldesk.app.edge_launch import edge_name


def edge_names(ws, models: list[str]) -> dict[str, Path]:
    """Name -> artifact folder for each model: its project's name (``-2``, ``-3``... when two share one),
    or the folder's name for an artifact path; the copy in use when a compressed one was kept."""
    named: dict[str, Path] = {}
    for model in models:
        path = ws.serving_path(model)
        try:
            base = edge_name(ws.store.get_model(str(model))["project"], str(model))
        except KeyError:  # an artifact folder given by path
            base = edge_name(Path(str(model)).name, str(model))
        name, n = base, 1
        while name in named:
            n += 1
            name = f"{base}-{n}"
        named[name] = path
    return named


def export_edge(ws, models: list[str], out) -> dict:
    """Write the edge bundle; returns ``{"path", "size_bytes", "models": [{"name", "model"}]}``."""
    from modeldesk.deploy.edge.bundle import build_edge_bundle

    named = edge_names(ws, models)
    path = build_edge_bundle(named, out)
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return {
        "path": str(path),
        "size_bytes": size,
        "edge": True,
        "models": [{"name": name, "model": model} for name, model in zip(named, models)],
    }

"""The Label page of a project whose samples are rows of a table: the table itself, its target column
edited in place and the latest model's suggestion beside it, instead of one sample at a time."""

from __future__ import annotations

from ...kinds import sample_table


def show_table(page, data: dict) -> bool:
    """Show the kind's table on ``page`` (a :class:`~modeldesk.ui.pages.label.page.LabelPage`) when
    the project's input kind has one; True when it did (the page then shows nothing else)."""
    table_class = sample_table(data["info"].get("input_kind"))
    for widget in (page.order_box, page.order_label):  # the table has its own order: its columns
        widget.setVisible(table_class is None)
    if table_class is None:
        return False
    table = getattr(page, "table", None)
    if table is None:
        page.table = table = table_class(page, labeling=True)
        table.changed.connect(page.status_changed.emit)
        table.changed.connect(lambda: _count(page, table))
        table.loaded.connect(lambda: _count(page, table))
        page.stack.addWidget(table)
    page.table_stats = dict(data["stats"])
    page.stack.setCurrentWidget(table)
    table.show_project(page.project, (data["stats"]["samples"], data["model_id"]))
    _count(page, table)
    return True


def _count(page, table) -> None:
    """The header's "N of M rows labeled", kept up as cells are typed."""
    rows = table.model.rows
    if rows:
        labeled = sum(row["target"] is not None for row in rows)
        total = len(rows)
    else:
        labeled, total = page.table_stats["labeled"], page.table_stats["samples"]
    page.header.set_subtitle(f"{labeled:,} of {total:,} rows labeled")

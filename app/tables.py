"""Tables: the Workspace calls on a tabular project's columns, target and rows.

:class:`TableCalls` is mixed into :class:`~modeldesk.app.workspace.Workspace`. A row is a sample whose
stored content is a JSON object of its cells (``datasets/table_files.py``) without the target column,
whose value is the sample's label. The project remembers its target column and the column types the
user corrected (project settings), and the trainers get both (:func:`train_options`).

    ws.create_project("titanic", "tabular-classification", target_column="Survived")
    ws.import_data("titanic", "passengers.csv")          # the target column's cells become labels
    ws.table_columns("titanic")   # [{"name", "type", "detected", "target"}, ...]
    ws.table_rows("titanic", offset=0, limit=100)        # [{"id", "split", "cells", "target"}, ...]
    ws.set_column_type("titanic", "Pclass", "category")
    ws.set_table_target("titanic", "Sex")                # another column to predict
    ws.predict_rows(model_id, [{"Sex": "female", "Age": 30}])
"""

from __future__ import annotations

import logging

from modeldesk.errors import UserError

log = logging.getLogger(__name__)

READ_BATCH = 2000  # rows read at a time when every row is needed


def _target(store, project) -> str | None:
    from modeldesk.datasets.table_columns import TARGET_SETTING

    return store.setting(project, TARGET_SETTING)


def remember_target(store, project, label_column: str | None, path=None) -> str | None:
    """The label column an import of ``path`` into ``project`` uses: the one given (remembered as the
    project's target when it has none yet), else the remembered one, else a column of the table named
    like one to predict (``label``, ``target``, ``class``, ``y``); None for projects that are not tables."""
    from modeldesk.datasets.kinds import sample_kind
    from modeldesk.datasets.table_columns import TARGET_SETTING
    from modeldesk.datasets.table_files import default_target

    if not sample_kind(project.kind).columns:
        return label_column
    target = _target(store, project)
    if label_column is None and target is None and path is not None:
        label_column = default_target(path)
    if label_column and target is None:
        store.set_setting(project, TARGET_SETTING, label_column)
        return label_column
    if label_column and label_column != target:
        raise UserError(
            f"project {project.name!r} predicts {target!r}; to predict {label_column!r} instead, choose it as "
            "the target first (train --target, or the Data page)"
        )
    return target


def _all_rows(store, project):
    """(sample, row dict) of every sample of the project, in id order."""
    from modeldesk.datasets.table_files import parse_row

    offset = 0
    while True:
        chunk = store.samples(project, offset=offset, limit=READ_BATCH)
        if not chunk:
            return
        for sample in chunk:
            if sample.text is not None:
                yield sample, parse_row(sample.text)
        offset += len(chunk)


def train_options(store, project) -> dict:
    """What a table trainer needs beyond the samples: ``target_column`` and the user's
    ``column_types`` (empty for a project that is not a table)."""
    from modeldesk.datasets.kinds import sample_kind
    from modeldesk.datasets.table_columns import SETTING

    if not sample_kind(project.kind).columns:
        return {}
    target = _target(store, project)
    return {"target_column": target, "column_types": store.setting(project, SETTING, {})}


def table_files(kind: str, files) -> list:
    """The ``files`` when every one is a table (.csv, .tsv, .xlsx, .parquet) and a model of input ``kind``
    reads rows; else an empty list (the files are read another way)."""
    from pathlib import Path

    from modeldesk.datasets.kinds import SAMPLE_KINDS, sample_kind
    from modeldesk.datasets.table_files import TABLE_EXTS

    files = [Path(f) for f in files]
    if kind not in SAMPLE_KINDS or not sample_kind(kind).columns:
        return []
    return files if files and all(f.suffix.lower() in TABLE_EXTS for f in files) else []


class TableCalls:
    """Workspace calls on tables (mixed into ``Workspace``; uses its ``store``)."""

    def table_target(self, project) -> str | None:
        """The column a tabular project predicts (None until one is chosen)."""
        return _target(self.store, self.project(project))

    def table_columns(self, project, *, sample_rows: int = 5000) -> list[dict]:
        """The columns of a tabular project in table order: ``{"name", "type", "detected", "target"}``
        (``type``: what training uses, the user's correction or else ``detected``; the target column,
        whose cells are the labels, last with ``target`` True)."""
        from modeldesk.datasets.table_columns import SETTING, detect_types

        project = self.project(project)
        rows = [row for _, row in zip(range(sample_rows), (r for _, r in _all_rows(self.store, project)))]
        detected = detect_types(rows)
        corrections = self.store.setting(project, SETTING, {})
        columns = [
            {"name": name, "type": corrections.get(name, kind), "detected": kind, "target": False}
            for name, kind in detected.items()
        ]
        target = _target(self.store, project)
        if target is not None:
            labels = [s.labels[0] for s in self.store.samples(project, unlabeled=False, limit=sample_rows)]
            kind = detect_types([{target: label} for label in labels])[target]
            if kind != "number" or not _predicts_values(project):
                kind = "category"  # a classifier's labels are classes, even 0 and 1
            columns.append({"name": target, "type": kind, "detected": kind, "target": True})
        return columns

    def set_column_type(self, project, column: str, kind: str | None) -> None:
        """Correct a column's type (``number``, ``category``, ``text``, ``date`` or ``identifier``, which
        leaves it out); None goes back to the detected type. The next training uses it."""
        from modeldesk.datasets.table_columns import SETTING, TYPES

        project = self.project(project)
        if kind is not None and kind not in TYPES:
            raise UserError(f"unknown column type {kind!r}; choose one of: {', '.join(TYPES)}")
        names = {c["name"] for c in self.table_columns(project)}
        if column not in names:
            raise UserError(f"project {project.name!r} has no column {column!r}")
        corrections = dict(self.store.setting(project, SETTING, {}))
        if kind is None:
            corrections.pop(column, None)
        else:
            corrections[column] = kind
        self.store.set_setting(project, SETTING, corrections)

    def table_rows(self, project, *, offset: int = 0, limit: int | None = 200, split=None, unlabeled=None):
        """Rows of a tabular project: ``{"id", "split", "cells", "target"}`` (``cells``: column -> value,
        None when empty; ``target``: the label, None when the row has none), in id order."""
        from modeldesk.datasets.table_files import parse_row

        samples = self.store.samples(
            self.project(project), offset=offset, limit=limit, split=split, unlabeled=unlabeled
        )
        return [
            {
                "id": s.id,
                "split": s.split,
                "cells": parse_row(s.text) if s.text else {},
                "target": s.labels[0] if s.labels else None,
            }
            for s in samples
        ]

    def set_table_target(self, project, column: str) -> dict:
        """Make ``column`` the one to predict: its cells become the rows' labels (rows without a value
        stay unlabeled, left out of training) and the previous target's labels go back into the rows
        as cells. Returns ``{"target", "labeled", "unlabeled"}``."""
        from modeldesk.datasets.table_columns import TARGET_SETTING
        from modeldesk.datasets.table_files import (
            as_number,
            canonical,
            numeric_target,
            row_text,
            value_splits,
        )

        project = self.project(project)
        old = _target(self.store, project)
        if old == column:
            stats = self.store.stats(project)
            return {
                "target": column,
                "labeled": stats["labeled"],
                "unlabeled": stats["samples"] - stats["labeled"],
            }
        pairs = list(_all_rows(self.store, project))
        if not any(column in row for _, row in pairs):
            names = sorted({c for _, row in pairs for c in row})
            shown = ", ".join(repr(c) for c in names[:12]) + (", ..." if len(names) > 12 else "")
            raise UserError(f"project {project.name!r} has no column {column!r}; its columns are: {shown}")
        texts, labels = {}, {}
        for sample, row in pairs:
            if old is not None:
                row[old] = sample.labels[0] if sample.labels else None
            labels[sample.id] = canonical(row.pop(column, None))
            texts[sample.id] = row_text(row)
        self.store.set_texts(texts)
        if numeric_target(labels.values()):  # spread every value range over train/val/test
            unassigned = {
                s.id: s.content_hash
                for s, _ in pairs
                if s.split is None and as_number(labels[s.id]) is not None
            }
            keyed = [(h, float(labels[i])) for i, h in unassigned.items()]
            by_hash = value_splits(keyed)
            self.store.set_splits({i: by_hash[h] for i, h in unassigned.items()})
        self.store.set_labels(labels)
        self.store.set_setting(project, TARGET_SETTING, column)
        labeled = sum(label is not None for label in labels.values())
        log.info(
            "project %r now predicts %r (%d of %d rows labeled)", project.name, column, labeled, len(labels)
        )
        return {"target": column, "labeled": labeled, "unlabeled": len(labels) - labeled}

    def predict_table(self, model, path) -> list[dict]:
        """The model's answer for every row of a table file (CSV, TSV, xlsx, Parquet), each with ``file``
        (``name:row``) added; the target column, if the table has it, is ignored."""
        from pathlib import Path

        from modeldesk.datasets.items import ImportReport
        from modeldesk.datasets.table_files import table_rows

        path = Path(path)
        _columns, rows = table_rows(path, ImportReport())
        rows = list(rows)
        if not rows:
            raise UserError(f"{path}: the table holds no rows")
        names = [f"{path.name}:{i}" for i in range(2, len(rows) + 2)]
        answers = self.predict_rows(model, rows)
        return [{"file": name, **answer} for name, answer in zip(names, answers)]

    def model_columns(self, model) -> list[dict]:
        """The columns a table model reads, as its card names them: ``{"name", "type", "values"}``
        (``values``: a category's values seen in training, empty for other types and older models)."""
        from modeldesk.deploy import load_artifact

        card = load_artifact(self.model_path(model)).card
        columns = (card.get("preprocessing") or {}).get("columns") or []
        return [
            {"name": c["name"], "type": c["type"], "values": list(c.get("values") or [])} for c in columns
        ]

    def predict_rows(self, model, rows: list[dict]) -> list[dict]:
        """The model's answers for rows given as dicts of cells (a form, a CSV upload), as the service
        gives them."""
        from modeldesk.deploy import Predictor

        return Predictor(self.model_path(model)).predict(list(rows))


def _predicts_values(project) -> bool:
    """Whether the project's task answers a number (its trainer's card target is ``value``)."""
    from modeldesk.trainers.tasks import get_trainer

    return getattr(get_trainer(project.task), "target", "label") == "value"

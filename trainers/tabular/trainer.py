"""The tabular trainers: a row of named columns -> a class (classification) or a number (regression).

``train`` reads every labeled row, detects the columns' types (``datasets/table_columns.py``; the
project's corrections come in the samples' order as ``column_types``), leaves identifier-like columns
out with a warning, fits the encoding (``encoding.py``) on the training and validation rows, picks a
model among the template's candidates by cross-validation on those rows within the time budget,
measures it on the test rows (with an interval), then refits the encoding and the model on every
labeled row and exports one ONNX graph from the named columns to the answer, checked against the
training path.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from modeldesk.datasets.table_columns import detect_types
from modeldesk.datasets.table_files import parse_row
from modeldesk.deploy.artifact import new_model_id, save_artifact
from modeldesk.deploy.runtime import create_session
from modeldesk.errors import UserError
from modeldesk.trainers.base import PARITY_TOLERANCE, TaskTrainer, evaluation_split, split_counts
from modeldesk.trainers.label_samples import check_label_samples
from modeldesk.trainers.metrics import accuracy_interval, classification_report
from modeldesk.trainers.progress import stage_reporter
from modeldesk.trainers.tabular import models
from modeldesk.trainers.tabular.encoding import Encoder, encode, fit_columns, merge
from modeldesk.trainers.tabular.search import search
from modeldesk.trainers.tabular.values import regression_report
from modeldesk.trainers.tasks import TrainResult
from modeldesk.trainers.templates import get_template
from modeldesk.trainers.versions import versions

log = logging.getLogger(__name__)

MIN_ROWS = 10  # a regression needs at least this many rows with a value
USABLE = 0.85  # share of the budget the search may plan to use (the rest: refit, export)
PROBE_ROWS = 64  # rows the exported graph is checked on
SCORING_ROWS_PER_S = 2000.0  # rows a table model scores a second through the Predictor (2 busy cores: ~6000)


def _rows(samples) -> list[dict]:
    rows = []
    for sample in samples:
        try:
            rows.append(parse_row(sample.source))
        except ValueError:
            raise UserError(f"row {sample.key[:12]} is not a stored table row; re-import the table") from None
    return rows


def _values(samples) -> np.ndarray:
    bad = []
    values = []
    for sample in samples:
        try:
            values.append(float(sample.label))
        except (TypeError, ValueError):
            bad.append(sample.label)
    if bad:
        raise UserError(
            f"the column to predict holds {bad[0]!r}, which is not a number: a regression predicts numbers "
            "(make a tabular-classification project to predict classes)"
        )
    y = np.array(values)
    if not np.all(np.isfinite(y)):
        raise UserError("the column to predict holds a value that is not a finite number")
    return y


class TabularClassificationTrainer(TaskTrainer):
    """Tables -> one class per row (see the module docstring)."""

    classes = True

    def check(self, samples) -> None:
        self._checked(samples)

    def _checked(self, samples) -> tuple[list, list[str], list[str]]:
        if self.classes:
            return check_label_samples(samples, "row")
        labeled = [s for s in samples if s.label not in (None, "")]
        if len(labeled) < MIN_ROWS:
            raise UserError(
                f"only {len(labeled)} rows have a value to predict: a regression needs at least {MIN_ROWS}"
            )
        _values(labeled)
        return labeled, [], []

    def estimate(self, samples, template, cache_dir, *, device: str = "auto", time_budget=None) -> dict:
        template = get_template(template)
        budget = float(time_budget or template.time_budget_s)
        labeled = [s for s in samples if s.label not in (None, "")]
        columns = len(parse_row(labeled[0].source)) if labeled else 0
        seconds = _fit_seconds(template.candidates, len(labeled), columns, template.cv_folds)
        eta = min(seconds, USABLE * budget) + _fixed_seconds(len(labeled), columns)
        return {
            "eta_s": round(eta, 1),
            "plan": {
                "rows": len(labeled),
                "columns": columns,
                "candidates": len(template.candidates),
                # what the app's scoring of every row after training may expect until it has timed one
                "devices": [{"name": "cpu", "items_per_s": SCORING_ROWS_PER_S}],
            },
        }

    def train(
        self,
        samples,
        template,
        out_dir,
        cache_dir,
        *,
        time_budget=None,
        device: str = "auto",
        progress=None,
        should_stop=None,
        model_id=None,
        column_types: dict | None = None,
        target_column: str | None = None,
    ) -> TrainResult:
        """Train, evaluate and export a table model (see the module docstring)."""
        started = time.monotonic()
        template = get_template(template)
        budget = float(time_budget or template.time_budget_s)
        labeled, labels, warnings = self._checked(samples)
        estimate = self.estimate(labeled, template, cache_dir, time_budget=budget)
        marks: dict = {}
        report = stage_reporter(
            started,
            estimate["eta_s"],
            progress,
            should_stop,
            on_stage=lambda stage: marks.setdefault(stage, round(time.monotonic() - started, 2)),
        )
        report("Reading rows", 0.0)
        rows = _rows(labeled)
        classes = len(labels) if self.classes else 0
        if classes:
            index = {label: i for i, label in enumerate(labels)}
            y = np.array([index[s.label] for s in labeled])
        else:
            y = _values(labeled)
        types = detect_types(rows)
        for column, kind in (column_types or {}).items():
            if column in types:
                types[column] = kind
        left_out = [c for c, kind in types.items() if kind == "identifier"]
        if left_out:
            warnings.append(
                f"column {', '.join(map(repr, left_out))} looks like an identifier (a different value in every "
                "row), which says nothing about new rows: it was left out"
            )
        split = np.array([s.split for s in labeled])
        train_idx, val_idx, test_idx = (np.flatnonzero(split == name) for name in ("train", "val", "test"))
        fit_idx = np.concatenate([train_idx, val_idx])
        eval_idx, where = evaluation_split(
            test_idx,
            val_idx,
            fit_idx,
            warnings,
            "no test rows: the metrics are measured on the training rows",
        )
        if where == "val":
            fit_idx = train_idx

        report("Encoding columns", 0.05)
        codes = fit_columns([rows[i] for i in fit_idx], types)
        if not codes:
            raise UserError("no column can be learned from: every column is empty, constant or an identifier")
        X_fit = encode(codes, [rows[i] for i in fit_idx])
        X_eval = encode(codes, [rows[i] for i in eval_idx])

        deadline = started + USABLE * budget
        best, trials, dropped = search(
            template.candidates,
            X_fit,
            y[fit_idx],
            classes,
            folds=template.cv_folds,
            deadline=deadline,
            on_trial=lambda i, n, trial: report("Tuning", 0.1 + 0.6 * (i + 1) / n, trial),
        )
        if dropped:
            warnings.append(f"the time budget allowed {len(trials)} of {len(template.candidates)} settings")

        report("Evaluating", 0.75)
        model = models.fit(best, X_fit, y[fit_idx], classes)
        answers = models.predict(model, X_eval, classes)
        if classes:
            metrics = classification_report(y[eval_idx], answers, labels)
            metrics["interval"] = accuracy_interval(
                int(round(metrics["accuracy"] * metrics["n"])), metrics["n"]
            )
        else:
            metrics = regression_report(y[eval_idx], answers)
            for worst in metrics["worst"]:  # the rows themselves, for the Evaluate page
                position = int(eval_idx[worst["index"]])
                worst.update(key=labeled[position].key, cells=rows[position])
        metrics["split"] = where
        metrics["search"] = {"trials": trials, "best": best}
        metrics["importance"] = _importance(model, codes, [rows[i] for i in eval_idx], y[eval_idx], classes)
        metrics["columns"] = types

        report("Training on every row", 0.85)
        codes_all = fit_columns(rows, types)
        X_all = encode(codes_all, rows)
        final = models.fit(best, X_all, y, classes)
        width = X_all.shape[1]
        head, output = models.head_model(final, best, width, classes)
        graph = merge(codes_all, head, [output])

        report("Exporting", 0.95)
        probe = np.arange(min(PROBE_ROWS, len(rows)))
        expected = models.predict(final, X_all[probe], classes)
        card = {
            "id": model_id or new_model_id(),
            "task": template.task,
            "target": "label" if classes else "value",
            "labels": labels or ["value"],  # a regression's one output
            "preprocessing": {
                "kind": "row",
                "columns": [_column_card(c) for c in codes_all],
                "types": types,
                "target": target_column,
            },
            "template": template.name,
            "head": {"kind": best["model"], "params": dict(best)},
            "metrics": metrics,
            "versions": versions(),
            "input_name": codes_all[0].input,
            "output_name": output,
            "warnings": warnings,
            "training": {
                "samples": split_counts(train_idx, val_idx, test_idx),
                "seconds": round(time.monotonic() - started, 2),
                "skipped": [],
            },
        }
        parity = _parity(graph, card, [rows[i] for i in probe], expected, output)
        metrics["export_max_abs_diff"] = parity
        if parity > PARITY_TOLERANCE * (1 if classes else max(1.0, float(np.abs(y).max()))):
            raise RuntimeError(f"exported table graph disagrees with the training path by {parity:.2e}")
        artifact_dir = save_artifact(out_dir, graph, card)
        headline = ("accuracy", "macro_f1") if classes else ("mae", "rmse", "r2")
        report("Done", 1.0, {k: metrics[k] for k in headline})
        return TrainResult(
            artifact_dir=Path(artifact_dir),
            metrics=metrics,
            warnings=warnings,
            skipped=[],
            plan={
                **estimate["plan"],
                "stages_began_s": marks,
                "actual_s": round(time.monotonic() - started, 2),
            },
        )


class TabularRegressionTrainer(TabularClassificationTrainer):
    """Tables -> one number per row."""

    classes = False
    target = "value"  # the card's: one number a row
    evaluator = "modeldesk.trainers.tabular.values:evaluate_values"


def _column_card(code) -> dict:
    """A column as the card names it; a category's seen values too (the try-it form and the console
    offer them)."""
    card = {"name": code.name, "type": code.type, "input": code.input}
    if code.type == "category":
        card["values"] = [v for v in code.values if v != ""]
    return card


def _parity(graph, card, rows, expected, output) -> float:
    """Largest difference between the exported graph, fed as the service feeds it, and the training path."""
    from modeldesk.deploy.row_input import RowInput

    if not rows:
        return 0.0
    row_input = RowInput(card)
    session = create_session(graph.SerializeToString())
    got = session.run([output], row_input.feeds([row_input.load(r) for r in rows], ""))[0]
    return float(np.max(np.abs(np.asarray(got, np.float64).reshape(expected.shape) - expected)))


def _importance(model, codes, rows, y, classes, repeats: int = 3, seed: int = 0) -> list[dict]:
    """How much the held-out score drops when one column's cells are shuffled among the rows
    (permutation importance), largest first: accuracy points, or for values the rise in MAE."""
    if len(rows) < 5:
        return []
    rng = np.random.default_rng(seed)

    def score(X):
        answers = models.predict(model, X, classes)
        if classes:
            return float(np.mean(np.argmax(answers, axis=1) == y))
        return -float(np.mean(np.abs(answers - y)))

    encoder = Encoder(codes)
    base = score(encoder.transform(rows))
    out = []
    for code in codes:
        drops = []
        for _ in range(repeats):
            cells = [row.get(code.name) for row in rows]
            order = rng.permutation(len(rows))
            shuffled = [{**row, code.name: cells[j]} for row, j in zip(rows, order)]
            drops.append(base - score(encoder.transform(shuffled)))
        out.append({"column": code.name, "drop": round(float(np.mean(drops)), 4)})
    return sorted(out, key=lambda d: -d["drop"])


def _fit_seconds(candidates, n: int, columns: int, folds: int) -> float:
    """A rough time for the search and the two final fits on this machine (measured on 2 busy cores)."""
    total = 0.0
    for candidate in candidates:
        per_fit = (
            0.01 + 2e-6 * n * columns if candidate["model"] == "linear" else 0.15 + 4e-6 * n * columns * 10
        )
        total += per_fit * (folds + 2)
    return total


def _fixed_seconds(n: int, columns: int) -> float:
    """Encoding, importance and export: a few passes over the rows."""
    return 1.0 + 2e-5 * n * columns

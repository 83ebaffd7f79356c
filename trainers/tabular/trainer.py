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
from dataclasses import dataclass

import numpy as np

from modeldesk.datasets.table_columns import detect_types
from modeldesk.datasets.table_files import parse_row
from modeldesk.deploy.runtime import create_session
from modeldesk.errors import UserError
from modeldesk.trainers.base import PARITY_TOLERANCE, Run, TaskTrainer, evaluation_split
from modeldesk.trainers.label_samples import check_label_samples
from modeldesk.trainers.metrics import accuracy_interval, classification_report
from modeldesk.trainers.tabular import models
from modeldesk.trainers.tabular.encoding import Encoder, encode, fit_columns, merge
from modeldesk.trainers.tabular.search import search
from modeldesk.trainers.tabular.values import regression_report
from modeldesk.trainers.templates import get_template

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


@dataclass
class _Table:
    """The labeled rows, their answers (class indices or values), the columns' types, and the
    encoding fitted on the rows the model is fitted on (``fit_idx``); ``eval_idx`` are measured on."""

    rows: list[dict]
    y: np.ndarray
    types: dict
    codes: list  # the encoding of the fitting rows
    fit_idx: np.ndarray
    eval_idx: np.ndarray
    where: str  # the split measured on
    X_fit: np.ndarray
    X_eval: np.ndarray


@dataclass
class _Model:
    """The search's choice, then (``refit``) the encoding and the model fitted on every row."""

    best: dict
    trials: list
    codes: list | None = None
    X_all: np.ndarray | None = None
    model: object = None
    output: str = ""  # the graph's output name (``build_graph``)


class TabularClassificationTrainer(TaskTrainer):
    """Tables -> one class per row (see the module docstring and ``TaskTrainer.train``)."""

    classes = True
    train_options = {"column_types": None, "target_column": None}
    stage_at = {"Evaluating": 0.75, "Exporting": 0.95}
    threads = 1  # its fits and its encoding graph run on one thread (models.py)

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

    def prepare(self, run: Run, samples) -> tuple[list, list[str]]:
        labeled, labels, warnings = self._checked(samples)
        run.warnings += warnings
        return labeled, labels or ["value"]  # a regression's one output

    def features(self, run: Run) -> _Table:
        """The rows, their answers and the columns' types; the encoding fitted on the rows the model is
        fitted on (0 .. 0.1)."""
        run.report("Reading rows", 0.0)
        labeled = run.labeled
        rows = _rows(labeled)
        if self.classes:
            index = {label: i for i, label in enumerate(run.labels)}
            y = np.array([index[s.label] for s in labeled])
        else:
            y = _values(labeled)
        types = detect_types(rows)
        for column, kind in (run.options["column_types"] or {}).items():
            if column in types:
                types[column] = kind
        left_out = [c for c, kind in types.items() if kind == "identifier"]
        if left_out:
            run.warnings.append(
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
            run.warnings,
            "no test rows: the metrics are measured on the training rows",
        )
        if where == "val":
            fit_idx = train_idx

        run.report("Encoding columns", 0.05)
        codes = fit_columns([rows[i] for i in fit_idx], types)
        if not codes:
            raise UserError("no column can be learned from: every column is empty, constant or an identifier")
        return _Table(
            rows,
            y,
            types,
            codes,
            fit_idx,
            eval_idx,
            where,
            X_fit=encode(codes, [rows[i] for i in fit_idx]),
            X_eval=encode(codes, [rows[i] for i in eval_idx]),
        )

    def fit(self, run: Run) -> _Model:
        """The template's candidate chosen by cross-validation on the fitting rows (0.1 .. 0.7)."""
        table, classes = run.data, self._classes(run)
        best, trials, dropped = search(
            run.template.candidates,
            table.X_fit,
            table.y[table.fit_idx],
            classes,
            folds=run.template.cv_folds,
            deadline=run.deadline(USABLE),
            on_trial=lambda i, n, trial: run.report("Tuning", 0.1 + 0.6 * (i + 1) / n, trial),
        )
        if dropped:
            run.warnings.append(
                f"the time budget allowed {len(trials)} of {len(run.template.candidates)} settings"
            )
        return _Model(best, trials)

    def measure(self, run: Run) -> dict:
        """The chosen candidate fitted on the fitting rows, measured on the held-out ones (0.75)."""
        table, fitted, classes = run.data, run.fitted, self._classes(run)
        model = models.fit(fitted.best, table.X_fit, table.y[table.fit_idx], classes)
        answers = models.predict(model, table.X_eval, classes)
        y_eval = table.y[table.eval_idx]
        if classes:
            metrics = classification_report(y_eval, answers, run.labels)
            metrics["interval"] = accuracy_interval(
                int(round(metrics["accuracy"] * metrics["n"])), metrics["n"]
            )
        else:
            metrics = regression_report(y_eval, answers)
            for worst in metrics["worst"]:  # the rows themselves, for the Evaluate page
                position = int(table.eval_idx[worst["index"]])
                worst.update(key=run.labeled[position].key, cells=table.rows[position])
        metrics["split"] = table.where
        metrics["search"] = {"trials": fitted.trials, "best": fitted.best}
        eval_rows = [table.rows[i] for i in table.eval_idx]
        metrics["importance"] = _importance(model, table.codes, eval_rows, y_eval, classes)
        metrics["columns"] = table.types
        return metrics

    def refit(self, run: Run) -> _Model:
        """The encoding and the chosen candidate fitted again on every labeled row (0.85)."""
        table, fitted, classes = run.data, run.fitted, self._classes(run)
        run.report("Training on every row", 0.85)
        fitted.codes = fit_columns(table.rows, table.types)
        fitted.X_all = encode(fitted.codes, table.rows)
        fitted.model = models.fit(fitted.best, fitted.X_all, table.y, classes)
        return fitted

    def build_graph(self, run: Run):
        fitted = run.fitted
        head, fitted.output = models.head_model(
            fitted.model, fitted.best, fitted.X_all.shape[1], self._classes(run)
        )
        return merge(fitted.codes, head, [fitted.output])

    def check_export(self, run: Run, model) -> None:
        """The graph, fed as the service feeds it, against the training path on the first rows."""
        table, fitted, classes = run.data, run.fitted, self._classes(run)
        probe = np.arange(min(PROBE_ROWS, len(table.rows)))
        expected = models.predict(fitted.model, fitted.X_all[probe], classes)
        parity = _parity(
            model, self.card_fields(run), [table.rows[i] for i in probe], expected, fitted.output
        )
        run.metrics["export_max_abs_diff"] = parity
        if parity > PARITY_TOLERANCE * (1 if classes else max(1.0, float(np.abs(table.y).max()))):
            raise RuntimeError(f"exported table graph disagrees with the training path by {parity:.2e}")

    def card_fields(self, run: Run) -> dict:
        fitted = run.fitted
        return {
            "preprocessing": {
                "kind": "row",
                "columns": [_column_card(c) for c in fitted.codes],
                "types": run.data.types,
                "target": run.options["target_column"],
            },
            "head": {"kind": fitted.best["model"], "params": dict(fitted.best)},
            "input_name": fitted.codes[0].input,
            "output_name": fitted.output,
        }

    def summary(self, metrics: dict) -> dict:
        headline = ("accuracy", "macro_f1") if self.classes else ("mae", "rmse", "r2")
        return {k: metrics[k] for k in headline}

    def result_plan(self, run: Run) -> dict:
        return {**run.estimate["plan"], "stages_began_s": run.marks}

    def _classes(self, run: Run) -> int:
        """The number of classes, 0 for a regression (as ``trainers.tabular.models`` takes it)."""
        return len(run.labels) if self.classes else 0


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


#: one fit of a trees candidate, in the priors' units (app.calibration): (seconds, seconds per row x column).
#: The accurate recipe's 35 trees fits (and 42 linear ones) on titanic's 12 columns took 0.76 s for 200
#: rows and 1.19 s for 400 at probe slowdown 0.93-0.98 (bench/estimates.py --stages, 2026-12-04): 5e-6 s a
#: cell and 0.01 s a fit, 8e-6 and 0.015 in those units (it was 0.15 + 4e-5 a cell: 5x too long)
TREES_FIT_S = (0.015, 8e-6)
#: the same for a linear candidate: the fast recipe's 42 linear fits took 0.10 s for 200 rows and 0.15 s
#: for 400 (0.0035 s a fit and 7e-7 a cell in those units; it was 0.01 + 2e-6 a cell)
LINEAR_FIT_S = (0.004, 1e-6)
#: encoding the columns, importance and export, in the priors' units: "Encoding columns" took 0.9-1.1 s for
#: 200-400 rows at probe slowdown 0.93-0.98 (1.3-1.6 s in those units)
ENCODING_S = 1.5


def _fit_seconds(candidates, n: int, columns: int, folds: int) -> float:
    """A rough time for the search and the two final fits, in the priors' units (app.calibration)."""
    total = 0.0
    for candidate in candidates:
        per_fit = (
            LINEAR_FIT_S[0] + LINEAR_FIT_S[1] * n * columns
            if candidate["model"] == "linear"
            else TREES_FIT_S[0] + TREES_FIT_S[1] * n * columns
        )
        total += per_fit * (folds + 2)
    return total


def _fixed_seconds(n: int, columns: int) -> float:
    """Encoding, importance and export: a few passes over the rows."""
    return ENCODING_S + 2e-5 * n * columns

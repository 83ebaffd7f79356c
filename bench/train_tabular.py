"""Tabular benchmark: each template on titanic (Survived), penguins (species) and penguins (body_mass_g,
regression), next to scikit-learn's HistGradientBoosting written plainly, trained on the same rows in
the same run.

Held-out part: a fixed 25% of the rows chosen by a hash of the row's id column (``PassengerId``,
``row_id``); nothing is tuned on it. The templates go the way a user's table goes: a project with the
target column, the training rows imported from a CSV, ``train`` (which keeps its own test split of
those rows and refits on all of them), then ``evaluate`` on a CSV of the held-out rows. The reference
reads numbers as numbers and the other columns as categories (ordinal codes, HistGradientBoosting's
native categorical splits), drops the id and the free-text columns (more than 255 values), and keeps
scikit-learn's defaults. Reported: held-out accuracy with its 90% Wilson interval and macro F1, or MAE,
RMSE and R² with 90% bootstrap intervals; training time; latency per row (the exported model through
the Predictor: one row per call, median, and a batch of every held-out row, per row).

``--repeats K`` repeats everything on K different fixed held-out parts (hash salts 0..K-1) and adds the
mean of each figure, so that one lucky split is not read as a gain.

    python bench/train_tabular.py [--templates fast accurate] [--repeats 1]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

BENCHDATA = Path("/work/shared/benchdata")
#: (name, folder, target column, id column, task)
CASES = (
    ("titanic", "titanic", "Survived", "PassengerId", "tabular-classification"),
    ("penguin species", "penguins", "species", "row_id", "tabular-classification"),
    ("penguin body mass", "penguins", "body_mass_g", "row_id", "tabular-regression"),
)
MISSING = {"", "na", "nan", "null", "none", "?"}


def read_table(path: Path) -> tuple[list[str], list[dict]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def split_rows(rows: list[dict], id_column: str, salt: int) -> tuple[list[dict], list[dict]]:
    """(training rows, held-out rows): a row is held out when the hash of its id falls in the first quarter."""

    def held(row) -> bool:
        return int(hashlib.sha1(f"{salt}:{row[id_column]}".encode()).hexdigest(), 16) % 4 == 0

    return [r for r in rows if not held(r)], [r for r in rows if held(r)]


def write_csv(path: Path, columns: list[str], rows: list[dict]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _missing(value) -> bool:
    return value is None or str(value).strip().lower() in MISSING


def reference(columns, train, held, target, id_column, regression: bool) -> dict:
    """HistGradientBoosting with scikit-learn's defaults on numbers and ordinal-coded categories (on one
    thread, as the exported models are timed: OpenMP threads fighting over two busy cores cost it 100x)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        return _reference(columns, train, held, target, id_column, regression)


def _reference(columns, train, held, target, id_column, regression: bool) -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    train = [r for r in train if not _missing(r[target])]
    held = [r for r in held if not _missing(r[target])]
    features, categorical, codes = [], [], {}
    for column in columns:
        if column in (target, id_column):
            continue
        values = [r[column] for r in train if not _missing(r[column])]
        try:
            [float(v) for v in values]
            features.append(column)
            categorical.append(False)
        except ValueError:
            levels = sorted(set(values))
            if len(levels) > 255:  # free text or codes: no category to split on
                continue
            codes[column] = {v: i for i, v in enumerate(levels)}
            features.append(column)
            categorical.append(True)

    def matrix(rows):
        X = np.full((len(rows), len(features)), np.nan)
        for i, row in enumerate(rows):
            for j, column in enumerate(features):
                value = row[column]
                if _missing(value):
                    continue
                X[i, j] = codes[column].get(value, np.nan) if column in codes else float(value)
        return X

    X, X_held = matrix(train), matrix(held)
    started = time.monotonic()
    if regression:
        y = np.array([float(r[target]) for r in train])
        model = HistGradientBoostingRegressor(categorical_features=categorical, random_state=0).fit(X, y)
    else:
        y = np.array([r[target] for r in train])
        model = HistGradientBoostingClassifier(categorical_features=categorical, random_state=0).fit(X, y)
    seconds = time.monotonic() - started
    answers = model.predict(X_held)
    one = []
    for i in range(min(len(X_held), 50)):
        began = time.perf_counter()
        model.predict(X_held[i : i + 1])
        one.append(time.perf_counter() - began)
    figures = _figures([r[target] for r in held], list(answers), regression)
    return {**figures, "train_s": seconds, "ms_per_row": 1000 * statistics.median(one)}


def _figures(truth, answers, regression: bool) -> dict:
    from modeldesk.trainers.metrics import accuracy_interval, classification_report
    from modeldesk.trainers.tabular.values import regression_report

    if regression:
        report = regression_report([float(t) for t in truth], [float(a) for a in answers])
        return {k: report[k] for k in ("mae", "rmse", "r2", "interval", "n")}
    labels = sorted(set(map(str, truth)) | set(map(str, answers)))
    proba = np.zeros((len(answers), len(labels)))
    for i, answer in enumerate(answers):
        proba[i, labels.index(str(answer))] = 1.0
    report = classification_report([str(t) for t in truth], proba, labels)
    correct = int(round(report["accuracy"] * report["n"]))
    return {
        "accuracy": report["accuracy"],
        "macro_f1": report["macro_f1"],
        "interval": accuracy_interval(correct, report["n"]),
        "n": report["n"],
    }


def template_run(ws, case, template: str, train_csv: Path, held_csv: Path, held_rows, columns) -> dict:
    from modeldesk.deploy import Predictor

    _name, _folder, target, _id, task = case
    project = f"{template.replace('/', '-')}-{time.monotonic_ns()}"
    ws.create_project(project, task, target_column=target)
    ws.import_data(project, train_csv)
    started = time.monotonic()
    trained = ws.train(project, template)
    seconds = time.monotonic() - started
    evaluated = ws.evaluate(trained["model"], held_csv)
    regression = task == "tabular-regression"
    if regression:
        figures = {k: evaluated[k] for k in ("mae", "rmse", "r2", "interval", "n")}
    else:
        from modeldesk.trainers.metrics import accuracy_interval

        figures = {k: evaluated[k] for k in ("accuracy", "macro_f1", "n")}
        figures["interval"] = accuracy_interval(int(round(figures["accuracy"] * figures["n"])), figures["n"])
    predictor = Predictor(ws.model_path(trained["model"]), device="cpu", threads=1)
    rows = [{c: r[c] for c in columns if c != target} for r in held_rows]
    one = []
    for row in rows[:50]:
        began = time.perf_counter()
        predictor.predict([row])
        one.append(time.perf_counter() - began)
    began = time.perf_counter()
    predictor.predict(rows)
    batch = (time.perf_counter() - began) / max(len(rows), 1)
    return {
        **figures,
        "train_s": seconds,
        "ms_per_row": 1000 * statistics.median(one),
        "batch_ms_per_row": 1000 * batch,
        "chosen": trained["metrics"].get("search", {}).get("best")
        if isinstance(trained.get("metrics"), dict)
        else None,
        "warnings": trained.get("warnings", []),
    }


def _headline(result: dict, regression: bool) -> str:
    if regression:
        i = result["interval"]["r2"] if "r2" in result["interval"] else {"low": math.nan, "high": math.nan}
        return (
            f"R² {result['r2']:.3f} [{i['low']:.3f}, {i['high']:.3f}]  MAE {result['mae']:.0f}  "
            f"RMSE {result['rmse']:.0f}"
        )
    i = result["interval"]
    return (
        f"acc {result['accuracy']:.3f} [{i['low']:.3f}, {i['high']:.3f}]  macro-F1 {result['macro_f1']:.3f}"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", nargs="+", default=["fast", "accurate"])
    parser.add_argument("--repeats", type=int, default=1, help="held-out parts (hash salts 0..K-1)")
    args = parser.parse_args(argv)

    from modeldesk.app.workspace import Workspace

    means: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws", cleanup=False, tie_jobs=True)
        try:
            for salt in range(args.repeats):
                print(f"\nheld-out part {salt} (25% of the rows by a hash of the id; salt {salt})")
                print(f"{'case':18} {'model':34} {'held-out':52} {'train s':>8} {'ms/row':>7} {'batch':>7}")
                for case in CASES:
                    name, folder, target, id_column, task = case
                    regression = task == "tabular-regression"
                    columns, rows = read_table(BENCHDATA / folder / "data.csv")
                    train, held = split_rows(rows, id_column, salt)
                    base = Path(tmp) / f"{folder}-{target}-{salt}"
                    base.mkdir()
                    train_csv = write_csv(base / "train.csv", columns, train)
                    held_csv = write_csv(base / "held.csv", columns, held)
                    held_rows = [r for r in held if not _missing(r[target])]
                    results = [
                        (
                            "HistGradientBoosting (plain)",
                            reference(columns, train, held, target, id_column, regression),
                        )
                    ]
                    for variant in args.templates:
                        template = f"{task}/{variant}"
                        results.append(
                            (
                                template,
                                template_run(ws, case, template, train_csv, held_csv, held_rows, columns),
                            )
                        )
                    for label, result in results:
                        batch = result.get("batch_ms_per_row")
                        print(
                            f"{name:18} {label:34} {_headline(result, regression):52} {result['train_s']:8.1f} "
                            f"{result['ms_per_row']:7.2f} {'' if batch is None else f'{batch:7.3f}'}"
                        )
                        key = "r2" if regression else "accuracy"
                        means.setdefault((name, label), []).append(result[key])
                    n = results[0][1]["n"]
                    print(f"{'':18} ({len(train)} training rows, {n} held-out rows with a {target})")
            if args.repeats > 1:
                print(f"\nmean over {args.repeats} held-out parts (accuracy, or R² for body mass)")
                for (name, label), values in means.items():
                    print(
                        f"{name:18} {label:34} {statistics.mean(values):.3f}  ({', '.join(f'{v:.3f}' for v in values)})"
                    )
        finally:
            ws.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

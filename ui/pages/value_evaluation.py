"""The Evaluate page's parts for table models: for a model that predicts a number, MAE, RMSE and R² in
plain words, a predicted-against-true plot and the rows it got furthest wrong; for any table model,
which columns matter most (permutation importance on held-out rows), each in one sentence."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableWidget, QTableWidgetItem

from ..charts import BarChart
from ..page import card
from ..scatter_chart import ScatterPlot
from ..widgets.columns import Columns


def number(value: float) -> str:
    """A figure as people write it: 312, 3.4, 0.052."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _between(report: dict, key: str, shown=number) -> str:
    interval = (report.get("interval") or {}).get(key)
    if not interval:
        return ""
    return f" (likely between {shown(interval['low'])} and {shown(interval['high'])})"


def value_words(report: dict, noun: str = "rows") -> tuple[str, str, str]:
    """(hero, detail, advice) of a regression report: ``mae``, ``rmse``, ``r2``, ``n``, ``interval``."""
    mae, rmse, r2, n = report["mae"], report["rmse"], report["r2"], report.get("n")
    hero = f"Off by {number(mae)} on average"
    on = f"On {n} {noun} it never saw during training" if n else f"On {noun} it never saw during training"
    detail = (
        f"{on}: a typical answer is {number(mae)} away from the true value{_between(report, 'mae')} "
        f"(mean absolute error, MAE). Counting big misses more, the error is {number(rmse)} (RMSE)"
        f"{_between(report, 'rmse')}. R² = {r2:.2f}{_between(report, 'r2', lambda v: f'{v:.2f}')}: "
        f"the model explains {max(r2, 0):.0%} of how much the values vary (1 is perfect, 0 is no better "
        "than always answering the average)."
    )
    if r2 < 0.3:
        advice = (
            "It is barely better than guessing the average: more rows or more telling columns would help."
        )
    elif rmse > 2 * mae:
        advice = (
            "A few rows are far off (RMSE well above MAE): look at them below, a typo in a value is common."
        )
    else:
        advice = "The dots below should hug the diagonal; rows far from it are the ones it gets wrong."
    if n and n < 20:
        advice += f" With only {n} rows to test on, these figures are rough."
    return hero, detail, advice


def importance_sentence(item: dict, regression: bool) -> str:
    """One sentence on one column's permutation importance (``{"column", "drop"}``)."""
    column, drop = item["column"], item["drop"]
    if drop <= 0:
        return f"“{column}”: the model hardly uses it; shuffling its values changes nothing."
    if regression:
        return f"“{column}”: shuffling its values makes the answers {number(drop)} further off on average."
    return f"“{column}”: shuffling its values costs {drop * 100:.1f} points of accuracy."


class TableEvaluation:
    """The two cards; ``importance_frame`` and ``values_frame`` go on the page, ``set_report`` fills them
    (and hides each one the report has nothing for)."""

    MAX_COLUMNS = 8  # the columns listed by importance

    def __init__(self):
        self.importance = BarChart(("Importance",))
        self.importance_words = QLabel()
        self.importance_words.setWordWrap(True)
        self.importance_frame, layout = card(
            "Which columns matter most",
            "How much worse the model does on the held-out rows when one column's values are shuffled "
            "among them.",
        )
        self.importance_note = QLabel()
        self.importance_note.setObjectName("Muted")
        layout.addWidget(self.importance_note)
        layout.addWidget(self.importance)
        layout.addWidget(self.importance_words)

        self.plot = ScatterPlot()
        plot_card, plot_layout = card(
            "Predicted against true", "One dot a held-out row; perfect answers lie on the dashed line."
        )
        plot_layout.addWidget(self.plot, 1)
        self.worst = QTableWidget(0, 3)
        self.worst.setHorizontalHeaderLabels(["True", "Predicted", "Row"])
        self.worst.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.worst.verticalHeader().hide()
        self.worst.horizontalHeader().setSectionResizeMode(2, QHeaderView.Stretch)
        self.worst.setMinimumHeight(220)
        worst_card, worst_layout = card(
            "Furthest off", "The held-out rows whose answer was furthest from the truth."
        )
        worst_layout.addWidget(self.worst, 1)
        self.values_frame = Columns(min_width=900)  # one under the other on a small window
        self.values_frame.add(plot_card, 1)
        self.values_frame.add(worst_card, 1)

    def set_report(self, report: dict | None) -> None:
        report = report or {}
        regression = "r2" in report
        self.values_frame.setVisible(regression)
        items = list(report.get("importance") or [])[: self.MAX_COLUMNS]
        self.importance_frame.setVisible(bool(items))
        if items:  # accuracy points as they are; a value's error relative to the column that matters most
            top = max(max(i["drop"] for i in items), 1e-9) if regression else 1.0
            self.importance.set_rows([(i["column"], (min(max(i["drop"], 0.0) / top, 1.0),)) for i in items])
            self.importance_note.setText(
                "Bars: the rise in error, against the column that matters most."
                if regression
                else "Bars: the accuracy lost, in points."
            )
            self.importance_words.setText("\n".join(importance_sentence(i, regression) for i in items[:5]))
        if regression:
            self.plot.set_points(
                report.get("points") or [(w["true"], w["predicted"]) for w in report["worst"]]
            )
            self._show_worst(report.get("worst") or [])

    def _show_worst(self, worst: list[dict]) -> None:
        self.worst.setRowCount(len(worst))
        for row, item in enumerate(worst):
            cells = item.get("cells") or {}
            described = ", ".join(f"{k}: {v}" for k, v in cells.items() if v not in (None, ""))
            for column, text in enumerate((number(item["true"]), number(item["predicted"]), described)):
                cell = QTableWidgetItem(text)
                cell.setToolTip(described)
                self.worst.setItem(row, column, cell)
        self.worst.resizeColumnToContents(0)
        self.worst.resizeColumnToContents(1)

"""Plain words for a tags (multi-label) model's evaluation (the Evaluate page shows them when the
report has ``micro_f1`` and no single-label accuracy)."""

from __future__ import annotations


def tags_words(report: dict, noun: str) -> tuple[str, str, str]:
    """(headline, detail, advice) for a tags model's report."""
    n = report.get("n") or 0
    exact = report.get("exact_match")
    micro = report.get("micro_f1") or 0.0
    hero = (
        f"Every tag right on {exact:.0%} of the {noun}"
        if isinstance(exact, (int, float))
        else f"Tags right {micro:.0%}"
    )
    detail = (
        f"on {n} {noun} it never saw during training · tag F1 {micro:.2f} of 1 (finding each tag where it "
        "belongs and giving none where it does not)."
    )
    if n and n < 20:
        detail += f" With only {n} to test on these numbers are rough."
    per_label = report.get("per_label") or {}
    scored = {tag: row.get("f1") for tag, row in per_label.items() if isinstance(row.get("f1"), (int, float))}
    if scored and min(scored.values()) < 1.0:
        worst = min(scored, key=scored.get)
        advice = (
            f"It is least reliable on <b>{worst}</b> (F1 {scored[worst]:.2f}): more {noun} with and "
            "without that tag would help."
        )
    else:
        advice = f"It gave every tag right on the test {noun}."
    return hero, detail, advice

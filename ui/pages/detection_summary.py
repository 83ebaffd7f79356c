"""Plain words for a detector's evaluation (the Evaluate page shows them when the report has ``map50``)."""

from __future__ import annotations


def detection_words(report: dict) -> tuple[str, str, str]:
    """(headline, detail, advice) for a detector's report."""
    recall, precision = report.get("recall") or 0.0, report.get("precision") or 0.0
    n, boxes = report.get("n") or 0, report.get("boxes") or 0
    hero = f"Finds {round(recall * 100)} of 100 objects; {round(precision * 100)} of 100 boxes it draws are right"
    detail = (
        f"on {n} photos ({boxes} objects) it never saw during training, at confidence "
        f"{report.get('threshold', 0):.0%} or more · box score mAP50 {report.get('map50') or 0:.2f} of 1 "
        f"(how well its boxes match yours, at any confidence), mAP 0.5:0.95 {report.get('map') or 0:.2f} "
        "(the same, asking for boxes that sit tighter on the object)."
    )
    if n and n < 20:
        detail += f" With only {n} test photos these numbers are rough."
    misses, false = report.get("misses") or 0, report.get("false_boxes") or 0
    if not misses and not false:
        advice = "It found every object on the test photos and drew no false box."
    else:
        advice = (
            f"It missed <b>{misses}</b> object(s) and drew <b>{false}</b> false box(es). The photos "
            "below show them first; more labeled photos like those help most."
        )
    return hero, detail, advice


def mistake_caption(mistake: dict) -> tuple[str, str]:
    """(caption, tooltip) of one listed photo: a classifier's wrong label or a detector's errors."""
    if "misses" in mistake:
        misses, false = len(mistake.get("misses") or []), len(mistake.get("false_boxes") or [])
        parts = [f"{misses} missed"] * bool(misses) + [f"{false} false"] * bool(false)
        return " · ".join(parts), (
            f"{misses} object(s) not found, {false} box(es) where there is nothing\nClick to check its boxes."
        )
    score = mistake.get("score")
    tip = f"Labeled '{mistake.get('true')}', the model said '{mistake.get('predicted')}'"
    if isinstance(score, (int, float)):
        tip += f" ({score:.0%} sure)"
    return f"{mistake.get('true')} → {mistake.get('predicted')}", tip + "\nClick to check its label."

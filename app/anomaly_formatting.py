"""Plain words for anomaly detection results: "catches N of M defects, raises a false alarm on K of L"."""

from __future__ import annotations

#: the keys of an anomaly model's metrics that the train and evaluate commands report
HEADLINE_KEYS = (
    "auroc",
    "pixel_auroc",
    "catch_rate",
    "false_alarm_rate",
    "caught",
    "defects",
    "false_alarms",
    "good",
    "per_kind",
    "best_f1_threshold",
    "false_alarm_promise",
)


def _rate(value) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def catch_sentence(m: dict) -> str:
    """One sentence at the model's threshold, in the words the Evaluate page uses."""
    parts = []
    if m.get("defects"):
        parts.append(f"catches {m['caught']} of {m['defects']} defects")
    if m.get("good"):
        parts.append(f"raises a false alarm on {m['false_alarms']} of {m['good']} good parts")
    return ", ".join(parts) or "no labeled photos to measure on"


def promise_words(report: dict) -> str:
    """One sentence on the false-alarm rate the model's threshold can promise on unseen good parts, or
    on the lowest it can when too few good photos were held back ("" for a model that does not say)."""
    from modeldesk.trainers.anomaly.scoring import promise_sentence

    plan = report.get("false_alarm_promise")
    return promise_sentence(plan) if isinstance(plan, dict) else ""


def anomaly_metrics_text(m: dict) -> str:
    """The CLI's text for an anomaly model's metrics."""
    lines = [catch_sentence(m)]
    scores = [f"image AUROC {m['auroc']:.3f}" if m.get("auroc") is not None else "image AUROC n/a"]
    if m.get("pixel_auroc") is not None:
        scores.append(f"pixel AUROC {m['pixel_auroc']:.3f}")
    scores.append(f"catch rate {_rate(m.get('catch_rate'))}, false alarms {_rate(m.get('false_alarm_rate'))}")
    lines.append(", ".join(scores))
    for kind, c in (m.get("per_kind") or {}).items():
        lines.append(f"  {kind}: caught {c['caught']} of {c['defects']}")
    if promise_words(m):
        lines.append(promise_words(m))
    return "\n".join(lines)


def counts_from_images(images: list[dict], threshold: float) -> dict:
    """The figures at ``threshold`` from a report's ``images`` (``defect``, ``score``, ``kind`` each):
    what the Evaluate page's slider recomputes without running the model again."""
    defects = [m for m in images if m.get("defect")]
    goods = [m for m in images if not m.get("defect")]
    caught = sum(1 for m in defects if m["score"] >= threshold)
    alarms = sum(1 for m in goods if m["score"] >= threshold)
    per_kind: dict = {}
    for m in defects:
        entry = per_kind.setdefault(str(m.get("kind")), {"caught": 0, "defects": 0})
        entry["defects"] += 1
        entry["caught"] += int(m["score"] >= threshold)
    return {
        "threshold": threshold,
        "caught": caught,
        "defects": len(defects),
        "false_alarms": alarms,
        "good": len(goods),
        "catch_rate": caught / len(defects) if defects else None,
        "false_alarm_rate": alarms / len(goods) if goods else None,
        "per_kind": dict(sorted(per_kind.items())),
    }


def verdict(image: dict, threshold: float) -> str:
    """``"missed"``, ``"false alarm"``, ``"caught"`` or ``"good"`` for one photo at ``threshold``."""
    flagged = image["score"] >= threshold
    if image.get("defect"):
        return "caught" if flagged else "missed"
    return "false alarm" if flagged else "good"


def answer_label(prediction: dict, labels) -> str:
    """The label a prediction is saved under. An anomaly model only says good or not: flagging a photo
    labeled with a defect kind (``crack``) is its right answer, so it is saved as that kind."""
    if "anomalous" not in prediction:
        return prediction["label"]
    kinds = [label for label in labels or () if str(label).lower() not in ("good", "ok", "normal", "pass")]
    return (kinds[0] if kinds else prediction["label"]) if prediction["anomalous"] else prediction["label"]

"""Words for people: every Qt-free helper that turns numbers, plans and results into short text.

Nothing here imports Qt or reads the workspace, so each helper is a plain function a test can call.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from modeldesk.app.workspace import FEW_EXAMPLES

#: Below this many examples a class is "too small to learn from" (a warning, not a refusal): the task
#: registry's rule (``trainers.tasks.FEW_EXAMPLES``); a project's own is its info's ``few_examples``.
MIN_PER_CLASS = FEW_EXAMPLES

TIME_LIMITS = (
    (None, "Recipe default"),
    (60, "1 minute"),
    (120, "2 minutes"),
    (300, "5 minutes"),
    (900, "15 minutes"),
    (1800, "30 minutes"),
    (3600, "1 hour"),
)
STATE_WORDS = {
    "queued": "Waiting",
    "pending": "Waiting",
    "running": "Training",
    "done": "Finished",
    "failed": "Failed",
    "cancelled": "Cancelled",
    "canceled": "Cancelled",
}
#: What happened to a compression candidate (its ``code``), in two words.
VERDICTS = {
    "kept": "✓ Kept",
    "reference": "Original",
    "less_accurate": "Less accurate",
    "not_faster": "Not faster",
    "slower": "Slower",
    "as_fast_less_accurate": "Less accurate",
    "untested": "Not checked",
    "skipped": "Skipped",
    "failed": "Failed",
}


def nouns(input_kind: str | None) -> tuple[str, str]:
    """``("photo", "photos")`` for images, ``("clip", "clips")`` for sounds... (``ui/kinds.py``)."""
    from .kinds import ui_kind

    kind = ui_kind(input_kind)
    return kind.one, kind.many


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``plural(1, "box", "boxes")`` -> ``1 box``; ``plural(3, "class", "classes")`` -> ``3 classes``."""
    return f"{n:,} {noun if n == 1 else (nouns or noun + 's')}"


# -- time ------------------------------------------------------------------------------------------


def describe_duration(seconds) -> str:
    """``75`` -> ``about 1 min``; short and rounded the way people say it."""
    if seconds is None:
        return "unknown"
    seconds = float(seconds)
    if seconds < 60:
        return f"about {max(5, round(seconds / 5) * 5)} s"
    if seconds < 3600:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def format_eta(seconds) -> str:
    """'about 3 min left', 'about 12 s left', '' when unknown."""
    if seconds is None or seconds < 0:
        return ""
    if seconds < 60:
        return f"about {max(1, round(seconds))} s left"
    if seconds < 3600:
        return f"about {round(seconds / 60)} min left"
    return f"about {seconds / 3600:.1f} h left"


def short_time(value) -> str:
    """A timestamp (epoch seconds or ISO text) as ``02 Dec 17:07``."""
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value).strftime("%d %b %H:%M")
    text = str(value or "")
    try:
        return datetime.fromisoformat(text).astimezone().strftime("%d %b %H:%M")
    except ValueError:
        return text


# -- hardware and plans ------------------------------------------------------------------------------


def describe_hardware(resources: dict) -> str:
    """One line a person can read: ``Intel Xeon, 2 cores, 23 GB memory, no GPU found``."""
    cpu = resources.get("cpu") or {}
    model = " ".join(
        str(cpu.get("model") or "Unknown CPU")
        .replace("(R)", "")
        .replace("(TM)", "")
        .replace(" Processor", "")
        .replace(" CPU", "")
        .split()
    )
    cores = cpu.get("physical_cores") or cpu.get("logical_cores") or "?"
    memory = (resources.get("memory") or {}).get("total_bytes") or 0
    parts = [model, f"{cores} cores", f"{memory / 1e9:.0f} GB memory"]
    gpus = resources.get("gpus") or []
    if gpus:
        parts.extend(
            f"{g.get('name', 'GPU')} ({(g.get('memory_total_bytes') or 0) / 1e9:.0f} GB)" for g in gpus
        )
    else:
        parts.append("no GPU found")
    return ", ".join(parts)


def plan_device_words(plan: dict | None) -> str:
    """Which devices a plan uses, in words ("on the CPU", "on NVIDIA H200")."""
    if not plan:
        return ""
    names, workers = [], 0
    for device in plan.get("devices") or []:
        if isinstance(device, dict):
            name = device.get("name") or device.get("device") or device.get("kind")
        else:
            name = str(device)
        if name and str(name).startswith("dask:"):
            workers += 1  # a cluster worker's device, named by its address
        elif name and str(name).lower() != "auto":
            names.append("the CPU" if str(name).lower() == "cpu" else str(name))
    if workers:
        names.append(f"{workers} cluster worker{'s' if workers > 1 else ''}")
    return f"on {' + '.join(dict.fromkeys(names))}" if names else ""


def template_title(template: dict) -> str:
    """The recipe's display title: its ``title``, else the last part of its name (``.../fast`` -> ``Fast``)."""
    return template.get("title") or template["name"].rsplit("/", 1)[-1].replace("-", " ").capitalize()


# -- data ---------------------------------------------------------------------------------------------


def few_examples(info: dict) -> int:
    """The project's "too few examples" count (its task's, else the registry's)."""
    return int(info.get("few_examples") or MIN_PER_CLASS)


def learned_classes(info: dict, labels: dict[str, int]) -> dict[str, int]:
    """The classes whose size training depends on: all of them, except for an anomaly project, whose
    model learns from the good photos alone (its defect photos only test it, and are rare by nature)."""
    if info.get("annotation") == "defect":
        return {name: count for name, count in labels.items() if name == "good"}
    return labels


def counted_classes(info: dict, labels: dict[str, int]) -> dict[str, int]:
    """The classes the Data page's bars show: all of them, except an anomaly project's empty defect
    keys (the catch-all "defect" stands ready on the Label page), which read as missing photos next to
    the defect kinds that have some."""
    if info.get("annotation") != "defect":
        return labels
    return {name: count for name, count in labels.items() if count or name == "good"}


def small_classes(labels: dict[str, int], minimum: int = MIN_PER_CLASS) -> list[tuple[str, int]]:
    """(label, count) for the classes with fewer than ``minimum`` examples, smallest first."""
    return sorted(((n, c) for n, c in labels.items() if c < minimum), key=lambda nc: (nc[1], nc[0]))


def small_class_warning(labels: dict[str, int], minimum: int = MIN_PER_CLASS, noun: str = "photos") -> str:
    """One readable sentence about the classes that are too small ("" when none are)."""
    small = small_classes(labels, minimum)
    if not small:
        return ""
    names = ", ".join(name for name, _ in small[:3])
    if len(small) > 3:
        names += f" and {len(small) - 3} more classes"
    low, high = small[0][1], small[-1][1]
    if len(small) == 1:
        counts = f"{low} {'is' if low == 1 else 'are'}"
    else:  # one sentence for all of them, however many classes are small
        counts = f"{low} each are" if low == high else f"{low} to {high} each are"
    return f"Add more {noun} of {names}: {counts} too few to learn from. Aim for at least {minimum} each."


def merge_reports(reports: list[dict]) -> dict:
    """Sum several import reports (one per dropped path) into one."""
    total = {
        "added": 0,
        "duplicates": 0,
        "boxes": 0,
        "failed": [],
        "failed_total": 0,
        "failed_summary": [],
        "warnings": [],
        "stopped": False,
    }
    for report in reports:
        total["added"] += int(report.get("added", 0))
        total["duplicates"] += int(report.get("duplicates", 0))
        total["boxes"] += int(report.get("boxes", 0))
        total["failed"] += list(report.get("failed", []))
        total["failed_total"] += int(report.get("failed_total", len(report.get("failed", []))))
        total["failed_summary"] += list(report.get("failed_summary", []))
        total["warnings"] += list(report.get("warnings", []))
        total["stopped"] = total["stopped"] or bool(report.get("stopped"))
    return total


def summary_line(report: dict, noun: str = "image") -> str:
    """'120 images added, 3 already there, 2 refused.'"""
    parts = [f"{plural(report['added'], noun)} added"]
    if report["duplicates"]:
        parts.append(f"{report['duplicates']:,} already in the project (merged)")
    refused = report.get("failed_total", len(report["failed"]))
    if refused:
        parts.append(f"{refused:,} refused")
    line = ", ".join(parts) + "."
    if report.get("stopped"):
        line = "Stopped: " + line
    return line


# -- evaluation ------------------------------------------------------------------------------------------


def headline(accuracy: float | None, n: int | None = None) -> str:
    """``0.97`` -> ``Right 97 times out of 100``; with few test photos, the real counts."""
    if not isinstance(accuracy, (int, float)):
        return "No accuracy measured yet"
    if n and n < 100:
        return f"Right {round(accuracy * n)} times out of {n}"
    return f"Right {round(accuracy * 100)} times out of 100"


def per_class_rows(report: dict) -> list[tuple[str, tuple[float, float]]]:
    """``(label, (precision, recall))`` rows from the report's ``per_class`` (a dict or a list), or a
    tags model's ``per_label``; for segmentation, whose ``per_class`` is each class's IoU,
    ``(IoU, share of its pixels found)``."""
    per_class = report.get("per_class") or report.get("per_label") or {}
    items = (
        per_class.items()
        if isinstance(per_class, dict)
        else ((entry.get("label"), entry) for entry in per_class)
    )
    found = report.get("per_class_accuracy") or {}
    return [
        (str(label), (float(values.get("precision", 0.0)), float(values.get("recall", 0.0))))
        if isinstance(values, dict)
        else (str(label), (float(values or 0.0), float(found.get(label) or 0.0)))  # segmentation: IoU
        for label, values in items
    ]


def most_confused(report: dict) -> tuple[str, str, int] | None:
    """The (true, predicted, count) pair the model mixes up most, or None when it makes no mistake."""
    labels, matrix = report.get("labels") or [], report.get("confusion") or []
    best = None
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if i != j and value and (best is None or value > best[2]):
                best = (labels[i], labels[j], int(value))
    return best


def score_words(metrics: dict) -> str:
    """The sidebar's one figure for a model, the same the Evaluate page's headline gives: how often it is
    right, for a detector how many objects of 100 it finds, for an anomaly detector how many defects it
    catches, for a tags model on how many examples it gets every tag right, for a segmentation model how
    much its outlines overlap the true ones (mean IoU)."""
    if isinstance(metrics.get("catch_rate"), (int, float)):  # its accuracy mixes defects and good parts
        return f"Catches {metrics['catch_rate']:.0%}"
    if isinstance(metrics.get("accuracy"), (int, float)):
        return f"Right {metrics['accuracy']:.0%}"
    if isinstance(metrics.get("recall"), (int, float)):
        return f"Finds {round(metrics['recall'] * 100)} of 100"
    if isinstance(metrics.get("exact_match"), (int, float)):
        return f"All tags right {metrics['exact_match']:.0%}"
    if isinstance(metrics.get("micro_f1"), (int, float)):
        return f"Tags right {metrics['micro_f1']:.0%}"
    if isinstance(metrics.get("miou"), (int, float)):  # a segmentation model: the headline's mean IoU
        return f"Overlap {metrics['miou']:.0%}"
    return "Latest model"


def result_sentence(metrics: dict, many: str) -> str:
    """What a finished run measured, as " Right 93% of the time on photos it never saw during
    training." ("" when it measured nothing)."""
    if isinstance(metrics.get("accuracy"), (int, float)):
        return f" {headline(metrics['accuracy'], metrics.get('n'))} on {many} it never saw during training."
    score = score_words(metrics)  # a detector's or a tags model's own figure
    return f" {score} on {many} it never saw during training." if score != "Latest model" else ""


def model_title(model: dict, recipe_titles: dict | None = None) -> str:
    """A picker line: ``Accurate, 02 Dec 17:07, 99%`` (recipe in words, when, how often right)."""
    template = str(model.get("template") or "")
    recipe = (recipe_titles or {}).get(template) or template_title({"name": template or "model"})
    created = model.get("created")
    parts = [recipe, short_time(created) if isinstance(created, (int, float)) else ""]
    accuracy = (model.get("metrics") or {}).get("accuracy")
    if isinstance(accuracy, (int, float)):
        parts.append(f"{accuracy:.0%}")
    if (model.get("metrics") or {}).get("origin") == "keep_up":  # app.keep_up.ORIGIN
        parts.append("updated while you label")
    return ", ".join(p for p in parts if p)


# -- deploy ------------------------------------------------------------------------------------------------


def human_size(n_bytes) -> str:
    """``1_234_567`` -> ``1.2 MB``."""
    if not isinstance(n_bytes, (int, float)):
        return "–"
    for unit in ("bytes", "KB", "MB", "GB"):
        if n_bytes < 1000 or unit == "GB":
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1000
    return ""


def verdict(candidate: dict) -> str:
    """What happened to a compression candidate, in two words (from its ``code``)."""
    if candidate.get("kept"):
        return VERDICTS["kept"]
    return VERDICTS.get(str(candidate.get("code") or ""), "–")


def why_words(candidate: dict) -> str:
    """Why a compression candidate was not kept, in plain words (from its ``code``; "" when kept).

    The technical reason stays in the candidate's ``reason`` (shown in a tooltip)."""
    code, reason = str(candidate.get("code") or ""), str(candidate.get("reason") or "")
    if candidate.get("kept"):
        return ""
    detail = reason.split(":", 1)[1].strip() if ":" in reason else reason
    bound = candidate.get("loss_bound")
    if code == "less_accurate" and isinstance(bound, (int, float)):
        return (
            f"May lose up to {bound:.1f} points of {candidate.get('score') or 'accuracy'}: more than allowed"
        )
    return {
        "reference": "The full-size model: slower than the kept copy",
        "slower": "Accurate enough, but slower than the kept copy",
        "as_fast_less_accurate": "About as fast as the kept copy, but less accurate",
        "less_accurate": "Lost more accuracy than allowed",
        "untested": "Not checked: a slower version already failed the accuracy check, and the check "
        "stops there so that its confidence holds for the kept copy",
        "not_faster": "Not faster than the original on this computer",
        "skipped": f"Not tried: {detail}" if detail else "Not tried",
        "failed": "Could not be built on this computer (details in the log)",
    }.get(code, reason)


def top_scores(prediction: dict, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` best ``(label, score)`` of a prediction, best first."""
    scores = prediction.get("scores") or {prediction.get("label"): prediction.get("score", 0.0)}
    return sorted(((str(label), float(score)) for label, score in scores.items()), key=lambda x: -x[1])[:k]


def found_words(boxes) -> str:
    """``2 raccoon, 1 dog`` or ``Nothing found`` for a detector's boxes."""
    if not boxes:
        return "Nothing found"
    counts: dict = {}
    for box in boxes:
        counts[box["label"]] = counts.get(box["label"], 0) + 1
    return ", ".join(f"{n} {label}" for label, n in counts.items())


#: Words a non-specialist may meet, explained in a tooltip wherever they appear.
GLOSSARY = {
    "cross-validation": "Cross-validation: the model is trained several times, each time keeping a different "
    "part of your examples aside to check it, so the choice does not depend on luck.",
    "regularise": "Regularising: holding the model back from memorising your examples, so it does better on "
    "new ones.",
    "f1": "F1: one number that balances how often an answer is right with how many of a class are found.",
    "map": "mAP: how well the boxes match the objects, from 0 to 1, averaged over the classes (mAP50: a box "
    "counts when it covers the object at least half; mAP 0.5:0.95 asks for closer boxes).",
    "onnx": "ONNX: a standard file format for models that many programs and devices can run.",
    "fp32": "fp32: the model's numbers at full precision (the original size).",
    "8-bit": "8-bit: the model's numbers stored in 8 bits instead of 32: smaller and usually faster.",
    "neural network": "A small neural network: a more flexible learner than a straight line between classes.",
}


def explain(text: str) -> str:
    """The glossary lines for the terms in ``text`` ("" when it has none), for a tooltip."""
    lowered = text.lower()
    return "\n".join(line for term, line in GLOSSARY.items() if term in lowered)


def file_name(path) -> str:
    """The last part of a path or a source string (``a/b/c.jpg`` -> ``c.jpg``)."""
    return Path(str(path)).name or str(path)

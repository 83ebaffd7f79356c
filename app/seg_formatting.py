"""Plain words for segmentation results: mean IoU, pixel accuracy and how well each class is found."""

from __future__ import annotations

#: the keys of a segmentation model's metrics that the train and evaluate commands report
HEADLINE_KEYS = (
    "miou",
    "miou_interval",
    "pixel_accuracy",
    "pixel_accuracy_interval",
    "per_class_accuracy",
    "per_class_interval",
    "held_out_miou",
    "photos",
)


def seg_headline(m: dict) -> str:
    """One line: "mean IoU 0.612 (0.58-0.64), pixels right 88.1% on N photos"."""
    low, high = m.get("miou_interval") or (None, None)
    interval = f" ({low:.3f}-{high:.3f})" if low is not None else ""
    return (
        f"mean IoU {m['miou']:.3f}{interval}, pixels right {m['pixel_accuracy']:.1%} "
        f"on {m.get('n', '?')} photos"
    )


def seg_metrics_text(m: dict) -> str:
    """The CLI's text for a segmentation model's metrics: the headline, then IoU per class."""
    lines = [seg_headline(m)]
    accuracy = m.get("per_class_accuracy") or {}
    for label, iou in (m.get("per_class") or {}).items():
        found = accuracy.get(label)
        lines.append(
            f"  {label}: IoU {'n/a' if iou is None else f'{iou:.3f}'}"
            + ("" if found is None else f", {found:.1%} of its pixels found")
        )
    return "\n".join(lines)


def area_words(areas: dict, shown: int = 4) -> str:
    """``{"road": 0.41, "sky": 0.2, ...}`` -> ``road 41%, sky 20%, ... of the photo`` (largest first)."""
    biggest = sorted(((share, label) for label, share in areas.items() if share > 0), reverse=True)
    words = ", ".join(f"{label} {share:.0%}" for share, label in biggest[:shown])
    more = f" and {len(biggest) - shown} more" if len(biggest) > shown else ""
    return f"{words}{more} of the photo" if words else "no class found"

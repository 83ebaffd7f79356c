"""The evaluation report's charts as inline SVG: the confusion matrix and per-class bars."""

from __future__ import annotations

import unicodedata
from html import escape

__all__ = ["confusion_svg", "bars_svg"]

MAX_BAR_ROWS = 40


def _e(value) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return escape(str(value), quote=True)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _units(char: str) -> int:
    """Display width of a character in 'narrow' units (CJK and other wide characters count 2)."""
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _width(text: str) -> int:
    return sum(_units(ch) for ch in text)


def _short(label, limit=18) -> str:
    """``label`` cut to at most ``limit`` display units, with an ellipsis when cut."""
    text = str(label)
    if _width(text) <= limit:
        return text
    out, used = [], 1
    for ch in text:
        if used + _units(ch) > limit:
            break
        out.append(ch)
        used += _units(ch)
    return "".join(out) + "\u2026"


def confusion_svg(confusion: list, labels: list) -> str:
    """Heatmap: rows = true, columns = predicted; colour = share of the row (blue right, red wrong)."""
    c = len(labels)
    cell = max(10, min(48, int(560 / max(c, 1))))
    names = [_short(lab, 16) for lab in labels]
    label_px = min(150, 12 + 7 * max((_width(s) for s in names), default=1))
    left, top = label_px + 26, int(label_px * 0.72) + 30
    width, height = left + c * cell + int(label_px * 0.65) + 12, top + c * cell + 12  # room for slanted names
    font = 12 if cell >= 20 else 9
    out = [
        f'<svg class="confusion" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="Confusion matrix">',
        f'<text x="{left + c * cell / 2:.1f}" y="14" text-anchor="middle" font-size="13" '
        f'fill="#6b7280">model said</text>',
        f'<text x="12" y="{top + c * cell / 2:.1f}" text-anchor="middle" font-size="13" fill="#6b7280" '
        f'transform="rotate(-90 12 {top + c * cell / 2:.1f})">true label</text>',
    ]
    for j, name in enumerate(names):
        x, y = left + j * cell + cell / 2 + 4, top - 6
        out.append(
            f'<text x="{x:.1f}" y="{y}" font-size="{font}" transform="rotate(-50 {x:.1f} {y})">'
            f"<title>{_e(labels[j])}</title>{_e(name)}</text>"
        )
    for i, name in enumerate(names):
        row = confusion[i]
        total = sum(row)
        y = top + i * cell
        out.append(
            f'<text x="{left - 6}" y="{y + cell / 2 + font / 3:.1f}" text-anchor="end" font-size="{font}">'
            f"<title>{_e(labels[i])}</title>{_e(name)}</text>"
        )
        for j, count in enumerate(row):
            share = count / total if total else 0.0
            colour = "#2563eb" if i == j else "#dc2626"
            opacity = 0.0 if count == 0 else 0.12 + 0.88 * share
            x = left + j * cell
            tip = f"true {labels[i]}, model said {labels[j]}: {count}" + (
                f" ({_pct(share)} of row)" if total else ""
            )
            out.append(
                f'<rect x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" fill="{colour}" '
                f'fill-opacity="{opacity:.3f}" stroke="#e5e7eb" stroke-width="0.5"><title>{_e(tip)}</title></rect>'
            )
            if count and cell >= 22:
                ink = "#ffffff" if opacity > 0.55 else "#111827"
                out.append(
                    f'<text x="{x + (cell - 1) / 2:.1f}" y="{y + cell / 2 + 4:.1f}" text-anchor="middle" '
                    f'font-size="{11 if cell < 34 else 12}" fill="{ink}" pointer-events="none">{count}</text>'
                )
    out.append("</svg>")
    return "".join(out)


def bars_svg(per: dict, note_word: str) -> tuple[str, str]:
    """Horizontal precision and recall bars per class, weakest F1 first. Returns (svg, note)."""
    rows = sorted(per.items(), key=lambda kv: (kv[1]["f1"], kv[0]))
    note = f"Sorted from the weakest {note_word} (lowest F1) down."
    if len(rows) > MAX_BAR_ROWS:
        note = (
            f"The {MAX_BAR_ROWS} weakest of {len(rows)} {note_word}s (lowest F1); all are in the table below."
        )
        rows = rows[:MAX_BAR_ROWS]
    names = [_short(k, 22) for k, _ in rows]
    label_px = min(170, 14 + 7 * max((_width(s) for s in names), default=1))
    bar_max, row_h, top = 420, 34, 30
    width, height = label_px + bar_max + 70, top + row_h * len(rows) + 6
    out = [
        f'<svg class="bars" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Precision and recall per {note_word}">',
        f'<rect x="{label_px}" y="6" width="12" height="12" fill="#0f766e"/>'
        f'<text x="{label_px + 18}" y="16" font-size="12">precision</text>',
        f'<rect x="{label_px + 100}" y="6" width="12" height="12" fill="#ea580c"/>'
        f'<text x="{label_px + 118}" y="16" font-size="12">recall</text>',
    ]
    for r, ((key, m), name) in enumerate(zip(rows, names)):
        y = top + r * row_h
        out.append(
            f'<text x="{label_px - 8}" y="{y + 17}" text-anchor="end" font-size="12">'
            f"<title>{_e(key)}</title>{_e(name)}</text>"
        )
        out.append(f'<rect x="{label_px}" y="{y + 2}" width="{bar_max}" height="26" fill="#f3f4f6"/>')
        for k, (metric, colour) in enumerate((("precision", "#0f766e"), ("recall", "#ea580c"))):
            value = float(m[metric])
            w = bar_max * max(0.0, min(1.0, value))
            by = y + 3 + k * 12
            out.append(
                f'<rect x="{label_px}" y="{by}" width="{w:.1f}" height="11" fill="{colour}">'
                f"<title>{_e(f'{key} {metric}: {value:.3f}')}</title></rect>"
            )
            out.append(
                f'<text x="{label_px + w + 4:.1f}" y="{by + 10}" font-size="10" fill="#374151">{_pct(value)}</text>'
            )
    out.append("</svg>")
    return "".join(out), note


# --------------------------------------------------------------------------- blocks

"""The evaluation report: one self-contained HTML page that opens offline.

Everything is inline (CSS, SVG charts, base64 JPEG thumbnails); a Content-Security-Policy meta
tag forbids the page from loading anything else.  All user text (labels, keys, model card) is
escaped.  Input is the dict of :func:`modeldesk.trainers.metrics.classification_report` or
:func:`modeldesk.trainers.metrics.multilabel_report`, and the list of
:func:`modeldesk.trainers.metrics.most_confident_mistakes`.
"""

from __future__ import annotations

import base64
import io
import json
import logging
from html import escape
from pathlib import Path

from modeldesk.datasets.media import atomic_write
from modeldesk.deploy.preprocess import ImageDecodeError, load_image
from modeldesk.trainers.report_charts import bars_svg, confusion_svg

log = logging.getLogger(__name__)

__all__ = ["write_html_report", "render_html_report"]

THUMB_PX = 160

_NOUNS = {
    "image-classification": "images",
    "image-multilabel": "images",
    "object-detection": "images",
    "text-classification": "texts",
    "sound-classification": "sound clips",
}

_CSS = """
:root { --fg:#1f2937; --muted:#6b7280; --line:#e5e7eb; --ok:#2563eb; --bad:#dc2626;
        --prec:#0f766e; --rec:#ea580c; --bg:#ffffff; --panel:#f9fafb; }
* { box-sizing: border-box; }
body { margin:0; padding:32px 40px 48px; font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
       "Noto Sans","PingFang SC","Microsoft YaHei",sans-serif; color:var(--fg); background:var(--bg); }
main { max-width:1000px; margin:0 auto; }
h1 { font-size:26px; margin:0 0 4px; }
h2 { font-size:19px; margin:36px 0 8px; padding-top:12px; border-top:1px solid var(--line); }
p.note, .muted { color:var(--muted); font-size:13px; }
.headline { font-size:22px; line-height:1.35; margin:18px 0 6px; }
.headline strong { color:var(--ok); }
ul.facts { margin:6px 0 0; padding-left:20px; }
.stats { display:flex; gap:12px; flex-wrap:wrap; margin:16px 0 0; }
.stat { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:8px 14px; }
.stat b { display:block; font-size:20px; }
.stat span { color:var(--muted); font-size:12px; }
.chart { overflow-x:auto; }
svg text { font-family:inherit; }
table { border-collapse:collapse; width:100%; font-size:14px; }
th, td { padding:6px 10px; border-bottom:1px solid var(--line); text-align:right; }
th:first-child, td:first-child { text-align:left; overflow-wrap:anywhere; }
th { background:var(--panel); font-weight:600; }
td.low { color:var(--bad); font-weight:600; }
.grid { display:grid; grid-template-columns:repeat(auto-fill,minmax(180px,1fr)); gap:14px; }
.card { border:1px solid var(--line); border-radius:8px; padding:10px; background:var(--panel);
        font-size:13px; overflow-wrap:anywhere; }
.card img, .card .noimg { display:block; width:100%; height:160px; object-fit:contain;
        background:#e5e7eb; border-radius:4px; margin-bottom:8px; }
.card .noimg { display:flex; align-items:center; justify-content:center; color:var(--muted); }
.card .said { color:var(--bad); font-weight:600; }
.card .key { color:var(--muted); font-size:11px; margin-top:4px; }
dl { display:grid; grid-template-columns:max-content 1fr; gap:4px 16px; font-size:14px; }
dt { color:var(--muted); } dd { margin:0; overflow-wrap:anywhere; }
"""


def _e(value) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return escape(str(value), quote=True)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _out_of_100(accuracy: float) -> int:
    """Accuracy as 'times out of 100', never rounding a non-perfect model up to 100 or a non-zero one to 0."""
    value = round(100 * accuracy)
    if accuracy < 1 and value >= 100:
        return 99
    if accuracy > 0 and value <= 0:
        return 1
    return int(value)


# --------------------------------------------------------------------------- words


def _classification_summary(metrics: dict, noun: str) -> tuple[str, list[str]]:
    acc, n = metrics["accuracy"], metrics["n"]
    correct = round(acc * n)
    if n >= 100:
        headline = (
            f"The model is right <strong>{_out_of_100(acc)} times out of 100</strong> "
            f"on {_e(noun)} it never saw."
        )
    else:
        headline = f"The model is right on <strong>{correct} of the {n}</strong> {_e(noun)} it never saw."
    interval = metrics.get("interval")
    if interval:
        headline = (
            f"The model is right <strong>{_e(interval['text'].replace(' out of ', ' times out of '))}"
            f"</strong> on {_e(noun)} it never saw ({round(100 * interval['level'])}% confidence)."
        )
    facts = [
        f"Tested on {n} {_e(noun)} that were not used for training ({correct} right, {n - correct} wrong)."
    ]
    if interval and interval.get("too_wide"):
        facts.append(
            f"{n} test {_e(noun)} are too few to tell apart two models a few points apart: "
            "label more, or move more of them to the test split."
        )
    if metrics.get("final_model"):
        facts.append(_e(metrics["final_model"]["text"]))
    per = metrics["per_class"]
    present = [(k, v) for k, v in per.items() if v["support"] > 0]
    if len(present) > 1:
        weakest_key, weakest = min(present, key=lambda kv: kv[1]["recall"])
        if weakest["recall"] < 1:
            facts.append(
                f"It is weakest on <b>{_e(weakest_key)}</b>: it finds {_pct(weakest['recall'])} "
                f"of them ({round(weakest['recall'] * weakest['support'])} of {weakest['support']})."
            )
    confusion = metrics.get("confusion") or []
    labels = [str(lab) for lab in metrics.get("labels", [])]
    worst = max(
        ((confusion[i][j], i, j) for i in range(len(confusion)) for j in range(len(confusion)) if i != j),
        default=(0, 0, 0),
    )
    if worst[0] > 0:
        facts.append(
            f"Its most common mistake: <b>{_e(labels[worst[1]])}</b> taken for "
            f"<b>{_e(labels[worst[2]])}</b> ({worst[0]} time{'s' if worst[0] != 1 else ''})."
        )
    return headline, facts


def _multilabel_summary(metrics: dict, noun: str) -> tuple[str, list[str]]:
    exact, n = metrics["exact_match"], metrics["n"]
    headline = (
        f"The model gets every tag right on <strong>{_out_of_100(exact)} of 100</strong> {_e(noun)} it never saw."
        if n >= 100
        else f"The model gets every tag right on <strong>{round(exact * n)} of the {n}</strong> {_e(noun)} it never saw."
    )
    facts = [
        f"Tested on {n} {_e(noun)} that were not used for training.",
        f"{_pct(metrics['hamming_accuracy'])} of all yes/no tag decisions are right; "
        f"overall F1 score {metrics['micro_f1']:.2f}.",
    ]
    per = [(k, v) for k, v in metrics["per_label"].items() if v["support"] > 0]
    if per:
        weakest_key, weakest = min(per, key=lambda kv: kv[1]["recall"])
        if weakest["recall"] < 1:
            facts.append(
                f"The tag it misses most is <b>{_e(weakest_key)}</b>: it finds {_pct(weakest['recall'])} of them."
            )
    return headline, facts


# --------------------------------------------------------------------------- charts


def _table(per: dict, first_col: str) -> str:
    head = f"<tr><th>{_e(first_col)}</th><th>examples</th><th>precision</th><th>recall</th><th>F1</th></tr>"
    body = []
    for key, m in per.items():
        low = ' class="low"'
        cells = "".join(
            f"<td{low if m['support'] and m[name] < 0.7 else ''}>{m[name]:.3f}</td>"
            for name in ("precision", "recall", "f1")
        )
        body.append(f"<tr><td>{_e(key)}</td><td>{int(m['support'])}</td>{cells}</tr>")
    return f"<table>{head}{''.join(body)}</table>"


def _thumbnail_data_uri(path) -> str | None:
    """A small JPEG of the image at ``path`` as a data: URI, or None when it cannot be read."""
    try:
        image = load_image(path, draft_size=THUMB_PX)
    except (ImageDecodeError, OSError) as exc:
        log.warning("report: no thumbnail for %s: %s", path, exc)
        return None
    image.thumbnail((THUMB_PX, THUMB_PX))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=80, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _mistakes_block(mistakes: list, thumbnails: dict | None) -> str:
    cards = []
    for m in mistakes:
        uri = _thumbnail_data_uri(thumbnails[m["key"]]) if thumbnails and m["key"] in thumbnails else None
        picture = f'<img src="{uri}" alt="{_e(m["key"])}">' if uri else '<div class="noimg">no preview</div>'
        # the file's name, not its content hash (kept in the tooltip, where the app's links need it)
        name = Path(str(thumbnails[m["key"]])).name if thumbnails and m["key"] in thumbnails else ""
        cards.append(
            f'<div class="card" title="{_e(m["key"])}">{picture}<div>Is: <b>{_e(m["true"])}</b></div>'
            f'<div class="said">Model said: {_e(m["predicted"])} ({_pct(float(m["score"]))} sure)</div>'
            f'<div class="key">{_e(name)}</div></div>'
        )
    return f'<div class="grid">{"".join(cards)}</div>'


def _model_card_block(card: dict) -> str:
    rows = []
    for key, value in card.items():
        if isinstance(value, (dict, list, tuple)):
            value = json.dumps(value, ensure_ascii=False, default=str)
        rows.append(f"<dt>{_e(key)}</dt><dd>{_e(value)}</dd>")
    return f"<dl>{''.join(rows)}</dl>"


# Words a reader may not know, explained where they appear (hover).
_EXPLAIN = {
    "macro F1": "F1 balances how often an answer is right with how many of a class are found; this one "
    "averages it over the classes, so a weak small class counts as much as a big one (1 is perfect).",
    "micro F1": "F1 over every tag decision at once (1 is perfect).",
}


def _stat(value: str, caption: str) -> str:
    tip = _EXPLAIN.get(caption)
    title = f' title="{_e(tip)}"' if tip else ""
    shown = "balance across classes (macro F1)" if caption == "macro F1" else caption
    return f'<div class="stat"{title}><b>{value}</b><span>{_e(shown)}</span></div>'


# --------------------------------------------------------------------------- page


def render_html_report(*, title, metrics, mistakes=None, thumbnails=None, model_card=None, noun=None) -> str:
    """The report page as a string; see :func:`write_html_report`."""
    multilabel = "per_label" in metrics
    if not multilabel and not {"accuracy", "per_class", "confusion", "labels", "n"} <= set(metrics):
        raise ValueError("metrics must come from classification_report or multilabel_report")
    card = dict(model_card or {})
    noun = noun or _NOUNS.get(str(card.get("task", "")), "examples")
    if multilabel:
        headline, facts = _multilabel_summary(metrics, noun)
        per, word = metrics["per_label"], "tag"
        stats = [
            _stat(_pct(metrics["exact_match"]), "all tags right"),
            _stat(f"{metrics['micro_f1']:.2f}", "micro F1"),
            _stat(f"{metrics['macro_f1']:.2f}", "macro F1"),
            _stat(str(metrics["n"]), f"{noun} tested"),
        ]
    else:
        headline, facts = _classification_summary(metrics, noun)
        per, word = metrics["per_class"], "class"
        stats = [
            _stat(_pct(metrics["accuracy"]), "accuracy"),
            _stat(f"{metrics['macro_f1']:.2f}", "macro F1"),
            _stat(str(len(metrics["labels"])), "classes"),
            _stat(str(metrics["n"]), f"{noun} tested"),
        ]
    parts = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="headline">{headline}</p>',
        '<ul class="facts">' + "".join(f"<li>{f}</li>" for f in facts) + "</ul>",
        f'<div class="stats">{"".join(stats)}</div>',
    ]
    if not multilabel:
        parts += [
            "<h2>Where the model gets confused</h2>",
            '<p class="note">Each row is the true label; each column is what the model said. '
            "Blue on the diagonal is right, red is wrong; the darker, the larger the share of that row. "
            "Hover a cell for details.</p>",
            f'<div class="chart">{confusion_svg(metrics["confusion"], [str(x) for x in metrics["labels"]])}</div>',
        ]
    bars, note = bars_svg(per, word)
    parts += [
        f"<h2>How well each {word} is recognised</h2>",
        f'<p class="note"><b>Precision</b>: when the model says it is this {word}, how often it is right. '
        f"<b>Recall</b>: of all the examples of this {word}, how many the model finds. {_e(note)}</p>",
        f'<div class="chart">{bars}</div>',
        f"<h2>All {'classes' if word == 'class' else 'tags'}</h2>",
        _table(per, word),
    ]
    if mistakes:
        parts += [
            "<h2>Mistakes the model was most sure about</h2>",
            '<p class="note">Worth a look: often the label itself is wrong, or the example is unusual.</p>',
            _mistakes_block(mistakes, thumbnails),
        ]
    if card:
        parts += ["<h2>About this model</h2>", _model_card_block(card)]
    csp = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(parts)}</main></body></html>\n"
    )


def write_html_report(
    path, *, title, metrics, mistakes=None, thumbnails=None, model_card=None, noun=None
) -> Path:
    """Write the evaluation report as one self-contained HTML file, atomically.

    Parameters
    ----------
    path : where to write (parent folders are created)
    title : page title, e.g. the project and model name
    metrics : dict from ``classification_report`` or ``multilabel_report``
    mistakes : list from ``most_confident_mistakes``, shown as cards
    thumbnails : {key: image path} for the mistake cards (shrunk to 160 px JPEG, inlined)
    model_card : {name: value} facts shown at the end (template, backbone, data, time...);
        its ``task`` picks the word for the samples ("images", "texts", ...)
    noun : overrides that word

    Returns
    -------
    the Path written
    """
    path = Path(path)
    html = render_html_report(
        title=title,
        metrics=metrics,
        mistakes=mistakes,
        thumbnails=thumbnails,
        model_card=model_card,
        noun=noun,
    )
    atomic_write(path, html.encode("utf-8"))
    return path

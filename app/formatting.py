"""Human-readable text for the command line's results (``--json`` prints the dicts instead)."""

from __future__ import annotations

from collections import Counter

from modeldesk.app.anomaly_formatting import anomaly_metrics_text
from modeldesk.app.progress import format_seconds
from modeldesk.app.seg_formatting import area_words, seg_headline, seg_metrics_text

SHOWN_FAILURES = 20  # files named one per line; the rest are counted by reason


def _table(rows, headers) -> str:
    rows = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    body = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join([line, "  ".join("-" * w for w in widths), *body])


def project_table(projects) -> str:
    if not projects:
        return "no projects yet: modeldesk project create NAME --task image-classification"
    return _table([(p["name"], p["task"], p["samples"]) for p in projects], ["project", "task", "samples"])


def import_summary(report) -> str:
    failed = report.get("failed_total", len(report["failed"]))
    lines = [
        f"added {report['added']}, duplicates {report['duplicates']}, failed {failed}"
        f" (format: {report.get('format', '?')})"
    ]
    if report.get("boxes"):
        lines.append(
            f"boxes {report['boxes']} (clipped {report.get('boxes_clipped', 0)}, "
            f"dropped {report.get('boxes_dropped', 0)})"
        )
    lines += [f"warning: {w}" for w in report.get("warnings", [])]
    lines += [f"refused {f['file']}: {f['reason']}" for f in report["failed"][:SHOWN_FAILURES]]
    if failed > SHOWN_FAILURES:
        lines.append(f"... and {failed - SHOWN_FAILURES:,} more, for these reasons:")
        reasons = Counter(f["reason"] for f in report["failed"][SHOWN_FAILURES:])
        for entry in report.get("failed_summary", []):
            reasons[entry["reason"]] += entry["count"]
        lines += [f"  {count:,} x {reason}" for reason, count in reasons.most_common(10)]
        if len(reasons) > 10:
            lines.append(
                f"  {sum(reasons.values()) - sum(n for _, n in reasons.most_common(10)):,} x other reasons"
            )
    return "\n".join(lines)


def stats_text(name, stats) -> str:
    lines = [f"{name}: {stats['samples']} samples, {stats['labeled']} labeled, {stats['boxes']} boxes"]
    if stats["labels"]:
        lines.append(_table(sorted(stats["labels"].items()), ["label", "count"]))
    splits = stats.get("splits", {})
    lines.append("splits: " + ", ".join(f"{k} {v}" for k, v in splits.items()))
    return "\n".join(lines)


def templates_text(templates) -> str:
    return "\n".join(f"{t['name']:<34} {t.get('description', '')}" for t in templates)


def _detection_headline(metrics) -> str:
    return (
        f"mAP50 {_num(metrics.get('map50'))}, mAP 0.5:0.95 {_num(metrics.get('map'))} on "
        f"{metrics.get('n', '?')} images; at score >= {metrics.get('threshold', 0):.2f}: precision "
        f"{metrics.get('precision', 0):.1%}, recall {metrics.get('recall', 0):.1%}, "
        f"{metrics.get('misses', 0)} missed objects, {metrics.get('false_boxes', 0)} false boxes"
    )


def _num(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def detection_metrics_text(metrics) -> str:
    lines = [_detection_headline(metrics)]
    per_class = metrics.get("per_class", {})
    if per_class:
        lines.append(
            _table(
                [
                    (
                        label,
                        _num(m.get("ap50")),
                        _num(m.get("ap")),
                        f"{m['precision']:.3f}",
                        f"{m['recall']:.3f}",
                        m["support"],
                    )
                    for label, m in per_class.items()
                ],
                ["label", "AP50", "AP", "precision", "recall", "boxes"],
            )
        )
    return "\n".join(lines)


def metrics_text(metrics) -> str:
    if "map50" in metrics:
        return detection_metrics_text(metrics)
    if "auroc" in metrics:
        return anomaly_metrics_text(metrics)
    if "r2" in metrics:
        return (
            f"MAE {metrics['mae']:.4g}, RMSE {metrics['rmse']:.4g}, R² {metrics['r2']:.3f} "
            f"on {metrics.get('n', '?')} rows"
        )
    if "miou" in metrics:
        return seg_metrics_text(metrics)
    lines = [
        f"accuracy {metrics['accuracy']:.1%}, macro-F1 {metrics['macro_f1']:.3f} "
        f"on {metrics.get('n', '?')} samples"
    ]
    per_class = metrics.get("per_class", {})
    if per_class:
        lines.append(
            _table(
                [
                    (label, f"{m['precision']:.3f}", f"{m['recall']:.3f}", f"{m['f1']:.3f}", m["support"])
                    for label, m in per_class.items()
                ],
                ["label", "precision", "recall", "f1", "support"],
            )
        )
    return "\n".join(lines)


def _device_name(device: dict) -> str:
    """ "cpu", or a cluster worker as "worker NAME" (its address when it has no name)."""
    name = device.get("name", "?")
    if name.startswith("dask:"):
        address, _, gpu = name[len("dask:") :].partition("/cuda:")
        return f"worker {device.get('note') or address}" + (f" cuda:{gpu}" if gpu else "")
    return name


def plan_text(estimate) -> str:
    plan = estimate.get("plan") or {}
    devices = ", ".join(
        f"{_device_name(d)} ({d.get('threads', '?')} threads, {d.get('share', 1):.0%})"
        for d in plan.get("devices", [])
    )
    lines = [f"plan: {devices or 'cpu'}; estimated time {format_seconds(estimate.get('eta_s'))}"]
    lines += [f"note: {note}" for note in plan.get("notes", []) if "refused" in note or "lost" in note]
    return "\n".join(lines)


def _rate(value) -> str:
    return f"{value:.1f}/s" if value else "?"


def per_device_text(plan: dict) -> str:
    """Estimated against actual share and speed per device, after a run on more than one."""
    rows = plan.get("per_device") or []
    if len(rows) < 2:
        return ""
    return _table(
        [
            (
                _device_name(r),
                f"{r['estimated_share']:.0%}",
                f"{r['actual_share']:.0%}",
                _rate(r.get("estimated_items_per_s")),
                _rate(r.get("actual_items_per_s")),
                f"{r['lost_chunks']} chunk(s) lost" if r.get("lost_chunks") else "",
            )
            for r in rows
        ],
        ["device", "share est.", "share actual", "images est.", "images actual", ""],
    )


def train_text(result) -> str:
    metrics = result.get("metrics", {})
    plan = result.get("plan") or {}
    quality = (
        _detection_headline(metrics)
        if "map50" in metrics
        else anomaly_metrics_text(metrics)
        if "auroc" in metrics
        else metrics_text(metrics)
        if "r2" in metrics
        else seg_headline(metrics)
        if "miou" in metrics
        else f"accuracy {metrics.get('accuracy', 0):.1%}, macro-F1 {metrics.get('macro_f1', 0):.3f} "
        f"on {metrics.get('n', '?')} held-out samples"
    )
    lines = [
        f"model {result['model']}",
        quality,
        f"took {format_seconds(plan.get('actual_s'))} (estimated {format_seconds(plan.get('eta_s'))})",
    ]
    devices = per_device_text(plan)
    if devices:
        lines.append(devices)
    lines += [f"note: {note}" for note in plan.get("notes", []) if "refused" in note or "lost" in note]
    lines += [f"note: {note}" for note in result.get("notes", [])]
    lines += [f"warning: {w}" for w in result.get("warnings", [])]
    lines += [f"skipped {s['file']}: {s['reason']}" for s in result.get("skipped", [])]
    return "\n".join(lines)


def cluster_started_text(result) -> str:
    lines = [
        f"scheduler {'already running' if result.get('already_running') else 'started'} at {result['address']}; "
        "training in this workspace now uses it",
        f"on each worker machine run: {result['worker_command']}",
    ]
    if result.get("credentials") and not result["address"].startswith(
        ("tls://127.", "tls://[::1]", "tls://localhost")
    ):
        lines.append(
            f"copy {result['credentials']} to each worker machine first: it is the cluster's key "
            "(Dask TLS), keep it private"
        )
    elif result.get("credentials"):
        lines.append(
            f"{result['credentials']} is the cluster's key (Dask TLS, readable by you only): whoever "
            "holds it can run code on the cluster, keep it private"
        )
    lines.append("stop it with: modeldesk cluster stop")
    return "\n".join(lines)


def cluster_status_text(result) -> str:
    spec, scheduler = result.get("cluster"), result.get("scheduler")
    lines = [f"training uses: {'this computer and ' + spec['address'] if spec else 'this computer only'}"]
    lines.append(f"this workspace's scheduler: {scheduler['address'] if scheduler else 'not running'}")
    return "\n".join(lines)


def cluster_workers_text(address: str, workers: list) -> str:
    if not workers:
        return f"cluster {address}: no worker has joined (run `modeldesk worker {address}` on a machine)"
    rows = [
        (
            w["name"],
            w.get("host") or "",
            w["cores"],
            w["gpus"],
            f"{w['memory_bytes'] / 1e9:.1f} GB" if w.get("memory_bytes") else "?",
            _rate((w.get("measured") or {}).get("items_per_s")) if w.get("measured") else "not measured yet",
            f"refused: {w['refused']}" if w.get("refused") else "ok",
        )
        for w in workers
    ]
    return f"cluster {address}:\n" + _table(
        rows, ["worker", "host", "cores", "GPUs", "memory", "images", "status"]
    )


def predictions_text(predictions) -> str:
    return "\n".join(_prediction_line(p) for p in predictions)


def _prediction_line(p) -> str:
    if "areas" in p:  # a mask: the classes covering most of the photo
        return f"{p['file']}: {area_words(p['areas'])}"
    if "boxes" not in p:
        answer = (
            f"not sure: unlike what it was trained on (closest guess {p['label']}, {p['score']:.1%})"
            if p.get("sure") is False
            else p["label"]
            if p.get("score") is None  # a regression's value: no score
            else f"{p['label']} ({p['score']:.1%})"
        )
        return f"{p['file']}: {answer}" + (f"  {_short(p['text'], 60)}" if "text" in p else "")
    boxes = "; ".join(
        f"{b['label']} {b['score']:.0%} [{', '.join(f'{v:.0f}' for v in b['box'])}]" for b in p["boxes"]
    )
    return f"{p['file']}: {len(p['boxes'])} box(es){': ' + boxes if boxes else ''}"


def export_text(result) -> str:
    lines = [f"wrote {result['path']} ({result['size_bytes'] / 1e6:.1f} MB)"]
    if "candidates" in result:
        lines.append(
            _table(
                [
                    (
                        c["name"],
                        _megabytes(c.get("size_bytes")),
                        _latency(c),
                        _percent(c.get("accuracy")),
                        "-" if c.get("loss_bound") is None else f"{c['loss_bound']:.1f}",
                        "kept" if c["name"] == result["chosen"] else _short(c.get("reason", "")),
                    )
                    for c in result["candidates"]
                ],
                ["candidate", "size", "latency", result.get("metric", "accuracy"), "max loss (points)", ""],
            )
        )
        lines.append(
            f"chosen {result['chosen']}: {result.get('metric', 'accuracy')} "
            f"{_percent(result['accuracy_fp32'])} -> "
            f"{_percent(result['accuracy_compressed'])}, {result['speedup']:.1f}x faster"
        )
        if result.get("claim"):  # the loss the verdict proved (deploy.verdict)
            lines.append(result["claim"])
    return "\n".join(lines)


def _short(text: str, width: int = 72) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _megabytes(size) -> str:
    return "-" if size is None else f"{size / 1e6:.1f} MB"


def _latency(candidate) -> str:
    latency = candidate.get("latency_ms")
    if isinstance(latency, dict):
        return ", ".join(f"{v:.2f} ms@{k}t" for k, v in latency.items())
    return f"{latency:.2f} ms" if latency is not None else "-"


def _percent(value) -> str:
    return "-" if value is None else f"{value:.1%}"


def demo_summary(result) -> str:
    return (
        f"demo finished: every step worked. Open it in the app with\n"
        f"  modeldesk --workspace {result['workspace']}"
    )


def export_data_text(result: dict) -> str:
    """``export-data``: what was written, and each sample left out with its reason."""
    lines = [f"wrote {result['samples']} samples as {result['format']} to {result['path']}"]
    skipped = result.get("skipped") or []
    if skipped:
        lines.append(f"skipped {len(skipped)}:")
        lines += [f"  {entry['file']}: {entry['reason']}" for entry in skipped[:20]]
        if len(skipped) > 20:
            lines.append(f"  ... and {len(skipped) - 20} more")
    return "\n".join(lines)

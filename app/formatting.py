"""Human-readable text for the command line's results (``--json`` prints the dicts instead)."""

from __future__ import annotations

from modeldesk.app.progress import format_seconds


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
    lines = [f"added {report['added']}, duplicates {report['duplicates']}, failed {len(report['failed'])}"
             f" (format: {report.get('format', '?')})"]
    if report.get("boxes"):
        lines.append(f"boxes {report['boxes']} (clipped {report.get('boxes_clipped', 0)}, "
                     f"dropped {report.get('boxes_dropped', 0)})")
    lines += [f"warning: {w}" for w in report.get("warnings", [])]
    lines += [f"refused {f['file']}: {f['reason']}" for f in report["failed"][:20]]
    if len(report["failed"]) > 20:
        lines.append(f"... and {len(report['failed']) - 20} more (see --json)")
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


def metrics_text(metrics) -> str:
    lines = [f"accuracy {metrics['accuracy']:.1%}, macro-F1 {metrics['macro_f1']:.3f} "
             f"on {metrics.get('n', '?')} samples"]
    per_class = metrics.get("per_class", {})
    if per_class:
        lines.append(_table(
            [(label, f"{m['precision']:.3f}", f"{m['recall']:.3f}", f"{m['f1']:.3f}", m["support"])
             for label, m in per_class.items()],
            ["label", "precision", "recall", "f1", "support"]))
    return "\n".join(lines)


def plan_text(estimate) -> str:
    plan = estimate.get("plan") or {}
    devices = ", ".join(f"{d.get('name')} ({d.get('threads', '?')} threads, {d.get('share', 1):.0%})"
                        for d in plan.get("devices", []))
    return f"plan: {devices or 'cpu'}; estimated time {format_seconds(estimate.get('eta_s'))}"


def train_text(result) -> str:
    metrics = result.get("metrics", {})
    plan = result.get("plan") or {}
    lines = [f"model {result['model']}",
             f"accuracy {metrics.get('accuracy', 0):.1%}, macro-F1 {metrics.get('macro_f1', 0):.3f} "
             f"on {metrics.get('n', '?')} held-out samples",
             f"took {format_seconds(plan.get('actual_s'))} (estimated {format_seconds(plan.get('eta_s'))})"]
    lines += [f"warning: {w}" for w in result.get("warnings", [])]
    lines += [f"skipped {s['file']}: {s['reason']}" for s in result.get("skipped", [])]
    return "\n".join(lines)


def predictions_text(predictions) -> str:
    return "\n".join(f"{p['file']}: {p['label']} ({p['score']:.1%})"
                     + (f"  {_short(p['text'], 60)}" if "text" in p else "") for p in predictions)


def export_text(result) -> str:
    lines = [f"wrote {result['path']} ({result['size_bytes'] / 1e6:.1f} MB)"]
    if "candidates" in result:
        lines.append(_table(
            [(c["name"], _megabytes(c.get("size_bytes")), _latency(c), _percent(c.get("accuracy")),
              "kept" if c["name"] == result["chosen"] else _short(c.get("reason", "")))
             for c in result["candidates"]],
            ["candidate", "size", "latency", "accuracy", ""]))
        lines.append(f"chosen {result['chosen']}: accuracy {_percent(result['accuracy_fp32'])} -> "
                     f"{_percent(result['accuracy_compressed'])}, {result['speedup']:.1f}x faster")
    return "\n".join(lines)


def _short(text: str, width: int = 72) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


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
    return (f"demo finished: every step worked. Open it in the app with\n"
            f"  modeldesk --workspace {result['workspace']}")

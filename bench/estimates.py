"""Do the app's time estimates hold? For every task and template, and for the compression of each
model the app offers to compress, the estimate the user is shown against the wall time it took.

Each task gets a fresh workspace (no figures measured before: a newcomer's first runs) with a small
subset of the shared data, imported as a user would. Templates of a task run one after the other in
that workspace, so a later one finds the features an earlier one cached, as in the app. Per run it
records the estimate shown before starting (``estimate_training``, the Train page's figure), the ETA
shown when the bar is half way (elapsed + ETA then: does the ETA follow the measured pace?), and the
actual wall time; for compression the first ETA of the progress (what the Deploy page shows) and the
one at half way. The aim is actual within 1.5x of the estimate.

    python bench/estimates.py [--scale 1.0] [--only image,text] [--load N] [--threads N] [--stages]

Tasks: photos (sign digits), tags, boxes (raccoons, at least 30: the app compresses a detector only
from 30), texts (SMS spam), sounds (spoken digits), anomalies (magnetic tiles), masks (CamVid) and
tables (titanic); every task's first model is compressed where the app offers it. ``--scale 0.5`` with
compression runs in about 4 minutes on a quiet 2-core machine.

``--load N`` runs N busy processes beside the bench (another benchmark on the same cores);
``--threads N`` pins the bench and its workers to N cores; ``--stages`` prints, after each training,
its stages' seconds as measured and the plan's parts (in the priors' units, before this machine's
scale) to see which one is off. Figures depend on the machine's load: say how loaded it was when you
quote them.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

DATA = Path("/work/shared/benchdata")
LOW, HIGH = 0.5, 2.0  # the bar's half-way point: report the ETA at the first event past LOW (fraction)
AIM = 1.5


def _bucket(name: str, n: int) -> int:
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % n


def _copy_per_class(src: Path, dst: Path, per_class: int, suffixes: tuple) -> Path:
    for label_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        files = sorted(
            (p for p in label_dir.iterdir() if p.suffix.lower() in suffixes),
            key=lambda p: _bucket(p.name, 997),
        )
        (dst / label_dir.name).mkdir(parents=True, exist_ok=True)
        for path in files[:per_class]:
            shutil.copy2(path, dst / label_dir.name / path.name)
    return dst


def image_data(tmp: Path, scale: float) -> Path:
    return _copy_per_class(DATA / "sign_digits", tmp / "digits", max(4, int(20 * scale)), (".jpg", ".jpeg"))


def sound_data(tmp: Path, scale: float) -> Path:
    return _copy_per_class(DATA / "fsdd_audio", tmp / "sounds", max(4, int(20 * scale)), (".wav",))


def text_data(tmp: Path, scale: float) -> Path:
    with open(DATA / "sms_spam_en" / "data.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows.sort(key=lambda r: _bucket(r["text"], 9973))
    spam = [r for r in rows if r["label"] == "spam"][: max(10, int(60 * scale))]
    ham = [r for r in rows if r["label"] == "ham"][: max(20, int(340 * scale))]
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / "texts.csv"
    with open(out, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["text", "label"])
        writer.writeheader()
        writer.writerows(spam + ham)
    return out


def box_data(tmp: Path, scale: float) -> Path:
    src, dst = DATA / "raccoon_voc", tmp / "raccoons"
    dst.mkdir(parents=True)
    # at least 30 photos: the app compresses a detector only from 30 (fewer cannot show mAP holds)
    images = sorted(src.glob("*.jpg"), key=lambda p: _bucket(p.name, 997))[: max(30, int(60 * scale))]
    for image in images:
        shutil.copy2(image, dst / image.name)
        shutil.copy2(image.with_suffix(".xml"), dst / image.with_suffix(".xml").name)
    return dst


def anomaly_data(tmp: Path, scale: float) -> Path:
    src, dst = DATA / "magnetic_tile", tmp / "tiles"
    goods = sorted((src / "good").glob("*.jpg"), key=lambda p: _bucket(p.name, 997))
    (dst / "good").mkdir(parents=True)
    for path in goods[: max(12, int(80 * scale))]:
        shutil.copy2(path, dst / "good" / path.name)
    for kind in sorted(p for p in (src / "defect").iterdir() if p.is_dir()):
        (dst / "defect" / kind.name).mkdir(parents=True)
        for path in sorted(kind.glob("*.jpg"), key=lambda p: _bucket(p.name, 997))[: max(2, int(5 * scale))]:
            shutil.copy2(path, dst / "defect" / kind.name / path.name)
    return dst


def mask_data(tmp: Path, scale: float) -> Path:
    """CamVid frames with their index masks (``train/`` + ``trainannot/``, ``classes.txt``)."""
    src, dst = DATA / "camvid" / "CamVid", tmp / "camvid"
    (dst / "train").mkdir(parents=True)
    (dst / "trainannot").mkdir()
    shutil.copy2(src / "classes.txt", dst / "classes.txt")
    frames = sorted((src / "train").glob("*.png"), key=lambda p: _bucket(p.name, 997))
    for frame in frames[: max(12, int(40 * scale))]:
        shutil.copy2(frame, dst / "train" / frame.name)
        shutil.copy2(src / "trainannot" / frame.name, dst / "trainannot" / frame.name)
    return dst


def table_data(tmp: Path, scale: float) -> Path:
    """Titanic passengers (predicting Survived), every column as the shared file has it."""
    with open(DATA / "titanic" / "data.csv", encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        columns, rows = reader.fieldnames, list(reader)
    rows.sort(key=lambda r: _bucket(r["PassengerId"], 9973))
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / "passengers.csv"
    with open(out, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows[: max(60, int(400 * scale))])
    return out


def tag_images(ws, name: str) -> None:
    """Two tags per digit photo (even/odd, low/high): a tags project from the sign digits."""
    project = ws.project(name)
    for sample in ws.store.samples(project):
        folder = Path(sample.source).parent.name
        digit = int(folder if folder.isdigit() else sample.labels[0])
        ws.store.set_tags(sample.id, ["even" if digit % 2 == 0 else "odd", "low" if digit < 5 else "high"])


# (short name, task, data maker, what to do after import, the project's options)
TASKS = (
    ("image", "image-classification", image_data, None, {}),
    ("tags", "image-multilabel", image_data, tag_images, {}),
    ("boxes", "object-detection", box_data, None, {}),
    ("text", "text-classification", text_data, None, {}),
    ("sound", "sound-classification", sound_data, None, {}),
    ("anomaly", "anomaly-detection", anomaly_data, None, {}),
    ("masks", "segmentation", mask_data, None, {}),
    ("table", "tabular-classification", table_data, None, {"target_column": "Survived"}),
)


class Watch:
    """Keeps the first ETA and the one at half way of a run's progress events, and when each stage began."""

    def __init__(self):
        self.started = time.monotonic()
        self.first_eta = None
        self.mid = None  # elapsed + eta at the first event past half way
        self.stages: list[tuple[str, float]] = []  # (stage, seconds since the start when it began)

    def event(self, event: dict) -> None:
        stage = event.get("stage") or event.get("state")
        if stage and (not self.stages or self.stages[-1][0] != stage):
            self.stages.append((str(stage), time.monotonic() - self.started))
        self.see(event.get("fraction"), event.get("eta_s"))

    def durations(self, total: float) -> list[tuple[str, float]]:
        """(stage, seconds) in the order they ran; the worker's start is the time before the first stage
        the trainer reported (the queue's own events, queued and running, belong to it)."""
        own = [(name, at) for name, at in self.stages if name not in ("queued", "running", "done")]
        ends = [at for _, at in own[1:]] + [total]
        start = [("start", own[0][1])] if own else []
        return start + [(name, end - at) for (name, at), end in zip(own, ends)]

    def see(self, fraction, eta) -> None:
        if not isinstance(eta, (int, float)):
            return
        if self.first_eta is None:
            self.first_eta = float(eta)
        if self.mid is None and (fraction or 0) >= LOW:
            self.mid = time.monotonic() - self.started + float(eta)


def stage_line(watch: Watch, actual: float, estimate: dict) -> str:
    """The run's stages as measured, then the plan's parts (raw: before this machine's calibration)."""
    plan = estimate.get("plan") or {}
    took = " ".join(f"{name.split(' (')[0][:22]}={sec:.2f}" for name, sec in watch.durations(actual))
    parts = dict(plan.get("seconds") or {})
    parts.update({"start": plan.get("start_eta_s"), "scoring": plan.get("scoring_eta_s")})
    planned = " ".join(f"{k}={v:.2f}" for k, v in parts.items() if isinstance(v, (int, float)))
    scale = (plan.get("eta_s") or 0) / plan["raw_eta_s"] if plan.get("raw_eta_s") else None
    return f"    took: {took}\n    plan (raw, x{_fmt(scale, '.2f')} shown; slowdown {plan.get('slowdown')}): {planned}"


def run_task(
    short, task, make_data, after, options, tmp: Path, scale: float, compress: bool, stages: bool
) -> list[dict]:
    from modeldesk.app.workspace import Workspace

    ws = Workspace(tmp / f"ws-{short}")
    rows = []
    try:
        ws.create_project(short, task, **options)
        data = make_data(tmp / f"data-{short}", scale)
        ws.import_data(short, data)
        if after is not None:
            after(ws, short)
        n = ws.stats(short)["samples"]
        templates = ws.task(task)["templates"]
        first = templates[0]
        for template in templates:
            planned = ws.estimate_training(short, template)
            watch = Watch()
            started = time.monotonic()
            result = ws.train(short, template, progress=watch.event)
            actual = time.monotonic() - started
            rows.append(
                _row(f"{short} train {template.split('/')[-1]}", n, planned["eta_s"], watch.mid, actual)
            )
            print(_line(rows[-1]), flush=True)
            if stages:
                print(stage_line(watch, actual, planned), flush=True)
            # compression is as slow as a few trainings: once a task, on its first recipe's model
            if compress and template == first:
                refusal = ws.compression_refusal(result["model"])
                if refusal:
                    print(f"{short} compress: not offered ({refusal})", flush=True)
                    continue
                rows.append(_compress(ws, short, n, result["model"], tmp / f"out-{short}-{len(rows)}"))
                print(_line(rows[-1]), flush=True)
    finally:
        ws.close()
    return rows


def _compress(ws, short, n, model, out) -> dict:
    watch = Watch()
    started = time.monotonic()
    ws.export_model(
        model,
        out,
        compress=True,
        progress=lambda done, total, msg, eta: watch.see(_fraction(done, total), eta),
    )
    return _row(f"{short} compress", n, watch.first_eta, watch.mid, time.monotonic() - started)


def _fraction(done, total) -> float:
    from modeldesk.app.run_time import compression_fraction

    return compression_fraction(done, total)


def _row(what, n, estimate, mid, actual) -> dict:
    return {"what": what, "n": n, "estimate": estimate, "mid": mid, "actual": actual}


def _ratio(estimate, actual) -> float | None:
    return actual / estimate if estimate else None


def _fmt(value, spec=".1f") -> str:
    return "-" if value is None else format(value, spec)


def _line(row) -> str:
    ratio, mid_ratio = _ratio(row["estimate"], row["actual"]), _ratio(row["mid"], row["actual"])
    flag = "" if ratio is not None and 1 / AIM <= ratio <= AIM else "  <- outside 1.5x"
    return (
        f"{row['what']:<28} {row['n']:>5} {_fmt(row['estimate']):>9} {_fmt(row['actual']):>8} "
        f"{_fmt(ratio, '.2f'):>6} {_fmt(row['mid']):>9} {_fmt(mid_ratio, '.2f'):>6}{flag}"
    )


HEADER = (
    f"{'run':<28} {'items':>5} {'estimate':>9} {'actual':>8} {'ratio':>6} {'half-way':>9} {'ratio':>6}\n"
    "(seconds; ratio = actual / estimate; half-way = elapsed + ETA shown when the bar passed 50%)"
)


def _burn(stop) -> None:
    x = 0
    while not stop.is_set():
        x = (x * 1103515245 + 12345) % 2147483648


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale", type=float, default=1.0, help="subset size factor (1.0: ~200 items a task)"
    )
    parser.add_argument("--only", default="", help="comma-separated tasks: " + ",".join(t[0] for t in TASKS))
    parser.add_argument("--no-compress", action="store_true", help="training only")
    parser.add_argument("--load", type=int, default=0, help="busy processes to run beside the bench")
    parser.add_argument("--threads", type=int, default=0, help="pin the bench to this many cores")
    parser.add_argument(
        "--stages", action="store_true", help="after each training, its stages' seconds against the plan's"
    )
    args = parser.parse_args(argv)
    if args.threads:
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[: args.threads]))
    only = {s for s in args.only.split(",") if s}
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(args.load)]
    for burner in burners:
        burner.start()
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
        f"{args.load} busy processes beside; cores used {len(os.sched_getaffinity(0))}"
    )
    print(HEADER, flush=True)
    rows, begun = [], time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="md-estimates-") as tmp:
            for short, task, make_data, after, options in TASKS:
                if only and short not in only:
                    continue
                try:
                    rows += run_task(
                        short,
                        task,
                        make_data,
                        after,
                        options,
                        Path(tmp),
                        args.scale,
                        not args.no_compress,
                        args.stages,
                    )
                except Exception as exc:  # one task failing must not hide the others' figures
                    print(f"{short}: failed: {exc}", flush=True)
    finally:
        stop.set()
    print(
        f"\nload average at the end {os.getloadavg()[0]:.2f}; the bench took {time.monotonic() - begun:.0f} s"
    )
    print(HEADER)
    for row in rows:
        print(_line(row))
    off = [r for r in rows if not (r["estimate"] and 1 / AIM <= r["actual"] / r["estimate"] <= AIM)]
    print(f"within {AIM}x: {len(rows) - len(off)} of {len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``modeldesk demo``: the whole flow in a terminal, on images it makes.

project -> import -> train -> evaluate -> export -> serve -> predict through HTTP -> stop.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from modeldesk.app.progress import TerminalProgress, format_seconds
from modeldesk.app.sample_data import make_shapes_folder

DEMO_PROJECT = "demo-shapes"
DEMO_TEMPLATE = "image-classification/fast"


def run_demo(workspace=None, *, quiet: bool = False, per_class: int = 24) -> dict:
    """Run every step; return {"steps": {step: text}, ...numbers} (raises on the first failure)."""
    from modeldesk.app.workspace import Workspace

    scratch = Path(tempfile.mkdtemp(prefix="modeldesk-demo-"))
    ws = Workspace(workspace if workspace is not None else scratch / "workspace")
    steps: dict[str, str] = {}

    def say(step: str, text: str) -> None:
        steps[step] = text
        if not quiet:
            print(f"[{step}] {text}", file=sys.stderr, flush=True)

    try:
        say("workspace", str(ws.paths.root))
        train_folder = make_shapes_folder(scratch / "shapes", per_class, seed=1)
        holdout_folder = make_shapes_folder(scratch / "holdout", 10, seed=2)
        say("data", f"made {3 * per_class} images of circles, squares and triangles in {train_folder}")

        name = DEMO_PROJECT
        if name in {p["name"] for p in ws.list_projects()}:
            name = f"{DEMO_PROJECT}-{int(time.time())}"
        ws.create_project(name, "image-classification")
        report = ws.import_data(name, train_folder)
        say(
            "import",
            f"project {name}: added {report['added']}, duplicates {report['duplicates']}, "
            f"failed {len(report['failed'])}",
        )

        estimate = ws.estimate_training(name, DEMO_TEMPLATE)
        say("plan", f"estimated training time {format_seconds(estimate.get('eta_s'))}")
        bar = None if quiet else TerminalProgress("training")
        started = time.monotonic()
        try:
            result = ws.train(
                name,
                DEMO_TEMPLATE,
                progress=bar
                and (lambda e: bar.update_fraction(e.get("fraction") or 0, e.get("stage"), e.get("eta_s"))),
            )
        finally:
            bar and bar.close()
        took = time.monotonic() - started
        model = result["model"]
        say(
            "train",
            f"model {model}: {result['metrics']['accuracy']:.0%} right on held-out images, "
            f"in {format_seconds(took)}",
        )

        evaluation = ws.evaluate(model, holdout_folder)
        say("evaluate", f"{evaluation['accuracy']:.0%} right on {evaluation['n']} new images")

        export = ws.export_model(model, scratch / "export")
        say("export", f"{export['path']} ({export['size_bytes'] / 1e6:.1f} MB)")

        probe = sorted((holdout_folder / "triangle").glob("*.jpg"))[0]
        service = ws.start_service(export["path"])
        try:
            answer = _predict_http(service.url, probe)
        finally:
            service.stop()
        prediction = answer["predictions"][0]
        say(
            "serve",
            f"{service.url} answered {prediction['label']} ({prediction['score']:.0%}) for "
            f"{probe.name} in {answer['latency_ms']:.1f} ms; service stopped",
        )
        return {
            "steps": steps,
            "project": name,
            "model": model,
            "train_accuracy": result["metrics"]["accuracy"],
            "evaluate_accuracy": evaluation["accuracy"],
            "export": export["path"],
            "prediction": prediction,
            "workspace": str(ws.paths.root),
        }
    finally:
        ws.close()


def _predict_http(url: str, image_path: Path) -> dict:
    body = json.dumps({"image": base64.b64encode(image_path.read_bytes()).decode("ascii")}).encode()
    request = urllib.request.Request(
        url + "v1/predict", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())

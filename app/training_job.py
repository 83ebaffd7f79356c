"""The training job: what the scheduler's worker process runs for "Train"."""

from __future__ import annotations

import logging
import time

from modeldesk.app import pipeline
from modeldesk.app.workspace import Workspace

log = logging.getLogger(__name__)


def run_training(params: dict, ctx) -> dict:
    """Job function: train a project's model, record it, pre-label the unlabeled samples."""
    from modeldesk.deploy import new_model_id
    from modeldesk.trainers.tasks import get_trainer
    from modeldesk.trainers.templates import get_template

    ws = Workspace(params["workspace"])
    try:
        project = ws.project(params["project"])
        samples = pipeline.check_trainable(ws, project, params["template"])
        template = get_template(params["template"])
        model_id = ctx.state.get("model_id") or new_model_id()
        ctx.checkpoint({"model_id": model_id})
        out_dir = ws.paths.models / model_id

        def progress(stage, fraction, eta_s=None, metrics=None):
            ctx.progress(stage, fraction, eta_s=eta_s, metrics=metrics)

        options = {"cluster": params["cluster"]} if params.get("cluster") else {}
        result = get_trainer(project.task).train(
            samples, template, out_dir, pipeline.feature_cache_dir(ws),
            time_budget=params.get("time_budget"), device=params.get("device") or "auto",
            progress=progress, should_stop=ctx.should_stop, model_id=model_id, **options,
        )
        ws.store.add_model(project, model_id, str(result.artifact_dir), template.name, result.metrics)
        for skipped in result.skipped:
            log.warning("training skipped %s: %s", skipped["file"], skipped["reason"])
        if project.target in ("label", "boxes"):
            noun = {"text": "texts", "audio": "clips"}.get(project.kind, "images")
            ctx.progress(f"Scoring your {noun} for label suggestions", 0.99)
            scoring = time.monotonic()
            pipeline.prelabel(ws, project, model_id, result.artifact_dir, ctx)
            result.plan["scoring_s"] = round(time.monotonic() - scoring, 2)
        return {
            "model": model_id,
            "path": str(result.artifact_dir),
            "metrics": pipeline.headline(result.metrics),
            "plan": result.plan,
            "warnings": list(result.warnings),
            "skipped": list(result.skipped),
        }
    finally:
        ws.close()

"""The training job: what the scheduler's worker process runs for "Train"."""

from __future__ import annotations

import logging
import time

from threadpoolctl import threadpool_limits

from modeldesk.app import pipeline
from modeldesk.app.anomaly_masks import defect_mask_options
from modeldesk.app.calibration import calibrated_seconds, learn, load_factor
from modeldesk.app.keep_up import ORIGIN, ORIGIN_KEY
from modeldesk.app.run_time import JOB_START_S, RunProgress, scoring_count, scoring_seconds, whole_run
from modeldesk.app.tables import train_options
from modeldesk.app.workspace import Workspace
from modeldesk.datasets.kinds import sample_kind
from modeldesk.scheduler.cost import set_measurement_scale
from modeldesk.scheduler.speed import free_cores, slowdown

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

        # one bar over the training and the scoring for label suggestions that follows it
        scored = scoring_count(ws.store, project)
        trainer = get_trainer(project.task)
        cache_dir = pipeline.feature_cache_dir(ws)
        # this machine, as busy as it is now (the ETAs and the lesson learned use it)
        speed = slowdown(threads=getattr(trainer, "threads", None))
        set_measurement_scale(load_factor(speed))  # what this run measures, kept in the priors' units
        bar = RunProgress(
            ctx.progress,
            scoring_seconds(cache_dir, project, scored, template=template.name),
            noun=sample_kind(project.kind).many,
            counted=bool(getattr(trainer, "counts_scoring", False)),
            scale=calibrated_seconds(cache_dir, template.name, 1.0, speed),
        )
        options = {"cluster": params["cluster"]} if params.get("cluster") else {}
        options.update(train_options(ws.store, project))  # a table's target column and column types
        options.update(defect_mask_options(ws.store, project, trainer))  # pixel AUROC saved at training
        started = time.monotonic()
        with threadpool_limits(free_cores()):  # numpy's fits leave the cores other programs use
            result = trainer.train(
                samples,
                template,
                out_dir,
                pipeline.feature_cache_dir(ws),
                time_budget=params.get("time_budget"),
                device=params.get("device") or "auto",
                progress=bar.training,
                should_stop=ctx.should_stop,
                model_id=model_id,
                **options,
            )
        metrics = dict(result.metrics)
        if params.get("auto"):  # "Improve as I label": the pickers keep the user's own model as default
            metrics[ORIGIN_KEY] = ORIGIN
        ws.store.add_model(project, model_id, str(result.artifact_dir), template.name, metrics)
        for skipped in result.skipped:
            log.warning("training skipped %s: %s", skipped["file"], skipped["reason"])
        if scored:
            bar.scoring(0, scored)
            scoring = time.monotonic()
            pipeline.prelabel(ws, project, model_id, result.artifact_dir, ctx, progress=bar.scoring)
            result.plan["scoring_s"] = round(time.monotonic() - scoring, 2)
        plan = dict(result.plan or {})
        if isinstance(plan.get("actual_s"), (int, float)):  # the trainer's own time, then the whole job's
            plan["training_s"] = plan["actual_s"]
            plan["actual_s"] = round(time.monotonic() - started, 2)
        if isinstance(plan.get("eta_s"), (int, float)):
            plan.update(whole_run({"eta_s": plan["eta_s"], "plan": plan}, bar.scoring_s)["plan"])
            # the next estimate of this recipe learns from this one (the worker's start included)
            learn(cache_dir, template.name, plan["eta_s"], speed, time.monotonic() - started + JOB_START_S)
            plan["raw_eta_s"], plan["eta_s"] = plan["eta_s"], round(bar.scale * plan["eta_s"], 1)
        return {
            "model": model_id,
            "path": str(result.artifact_dir),
            "metrics": pipeline.headline(result.metrics),
            "plan": plan,
            "warnings": list(result.warnings),
            "notes": list(result.notes),
            "skipped": list(result.skipped),
        }
    finally:
        set_measurement_scale(None)
        ws.close()

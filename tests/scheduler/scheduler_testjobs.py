"""Job functions run by the job-queue tests in worker processes (imported by module name)."""

import os
import time
from pathlib import Path

from modeldesk.scheduler import CostModel, plan, run_partitioned


def count_items(params, ctx):
    """Process ``n`` items through run_partitioned, skipping those already in the cache folder."""
    cache = Path(params["cache"])
    cache.mkdir(parents=True, exist_ok=True)
    resumed_from = ctx.state.get("done", 0)

    def process_chunk(share, chunk):
        for item in chunk:
            marker = cache / f"{item}.done"
            if marker.exists():
                continue
            time.sleep(params["seconds_per_item"])
            with open(params["calls"], "a", encoding="utf-8") as stream:
                stream.write(f"{item}\n")
            marker.write_text("ok")
        return [item * 2 for item in chunk]

    def progress(done, total, eta_s):
        ctx.checkpoint({"done": max(done, ctx.state.get("done", 0))})
        ctx.progress("items", done / total, eta_s=eta_s)

    work = plan("count", params["n"], devices=["cpu"], cost_model=CostModel(params["cost_dir"]))
    results = run_partitioned(
        work, range(params["n"]), process_chunk, progress=progress, should_stop=ctx.should_stop, chunk_size=1
    )
    ctx.log.info("all %d items done", len(results))
    return {"sum": sum(results), "resumed_from": resumed_from, "attempt": ctx.attempt}


def sleeper(params, ctx):
    """Write the pid, then sleep (only on the first attempt); ignores cancel when asked to."""
    Path(params["pid_file"]).write_text(str(os.getpid()))
    if ctx.attempt == 1:
        deadline = time.monotonic() + params.get("seconds", 30)
        while time.monotonic() < deadline:
            if not params.get("ignore_cancel") and ctx.should_stop():
                return {"stopped": True}
            time.sleep(0.02)
    return {"attempt": ctx.attempt}


def crash(params, ctx):
    """Fail with a recognisable error."""
    ctx.progress("start", 0.1, message="about to fail")
    raise RuntimeError("deliberate failure " + params.get("tag", ""))


def quick(params, ctx):
    """Finish at once, reporting progress with metrics."""
    ctx.progress("one", 0.5, metrics={"loss": 0.25})
    ctx.progress("two", 1.0, message="finished")
    return {"value": params["value"] * 2}

"""The edge server's state (store, models, pipelines, metrics, log tail) and ``serve_edge``."""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from pathlib import Path

from .actions import ActionRunner
from .metrics import EdgeMetrics
from .pipeline import Pipeline, PipelineBusy, check_config
from .registry import ModelRegistry, RegistryError
from .rules import RuleError, check_rule
from .store import DEFAULT_MAX_EVENTS, EdgeStore, now_iso

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
LOG_LINES = 2000


class EdgeError(ValueError):
    """A request the server refuses; ``status`` is the HTTP status."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message, self.status = message, status


class LogTail(logging.Handler):
    """The last LOG_LINES records of the ``modeldesk`` loggers, with the token blanked out."""

    def __init__(self, secret: str | None):
        super().__init__(logging.INFO)
        self.lines: deque = deque(maxlen=LOG_LINES)
        self.secret = secret
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record) -> None:
        try:
            line = self.format(record)
        except Exception:  # a record that cannot be formatted is left out of the tail only
            return
        if self.secret:
            line = line.replace(self.secret, "***")
        self.lines.append(line)


class EdgeServer:
    """Everything one edge server holds, backed by the store in ``folder``.

    ``resolve(source) -> path`` turns a workspace model id into an artifact folder and
    ``workspace_models() -> list`` lists the workspace's models (both given by the app; a bundle has
    neither). Pipelines saved as running start again.
    """

    def __init__(
        self,
        folder,
        *,
        resolve=None,
        workspace_models=None,
        device: str = "auto",
        threads: int | None = None,
        max_events: int = DEFAULT_MAX_EVENTS,
        token: str | None = None,
        start_pipelines: bool = True,
    ):
        self.folder = Path(folder)
        self.started = now_iso()
        self.logs = LogTail(token)
        logging.getLogger("modeldesk").addHandler(self.logs)
        if logging.getLogger("modeldesk").getEffectiveLevel() > logging.INFO:
            logging.getLogger("modeldesk").setLevel(logging.INFO)
        self.store = EdgeStore(self.folder, max_events=max_events)
        self.registry = ModelRegistry(self.store, resolve=resolve, device=device, threads=threads)
        self.workspace_models = workspace_models
        self.metrics = EdgeMetrics()
        self.actions = ActionRunner()
        self._lock = threading.Lock()
        self.pipelines: dict[str, Pipeline] = {}
        for config in self.store.pipelines():
            pipeline = self._make(config)
            if config.get("running") and start_pipelines:
                pipeline.start()
        log.info(
            "edge server ready in %s: %d models, %d pipelines",
            self.folder,
            len(self.registry.names()),
            len(self.pipelines),
        )

    def close(self) -> None:
        for pipeline in list(self.pipelines.values()):
            pipeline.stop()
        self.actions.stop()
        self.store.close()
        logging.getLogger("modeldesk").removeHandler(self.logs)

    def _make(self, config: dict) -> Pipeline:
        pipeline = Pipeline(
            config, registry=self.registry, store=self.store, metrics=self.metrics, actions=self.actions
        )
        with self._lock:
            self.pipelines[config["id"]] = pipeline
        return pipeline

    def _labels(self, model: str) -> list[str]:
        try:
            return list(self.registry.predictor(model)[0].labels)
        except (RegistryError, ValueError, OSError):
            return []

    # models
    def add_model(self, source: str, name: str) -> dict:
        name, version = self.registry.add(source, name)
        return {"name": name, "version": version}

    def set_live(self, name: str, version) -> dict:
        if isinstance(version, bool) or not isinstance(version, int):
            raise EdgeError('"version" must be a version number', 422)
        return {"name": name, "live_version": self.registry.set_live(name, version)}

    def remove_model(self, name: str) -> dict:
        users = [p.config["name"] for p in self.pipelines.values() if p.config["model"] == name]
        if users:
            raise EdgeError(
                f"model {name!r} is used by pipeline {users[0]!r}: delete the pipeline first", 409
            )
        self.registry.remove(name)
        return {"removed": name}

    # pipelines
    def pipeline(self, pipeline_id: str) -> Pipeline:
        pipeline = self.pipelines.get(pipeline_id)
        if pipeline is None:
            raise EdgeError(f"no pipeline {pipeline_id!r}", 404)
        return pipeline

    def add_pipeline(self, body: dict) -> dict:
        try:
            config = check_config(body, self.registry.has, self._labels)
        except (RuleError, ValueError) as exc:
            raise EdgeError(str(exc), 422) from None
        self.store.save_pipeline(config)
        pipeline = self._make(config)
        if config["running"]:
            pipeline.start()
        return pipeline.describe()

    def start_pipeline(self, pipeline_id: str) -> dict:
        pipeline = self.pipeline(pipeline_id)
        pipeline.stop()
        pipeline.config["running"] = True
        self.store.save_pipeline(pipeline.config)
        try:
            pipeline.start()
        except PipelineBusy as exc:
            raise EdgeError(str(exc), 409) from None
        return pipeline.describe()

    def stop_pipeline(self, pipeline_id: str) -> dict:
        pipeline = self.pipeline(pipeline_id)
        pipeline.config["running"] = False
        self.store.save_pipeline(pipeline.config)
        pipeline.stop()
        return pipeline.describe()

    def delete_pipeline(self, pipeline_id: str) -> dict:
        pipeline = self.pipeline(pipeline_id)
        pipeline.stop()
        with self._lock:
            self.pipelines.pop(pipeline_id, None)
        self.store.delete_pipeline(pipeline_id)
        self.metrics.forget_pipeline(pipeline_id)
        return {"removed": pipeline_id}

    def add_rule(self, pipeline_id: str, body: dict) -> dict:
        pipeline = self.pipeline(pipeline_id)
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if k != "id"}
        try:
            rule = check_rule(body, self._labels(pipeline.config["model"]))
        except RuleError as exc:
            raise EdgeError(str(exc), 422) from None
        pipeline.set_rules([*pipeline.config["rules"], rule])
        self.store.save_pipeline(pipeline.config)
        return rule

    def delete_rule(self, pipeline_id: str, rule_id: str) -> dict:
        pipeline = self.pipeline(pipeline_id)
        rules = [r for r in pipeline.config["rules"] if r["id"] != rule_id]
        if len(rules) == len(pipeline.config["rules"]):
            raise EdgeError(f"pipeline {pipeline_id!r} has no rule {rule_id!r}", 404)
        pipeline.set_rules(rules)
        self.store.save_pipeline(pipeline.config)
        return {"removed": rule_id}

    # reading
    def list_pipelines(self) -> list[dict]:
        with self._lock:
            pipelines = list(self.pipelines.values())
        return [p.describe() for p in pipelines]

    def status(self) -> dict:
        from modeldesk import __version__

        return {
            "models": self.registry.describe(),
            "pipelines": self.list_pipelines(),
            "events_total": self.store.count_events(),
            "started": self.started,
            "version": __version__,
        }

    def list_workspace_models(self) -> list[dict]:
        if self.workspace_models is None:
            return []
        return list(self.workspace_models())


def device_load() -> dict:
    """CPU, memory and GPU load now (``GET /v1/edge/device``)."""
    import psutil

    memory = psutil.virtual_memory()
    gpus = []
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            for i in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                name = pynvml.nvmlDeviceGetName(handle)
                used = pynvml.nvmlDeviceGetMemoryInfo(handle)
                gpus.append(
                    {
                        "name": name.decode() if isinstance(name, bytes) else str(name),
                        "load_percent": float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu),
                        "memory_used": int(used.used),
                        "memory_total": int(used.total),
                    }
                )
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVIDIA driver (the usual case on a CPU box): no GPUs to show
        gpus = []
    return {
        "cpu_percent": float(psutil.cpu_percent(interval=None)),
        "cpu_count": os.cpu_count() or 1,
        "memory": {"used": int(memory.total - memory.available), "total": int(memory.total)},
        "gpus": gpus,
    }


def serve_edge(
    folder,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    *,
    resolve=None,
    workspace_models=None,
    allowed_origins=(),
    log_level: str = "info",
    on_ready=None,
) -> None:
    """Check the bind, open the store, then serve with uvicorn until interrupted."""
    import uvicorn

    from ..server import check_bind, port_is_free, server_config
    from ..service import LOCAL_HOSTS
    from .app import create_edge_app

    token = token if token is not None else (os.environ.get("MODELDESK_TOKEN") or None)
    check_bind(host, port, token)
    if port and not port_is_free(host, port):
        raise ValueError(f"port {port} on {host} is in use (another edge server?); pick another with --port")
    server = EdgeServer(folder, resolve=resolve, workspace_models=workspace_models, token=token)
    try:
        app = create_edge_app(
            server, token=token, local_only=host.strip("[]") in LOCAL_HOSTS, allowed_origins=allowed_origins
        )
        if on_ready is not None:
            on_ready()
        uvicorn.Server(server_config(app, host, port, log_level=log_level)).run()
    finally:
        server.close()

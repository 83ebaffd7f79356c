"""Put a model to work from the desktop app: an edge server in a background process, the model added
to it, a pipeline started on a source with a rule, and the console's address.

The server is a subprocess (``python -m modeldesk edge serve``) so that its sources, decoding and
models never share the app's interpreter; it is reached only through its HTTP API (docs/EDGE_API.md), with
a random token that the console's address carries once.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

from modeldesk.app.edge import EdgeClient, EdgeClientError
from modeldesk.app.service_handle import free_port

log = logging.getLogger(__name__)

#: how long a fresh edge server may take to answer /healthz (imports, the store, a first model)
START_TIMEOUT_S = 60.0


class EdgeError(EdgeClientError):
    """The edge server did not start, or what to run is incomplete; the message says what to do."""


class EdgeProcess:
    """A running ``modeldesk edge serve`` subprocess: ``url``, ``token``, ``call()``, ``stop()``."""

    def __init__(self, process: subprocess.Popen, url: str, token: str, log_path: Path):
        self.process = process
        self.url = url
        self.token = token
        self.log_path = log_path

    @classmethod
    def start(
        cls, workspace_root, *, port: int = 0, timeout: float = START_TIMEOUT_S, log_dir=None
    ) -> EdgeProcess:
        """Start an edge server on loopback for the workspace ``workspace_root`` and return once it
        answers ``/healthz`` (raises :class:`EdgeError` with its last log lines otherwise)."""
        port = port or free_port()
        token = secrets.token_urlsafe(24)
        log_dir = Path(log_dir or Path(workspace_root) / "logs")
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / "edge-server.log"
        # a frozen app's executable is the modeldesk command itself (packaging/entry.py)
        program = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "modeldesk"]
        command = [*program, "--workspace", str(workspace_root), "edge", "serve"]
        command += ["--host", "127.0.0.1", "--port", str(port)]
        env = dict(os.environ, MODELDESK_TOKEN=token)  # not on the command line, where `ps` shows it
        with open(log_path, "ab") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        edge = cls(process, f"http://127.0.0.1:{port}/", token, log_path)
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise EdgeError(f"The edge server stopped as it started: {edge.last_log_line()}")
            try:
                if edge.call("GET", "healthz", timeout=2.0).get("ok"):
                    break
            except EdgeClientError:
                pass
            if time.monotonic() > deadline:
                edge.stop()
                raise EdgeError(f"The edge server did not answer within {timeout:.0f} s; see {log_path}")
            time.sleep(0.2)
        log.info("edge server started at %s (pid %d, log %s)", edge.url, process.pid, log_path)
        return edge

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    @property
    def console_url(self) -> str:
        """The console's address; the page takes the token from it once and drops it from the bar."""
        return f"{self.url}?token={self.token}"

    def last_log_line(self) -> str:
        try:
            lines = [line for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return "no log was written"
        return lines[-1].replace(self.token, "***") if lines else "no log was written"

    def call(self, method: str, path: str, body: dict | None = None, *, timeout: float = 30.0) -> dict:
        """One API call; a refusal raises :class:`EdgeClientError` with the server's message."""
        return EdgeClient(self.url, self.token, timeout=timeout).call(method, "/" + path.lstrip("/"), body)

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the server to finish (SIGTERM), then kill it if it has not within ``timeout``."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        log.info("edge server at %s stopped", self.url)


def model_facts(ws, model_id: str) -> dict:
    """What the card needs of the copy of ``model_id`` that would be put to work: its ``labels`` (a
    rule picks one), whether it reads ``pictures`` (video, cameras and streams need it; a folder of
    files works for every model), the ``noun`` of what it reads, and ``area``: whether its rule is
    the share of the picture a class covers (a segmentation model) rather than how sure it is."""
    from modeldesk.deploy import load_artifact
    from modeldesk.deploy.inputs import input_class

    artifact = load_artifact(ws.serving_path(model_id))
    model_input = input_class(artifact.input_kind)
    return {
        "labels": list(artifact.labels),
        "pictures": model_input.pictures,
        "noun": model_input.noun,
        "area": artifact.target == "mask",
    }


def edge_name(project: str, model_id: str) -> str:
    """The name a model gets on the edge server: its project's name in letters, digits and dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", str(project).lower()).strip("-")[:48]
    return slug or re.sub(r"[^A-Za-z0-9_.-]+", "-", model_id)[:48] or "model"


def camera_source(index: int = 0) -> str:
    return f"camera:{int(index)}"


def put_to_work(
    ws,
    model_id: str,
    *,
    project: str,
    source: str,
    label: str,
    score: float,
    fps: float = 5.0,
    hold_frames: int = 1,
    cooldown_s: float = 10.0,
    edge: EdgeProcess | None = None,
    area: bool = False,
) -> dict:
    """Run ``model_id`` on ``source`` with the rule "``label`` at ``score`` or more" (with ``area``:
    "``label`` covers at least ``score`` of the picture", for a segmentation model).

    ``edge``: a server started before and still running (it is reused); else one is started. The
    model is added under its project's name unless its live version is already this model; a pipeline
    of this model on the same source is replaced. Returns
    ``{"edge", "name", "version", "pipeline", "console"}``.
    """
    if not source.strip():
        raise EdgeError("Choose a source: the webcam, a video file, a folder or a stream address.")
    if edge is None or not edge.running:
        edge = EdgeProcess.start(ws.paths.root)
    name = edge_name(project, model_id)
    models = {m["name"]: m for m in edge.call("GET", "v1/edge/models").get("models", [])}
    known = models.get(name)
    live = next(
        (
            v
            for v in (known or {}).get("versions", [])
            if v.get("version") == (known or {}).get("live_version")
        ),
        None,
    )
    if live is not None and live.get("model_id") == model_id:
        version = known["live_version"]
    else:
        added = edge.call("POST", "v1/edge/models", {"source": model_id, "name": name})
        version = added["version"]
        if known is not None:  # a newer model of the same project: it becomes the live one
            edge.call("POST", f"v1/edge/models/{name}/live", {"version": version})
    rule = {
        "when": {"kind": "area" if area else "label", "label": label, "score": float(score)},
        "hold_frames": int(hold_frames),
        "hold_s": 0,
        "cooldown_s": float(cooldown_s),
        "actions": [],
    }
    # "Put to work" again on the same source replaces its pipeline (its events stay); one is enough
    for old in edge.call("GET", "v1/edge/pipelines").get("pipelines", []):
        if old.get("source") == source.strip() and old.get("model") == name:
            edge.call("DELETE", f"v1/edge/pipelines/{old['id']}")
    pipeline = edge.call(
        "POST",
        "v1/edge/pipelines",
        {"source": source.strip(), "model": name, "fps": fps, "rules": [rule], "start": True},
    )
    log.info(
        "put %s to work as %s v%s on %s (pipeline %s)", model_id, name, version, source, pipeline.get("id")
    )
    return {"edge": edge, "name": name, "version": version, "pipeline": pipeline, "console": edge.console_url}

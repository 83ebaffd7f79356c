"""The app's side of the edge server: where its store lives in the workspace, how a workspace model id
becomes an artifact folder, which address the CLI talks to, and a small client for that API."""

from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from modeldesk.safejson import load_file
from modeldesk.safejson import loads as safe_loads

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765  # deploy.edge.server.DEFAULT_PORT; repeated so the CLI starts without onnxruntime
ADDRESS_FILE = "edge.json"
CLIENT_TIMEOUT_S = 60.0


def edge_folder(workspace_root) -> Path:
    """The edge server's store (SQLite, model copies) inside the workspace."""
    return Path(workspace_root) / "edge"


def write_address(workspace_root, host: str, port: int) -> None:
    """Remember where this workspace's edge server listens (the token is never written)."""
    path = Path(workspace_root) / ADDRESS_FILE
    path.write_text(json.dumps({"host": host, "port": int(port), "pid": os.getpid()}), encoding="utf-8")


def default_url(workspace_root) -> str:
    """The URL of this workspace's edge server: the address it wrote, else 127.0.0.1 and the default port."""
    host, port = "127.0.0.1", DEFAULT_PORT
    try:
        saved = load_file(Path(workspace_root) / ADDRESS_FILE, max_bytes=4096)
        host, port = str(saved.get("host") or host), int(saved.get("port") or port)
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def workspace_resolver(workspace_root):
    """``resolve(model_id) -> artifact folder`` for the edge server (the copy in use, if compressed)."""

    def resolve(source: str) -> Path:
        from modeldesk.app.workspace import Workspace

        ws = Workspace(workspace_root, cleanup=False)
        try:
            return ws.serving_path(source)
        finally:
            ws.close()

    return resolve


def workspace_lister(workspace_root):
    """``list() -> [{"id", "project", "task", "template", "created", "metrics"}]`` of every project's models."""

    def models() -> list[dict]:
        from modeldesk.app.workspace import Workspace

        ws = Workspace(workspace_root, cleanup=False)
        try:
            out = []
            for project in ws.list_projects():
                for model in ws.list_models(project["name"]):
                    out.append(
                        {
                            "id": model["id"],
                            "project": project["name"],
                            "task": project["task"],
                            "template": model.get("template"),
                            "created": model.get("created"),
                            "metrics": model.get("metrics") or {},
                        }
                    )
            return out
        finally:
            ws.close()

    return models


class EdgeClientError(RuntimeError):
    """The edge server refused a call or could not be reached; the message says what to do."""


class EdgeClient:
    """JSON calls to an edge server (standard library only)."""

    def __init__(self, url: str, token: str | None = None, timeout: float = CLIENT_TIMEOUT_S):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def call(self, method: str, path: str, body: dict | None = None, query: dict | None = None) -> dict:
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v not in (None, "")})
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return safe_loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                message = safe_loads(exc.read()).get("error") or exc.reason
            except (ValueError, AttributeError):
                message = exc.reason
            raise EdgeClientError(f"the edge server at {self.url} refused: {message}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EdgeClientError(
                f"no edge server answers at {self.url} ({reason}); start one with `modeldesk edge serve`"
            ) from None

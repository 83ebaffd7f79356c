"""Which copy of a model serves (the original, or its smaller and faster copy) and the local service.

:class:`ServingCalls` is mixed into :class:`~modeldesk.app.workspace.Workspace` (uses its ``store``
and ``paths``); Qt-free and safe to call from a worker thread.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


class ServingCalls:
    """Workspace calls on serving a model (mixed into ``Workspace``)."""

    # -- which copy of a model is used (the original, or its smaller and faster copy) ----------------

    def serving_path(self, model) -> Path:
        """The artifact tried, served and bundled for ``model``: its compressed copy when one was kept
        and is in use (:meth:`use_compressed`), else the model itself."""
        in_use = self.compressed_in_use(model)
        return Path(in_use) if in_use else self.model_path(model)

    def compressed_in_use(self, model) -> str | None:
        """The path of ``model``'s compressed copy in use, or None (the original is used)."""
        import json

        try:
            path = json.loads((self.paths.root / "models_in_use.json").read_text(encoding="utf-8")).get(
                str(model)
            )
        except (OSError, ValueError, AttributeError):
            return None
        return path if path and Path(path).exists() else None

    def use_compressed(self, model_id: str, path=None) -> None:
        """Use the compressed copy at ``path`` for ``model_id`` when it is tried, served and bundled;
        ``None`` goes back to the original."""
        import json

        from modeldesk.fileio import atomic_write

        file = self.paths.root / "models_in_use.json"
        try:
            choices = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            choices = {}
        if path is None:
            choices.pop(str(model_id), None)
        else:
            choices[str(model_id)] = str(Path(path).resolve())
        atomic_write(file, json.dumps(choices, indent=1).encode("utf-8"))
        log.info("model %s now uses %s", model_id, path or "its original")

    # -- the local service ------------------------------------------------------------------------

    def compression_refusal(self, model) -> str:
        """Why the app does not offer to make ``model`` smaller ("" when it does)."""
        from modeldesk.app.pipeline import compression_refusal
        from modeldesk.deploy import load_artifact

        return compression_refusal(load_artifact(self.model_path(model)))

    def service_port(self, model_id: str) -> int:
        """The port ``model_id`` will be served on (the one it had last time, else the default)."""
        from modeldesk.app import service_ports

        return service_ports.port_for(self.paths.root, model_id, self.settings.service_port)

    def serve_model(self, model_id: str, host: str = "127.0.0.1", token=None, port: int | None = None):
        """Start the service for ``model_id`` on ``port``, else the port it had last time (the
        workspace's default port the first time); the handle's ``note`` says when that port was taken."""
        from modeldesk.app import service_ports

        port, note = service_ports.choose_port(
            self.paths.root, model_id, host, self.settings.service_port, wanted=port
        )
        handle = self.start_service(model_id, host=host, port=port, token=token)
        service_ports.remember(self.paths.root, model_id, port)
        handle.note = note
        return handle

    def predict_payloads(self, model, payloads, names=None) -> list[dict]:
        """Predictions for in-memory files (a photo's JPEG bytes, a clip's WAV bytes), as the service
        gives them: the live preview's call (``app.live``)."""
        payloads = [bytes(p) for p in payloads]
        names = list(names) if names is not None else [f"frame {i + 1}" for i in range(len(payloads))]
        return self._predictor(model).predict(payloads, names=names)

    def start_service(self, model, host: str = "127.0.0.1", port: int = 0, token=None):
        """Start the inference service in a background thread; returns a handle with url/stop()."""
        from modeldesk.app.service_handle import ServiceHandle

        return ServiceHandle.start(self.serving_path(model), host=host, port=port, token=token)

"""The cluster beside "Run on": whether training uses it, and each worker's cores, GPUs and speed.

:meth:`ClusterPanel.load` asks ``Workspace.cluster_workers()`` in the page's thread pool (the
network is never waited on by the UI thread) and shows the answer with :meth:`show_workers`, or
:meth:`show_unreachable`. Hidden while the workspace has no cluster.
"""

from __future__ import annotations

import logging
from html import escape

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QLabel, QVBoxLayout, QWidget

from modeldesk.errors import user_message

log = logging.getLogger(__name__)


def worker_line(worker: dict) -> str:
    """One worker in plain words: "w1 (lab-pc): 8 cores, 1 GPU, 41 images/s"."""
    where = f" ({worker['host']})" if worker.get("host") and worker["host"] != worker["name"] else ""
    gpus = worker.get("gpus") or 0
    cores = worker.get("cores", "?")
    parts = [
        f"{cores} core{'' if cores == 1 else 's'}",
        "no GPU" if not gpus else f"{gpus} GPU{'s' if gpus > 1 else ''}",
    ]
    measured = (worker.get("measured") or {}).get("items_per_s")
    parts.append(f"{measured:.0f} images/s" if measured else "speed measured on first use")
    text = f"{worker['name']}{where}: {', '.join(parts)}"
    if worker.get("refused"):
        text += f" — not used: {worker['refused']}"
    return text


class ClusterPanel(QWidget):
    """ "Also use the cluster" and one line per worker; ``changed()`` when what training would use
    changed (the box was toggled, or the cluster's answer came)."""

    changed = Signal()

    def __init__(self, workspace=None, parent: QWidget | None = None):
        super().__init__(parent)
        self.ws = workspace
        self.address: str | None = None
        self.use = QCheckBox("Also use the cluster")
        self.use.setChecked(True)
        self.use.setToolTip(
            "Training splits the work between this computer and the cluster's workers, "
            "in proportion to the speed measured on each."
        )
        self.use.toggled.connect(lambda _on: self.changed.emit())
        self.workers = QLabel()
        self.workers.setTextFormat(Qt.RichText)
        self.workers.setWordWrap(True)
        self.workers.setObjectName("clusterWorkers")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.use)
        layout.addWidget(self.workers)
        self.setVisible(False)

    def load(self, run) -> None:
        """Look at the workspace's cluster with ``run(fn, on_done)``, the page's background runner."""
        ws = self.ws

        def look(state):
            spec = ws.resolve_cluster()
            if not spec:
                return None, [], None
            try:
                return spec["address"], ws.cluster_workers(), None
            except Exception as exc:  # noqa: BLE001 - an unreachable cluster is shown, not raised
                if user_message(exc) is None:
                    log.exception("looking at the cluster %s failed", spec["address"])
                return spec["address"], [], user_message(exc) or "see the log for details"

        def done(found):
            address, workers, problem = found
            if problem:
                self.show_unreachable(address, problem)
            else:
                self.show_workers(address, workers)
            self.changed.emit()

        run(look, done)

    def show_workers(self, address: str | None, workers: list[dict]) -> None:
        """Show ``address``'s workers (None: the workspace has no cluster, the panel hides)."""
        self.address = address
        if not address:
            self.setVisible(False)
            return
        usable = [w for w in workers if not w.get("refused")]
        self.use.setText(
            f"Also use the cluster at {address} ({len(usable)} worker{'s' if len(usable) != 1 else ''})"
        )
        self.use.setEnabled(bool(usable))
        lines = [escape(worker_line(w)) for w in workers] or [
            escape(f"No worker has joined yet: run `modeldesk worker {address}` on a machine that can help.")
        ]
        self.workers.setText("<br>".join(lines))
        self.setVisible(True)

    def show_unreachable(self, address: str, message: str) -> None:
        """The cluster did not answer: say so, and train on this computer only."""
        self.address = address
        self.use.setText(f"Also use the cluster at {address}")
        self.use.setEnabled(False)
        self.workers.setText(escape(f"Cannot reach it: {message}"))
        self.setVisible(True)

    def cluster_choice(self) -> str | None:
        """What to pass as ``cluster=`` to the Workspace: None (its setting) or "off"."""
        return None if self.address and self.use.isEnabled() and self.use.isChecked() else "off"

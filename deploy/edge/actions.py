"""What a fired rule does besides storing its event: a webhook POST, a CSV or JSONL line, the frame
saved to a folder. Actions run on one background thread with a bounded queue, so a slow webhook
never holds a pipeline back (past ``MAX_PENDING`` waiting actions, new ones are dropped and logged).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import queue
import threading
import urllib.request
from pathlib import Path

log = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_S = 3.0
MAX_PENDING = 256
CSV_FIELDS = ("id", "time", "source", "pipeline", "model", "version", "rule", "label", "score")


class ActionRunner:
    """Runs actions in the background; :meth:`stop` waits for those already queued."""

    def __init__(self):
        self._queue: queue.Queue = queue.Queue(MAX_PENDING)
        self._file_lock = threading.Lock()
        self.dropped = 0
        self.failed = 0
        self._thread = threading.Thread(target=self._run, name="edge-actions", daemon=True)
        self._thread.start()

    def submit(self, actions: list[dict], event: dict, snapshot: bytes | None) -> None:
        for action in actions:
            try:
                self._queue.put_nowait((action, event, snapshot))
            except queue.Full:
                self.dropped += 1
                log.warning(
                    "action %s dropped: %d actions are already waiting", action.get("type"), MAX_PENDING
                )

    def stop(self, timeout: float = 5.0) -> None:
        """Let the queued actions run for up to ``timeout`` seconds, then leave (the thread is a daemon)."""
        try:
            self._queue.put((None, None, None), timeout=timeout)
        except queue.Full:
            log.warning("%d actions were still waiting when the server stopped", self._queue.qsize())
            return
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            action, event, snapshot = self._queue.get()
            if action is None:
                return
            try:
                self.run(action, event, snapshot)
            except Exception as exc:  # a failing action is logged and counted; the next one still runs
                self.failed += 1
                log.error("action %s for event %s failed: %s", action.get("type"), event.get("id"), exc)

    def run(self, action: dict, event: dict, snapshot: bytes | None) -> None:
        """Run one action now."""
        kind = action["type"]
        if kind == "webhook":
            request = urllib.request.Request(
                action["url"],
                data=json.dumps(event, default=str).encode("utf-8"),
                headers={"Content-Type": "application/json", "User-Agent": "modeldesk-edge"},
                method="POST",
            )
            with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as response:
                response.read(1024)
        elif kind == "jsonl":
            line = json.dumps(
                {k: event.get(k) for k in (*CSV_FIELDS, "answer")}, ensure_ascii=False, default=str
            )
            self._append(Path(action["path"]), line + "\n")
        elif kind == "csv":
            path = Path(action["path"])
            buffer = io.StringIO()
            writer = csv.writer(buffer)
            with self._file_lock:
                if not path.exists() or path.stat().st_size == 0:
                    writer.writerow(CSV_FIELDS)
            writer.writerow([event.get(k) for k in CSV_FIELDS])
            self._append(path, buffer.getvalue())
        elif kind == "save_frame" and snapshot:
            folder = Path(action["folder"])
            folder.mkdir(parents=True, exist_ok=True)
            stamp = str(event.get("time", "")).replace(":", "-")
            (folder / f"event-{event.get('id')}-{stamp}.jpg").write_bytes(snapshot)

    def _append(self, path: Path, text: str) -> None:
        with self._file_lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8", newline="") as handle:
                handle.write(text)

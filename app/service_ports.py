"""The port each model is served on, remembered in the workspace so its address stays the same.

``/docs``, the console's examples and the bundle README show the real address; a model served again
comes back on the port it had. When that port is taken, the next free one is used and the handle says so.
"""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

from modeldesk.fileio import atomic_write

log = logging.getLogger(__name__)

FILE = "service_ports.json"


def port_is_free(host: str, port: int) -> bool:
    """True when a TCP server could listen on ``host:port`` now."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host.strip("[]"), int(port)))
        except OSError:
            return False
    return True


def remembered(root: Path) -> dict:
    """model id -> port, as saved (empty when the file is missing or damaged)."""
    try:
        data = json.loads((Path(root) / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}


def remember(root: Path, model_id: str, port: int) -> None:
    ports = remembered(root)
    if ports.get(str(model_id)) != int(port):
        ports[str(model_id)] = int(port)
        atomic_write(Path(root) / FILE, json.dumps(ports, indent=1).encode("utf-8"))


def port_for(root: Path, model_id: str, default: int) -> int:
    """The port ``model_id`` is served on: the one it had last time, else ``default``."""
    return remembered(root).get(str(model_id), int(default))


def choose_port(
    root: Path, model_id: str, host: str, default: int, wanted: int | None = None
) -> tuple[int, str]:
    """(port, note): ``wanted`` (else the model's remembered port, else ``default``) when free, else the
    next free one with a note saying why the address changed ("" when it did not)."""
    wanted = int(wanted) if wanted else port_for(root, model_id, default)
    if port_is_free(host, wanted):
        return wanted, ""
    for port in range(wanted + 1, wanted + 200):
        if port_is_free(host, port):
            return port, f"port {wanted} is in use by another program, so this time the address uses {port}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host.strip("[]"), 0))
        port = sock.getsockname()[1]
    return port, f"port {wanted} is in use by another program, so this time the address uses {port}"

"""A Dask scheduler on this machine for other machines' workers: start, stop, credentials.

A Dask worker runs whatever function a peer sends it, and a scheduler hands work to its workers:
whoever can talk to either runs code as the user who started them. So every cluster uses Dask's own
TLS, mutual and with encryption required, on loopback too (another local user must not submit
work): ``create_credentials`` writes one self-signed key and certificate (Dask's
``Security.temporary``) to a file readable by its owner only (mode 600), and the scheduler and the
workers require it from every peer. The file is the cluster's password: copy it to the worker
machines only. Loopback by default (``tls://127.0.0.1:8786``): only this machine can reach it; the
scheduler's HTTP server (health, metrics) listens on loopback whatever the host.

Run in the background by ``modeldesk cluster start`` as
``python -m modeldesk.scheduler.cluster_service STATE_DIR HOST PORT [CREDENTIALS]``; the state file
``STATE_DIR/scheduler.json`` holds its address and process id for ``stop``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from modeldesk.scheduler.cluster import ClusterError, _distributed

log = logging.getLogger(__name__)

STATE_FILE = "scheduler.json"
DEFAULT_PORT = 8786


def is_loopback(host: str) -> bool:
    """True for 127.x.x.x, ::1 and localhost."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_credentials(path) -> Path:
    """Write a new key and self-signed certificate for every role of a cluster (mode 600)."""
    try:
        security = _distributed().Security.temporary()
    except ImportError:
        raise ClusterError(
            "creating the cluster's TLS credentials needs cryptography: pip install modeldesk[cluster]"
        ) from None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(security.tls_scheduler_cert + security.tls_scheduler_key)
    os.replace(tmp, path)
    return path


def load_security(path):
    """The ``distributed.Security`` for a credentials file (every role, encryption required)."""
    path = Path(path).expanduser()
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii")
    except OSError as exc:
        raise ClusterError(
            f"{path}: cannot read the cluster credentials ({exc.strerror or exc}); copy the "
            "file `modeldesk cluster start` wrote"
        ) from None
    cert_end = text.find("-----END CERTIFICATE-----")
    if cert_end < 0 or "PRIVATE KEY-----" not in text:
        raise ClusterError(f"{path}: not a cluster credentials file (a certificate and a key are expected)")
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ClusterError(
            f"{path}: the cluster credentials can be read by other users of this machine, who could "
            f"then run code on the cluster; run: chmod 600 {path}"
        )
    cert_end += len("-----END CERTIFICATE-----\n")
    cert, key = text[:cert_end], text[cert_end:]
    return _distributed().Security(
        require_encryption=True,
        tls_ca_file=cert,
        tls_client_cert=cert,
        tls_client_key=key,
        tls_scheduler_cert=cert,
        tls_scheduler_key=key,
        tls_worker_cert=cert,
        tls_worker_key=key,
    )


def security_for(address: str | None, credentials=None):
    """None for a ``tcp://`` address; the Security of ``credentials`` for ``tls://``."""
    if credentials:
        return load_security(credentials)
    if address and address.startswith("tls://"):
        raise ClusterError(f"{address} uses TLS: give the cluster's credentials file (--credentials)")
    return None


def lan_address() -> str:
    """This machine's address on its local network (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def check_bind(host: str, credentials) -> str:
    """The protocol for ``host``: ``tls`` with credentials; without, ``tcp`` on loopback only (what
    :func:`start` never chooses itself: any local user could run code through it)."""
    if is_loopback(host):
        return "tls" if credentials else "tcp"
    if not credentials:
        raise ClusterError(
            f"a scheduler on {host} would be reachable from other machines: it needs TLS "
            "credentials (modeldesk cluster start creates them when --host is not loopback)"
        )
    return "tls"


def serve(state_dir, host: str, port: int, credentials=None) -> None:
    """Run the scheduler until SIGTERM/SIGINT; writes ``STATE_DIR/scheduler.json`` once listening."""
    distributed = _distributed()
    protocol = check_bind(host, credentials)
    security = load_security(credentials) if credentials else None
    state = Path(state_dir) / STATE_FILE

    async def run() -> None:
        bind = "0.0.0.0" if host in ("0.0.0.0", "") else host
        async with distributed.Scheduler(
            host=bind,
            port=port,
            protocol=protocol,
            security=security,
            dashboard=False,
            dashboard_address="127.0.0.1:0",  # its HTTP server (health, metrics): this machine only
        ) as scheduler:
            listen_port = int(scheduler.address.rsplit(":", 1)[1])
            public = lan_address() if bind == "0.0.0.0" else host
            _write_json(
                state,
                {
                    "address": f"{protocol}://{public}:{listen_port}",
                    "listening": scheduler.address,
                    "pid": os.getpid(),
                    "credentials": str(credentials) if credentials else None,
                },
            )
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, stop.set)
                except (NotImplementedError, RuntimeError):  # Windows: Ctrl+C / terminate end the process
                    pass
            await stop.wait()

    try:
        asyncio.run(run())
    finally:
        try:
            if json.loads(state.read_text()).get("pid") == os.getpid():
                state.unlink()
        except (OSError, ValueError):
            pass


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def _pid_alive(pid: int) -> bool:
    try:
        import psutil

        return psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except Exception:  # noqa: BLE001 - psutil cannot tell: assume it is gone
        return False


def status(state_dir) -> dict | None:
    """``{address, pid, credentials}`` of the scheduler started from ``state_dir``, or None."""
    path = Path(state_dir) / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not _pid_alive(int(data.get("pid", 0))):
        path.unlink(missing_ok=True)
        return None
    return data


def start(
    state_dir,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    credentials=None,
    tls: bool = True,
    timeout_s: float = 60.0,
) -> dict:
    """Start the scheduler in a background process; returns its :func:`status` once it listens.

    Credentials are created in ``state_dir`` when none are given (loopback included); ``tls=False``
    runs a loopback scheduler without them, which every local user can submit code to.
    """
    state_dir = Path(state_dir)
    running = status(state_dir)
    if running:
        return {**running, "already_running": True}
    if credentials:
        load_security(credentials)  # a broken or world-readable file is named before anything starts
    elif tls or not is_loopback(host):
        credentials = state_dir / "credentials.pem"
        if not credentials.exists():
            create_credentials(credentials)
    check_bind(host, credentials)
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "scheduler.log"
    command = [sys.executable, "-m", "modeldesk.scheduler.cluster_service", str(state_dir), host, str(port)]
    if credentials:
        command.append(str(credentials))
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        running = status(state_dir)
        if running and running.get("pid") == process.pid:
            return running
        if process.poll() is not None:
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
            raise ClusterError(
                f"the scheduler did not start ({tail[0] if tail else 'no message'}); see {log_path}"
            )
        time.sleep(0.1)
    process.terminate()
    raise ClusterError(f"the scheduler did not start within {timeout_s:.0f} s; see {log_path}")


def stop(state_dir, timeout_s: float = 20.0) -> bool:
    """Stop the scheduler started from ``state_dir``; False when none was running."""
    running = status(state_dir)
    if not running:
        return False
    pid = int(running["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _pid_alive(pid):
        os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    (Path(state_dir) / STATE_FILE).unlink(missing_ok=True)
    return True


def main(argv=None) -> int:
    """``python -m modeldesk.scheduler.cluster_service STATE_DIR HOST PORT [CREDENTIALS]``."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (3, 4):
        print(
            "usage: python -m modeldesk.scheduler.cluster_service STATE_DIR HOST PORT [CREDENTIALS]",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(argv[0], argv[1], int(argv[2]), argv[3] if len(argv) == 4 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())

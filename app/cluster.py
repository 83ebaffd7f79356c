"""The workspace's cluster: the setting, the scheduler it may start, and the workers it sees.

The setting (``cluster`` and ``cluster_credentials`` in ``settings.json``) is what training uses
when a command or the Train page does not say otherwise; ``modeldesk cluster start`` sets it to the
scheduler it starts on this machine, ``stop`` clears it again.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

OFF = ("", "off", "none", "local")


def state_dir(ws) -> Path:
    """Where this workspace's scheduler keeps its address, log and credentials."""
    return ws.paths.root / "cluster"


def resolve(ws, address: str | None = None, credentials=None) -> dict | None:
    """The cluster to use: ``address`` (``"off"``: none), else the workspace setting.

    Returns ``{"address", "credentials"}`` (credentials: a file path or None) or None.
    """
    chosen = ws.settings.cluster if address is None else address
    if not chosen or chosen.strip().lower() in OFF:
        return None
    if credentials is None and chosen == ws.settings.cluster:
        credentials = ws.settings.cluster_credentials or None
    if chosen.startswith("tls://") and not credentials:
        raise ValueError(f"{chosen} uses TLS: give the cluster's credentials file with --credentials")
    return {"address": chosen, "credentials": str(Path(credentials).expanduser()) if credentials else None}


def use(ws, address: str | None, credentials=None) -> dict:
    """Save ``address`` (None or "off": no cluster) as the workspace's cluster."""
    spec = resolve(ws, address or "off", credentials)
    ws.settings.cluster = spec["address"] if spec else ""
    ws.settings.cluster_credentials = (spec or {}).get("credentials") or ""
    ws.settings.save(ws.paths.root)
    return {"cluster": spec}


def start(ws, host: str = "127.0.0.1", port: int | None = None, credentials=None) -> dict:
    """Start a scheduler on this machine and make it the workspace's cluster.

    Returns ``address``, ``credentials`` (the TLS key file), ``worker_command`` (what to run on
    each worker machine) and ``already_running``.
    """
    from modeldesk.scheduler import cluster_service

    running = cluster_service.start(
        state_dir(ws), host, cluster_service.DEFAULT_PORT if port is None else port, credentials=credentials
    )
    use(ws, running["address"], running.get("credentials"))
    command = f"modeldesk worker {running['address']}"
    if running.get("credentials"):
        # a loopback scheduler's workers run here and read the file where it is; others get a copy
        local = cluster_service.is_loopback(host)
        command += f" --credentials {running['credentials'] if local else Path(running['credentials']).name}"
    return {
        "address": running["address"],
        "credentials": running.get("credentials"),
        "worker_command": command,
        "already_running": bool(running.get("already_running")),
    }


def stop(ws) -> dict:
    """Stop this workspace's scheduler; the setting is cleared when it pointed at it."""
    from modeldesk.scheduler import cluster_service

    running = cluster_service.status(state_dir(ws))
    stopped = cluster_service.stop(state_dir(ws))
    if running and ws.settings.cluster == running["address"]:
        use(ws, None)
    return {"stopped": stopped, "address": running and running["address"]}


def status(ws) -> dict:
    """The setting and the scheduler this workspace started (None when not running)."""
    from modeldesk.scheduler import cluster_service

    return {"cluster": resolve(ws), "scheduler": cluster_service.status(state_dir(ws))}


def _measured(cost_entries: list, device: str, threads: int) -> dict | None:
    """The most recent feature-extraction throughput measured on ``device`` with ``threads``."""
    mine = [
        e
        for e in cost_entries
        if e["device"] == device and e["threads"] == threads and e["work_key"].startswith("features/")
    ]
    if not mine:
        return None
    latest = max(mine, key=lambda e: e.get("updated", 0))
    return {
        "items_per_s": latest["items_per_s"],
        "threads": latest["threads"],
        "source": latest.get("source"),
    }


def workers(ws, spec: dict, *, backbone: str = "efficientnet-lite0", cost_dir=None) -> list[dict]:
    """The cluster's workers with cores, GPUs, memory, versions (refused: why) and the speed
    measured on them by earlier runs of this workspace (None when never measured)."""
    from modeldesk.app.pipeline import feature_cache_dir
    from modeldesk.scheduler import CostModel
    from modeldesk.trainers.cluster_features import open_cluster

    entries = CostModel(cost_dir or feature_cache_dir(ws)).entries()
    with open_cluster(spec, backbone) as backend:
        rows = backend.workers()
    out = []
    for worker in rows:
        resources = worker["resources"]
        cores = int(resources.get("CPU") or worker["nthreads"])
        out.append(
            {
                "name": worker["name"],
                "address": worker["address"],
                "host": worker["identity"].get("host"),
                "cores": cores,
                "gpus": int(resources.get("GPU", 0)),
                "memory_bytes": worker["memory_limit"],
                "identity": worker["identity"].get("id"),
                "versions": worker["versions"],
                "refused": worker["refused"],
                "measured": _measured(entries, f"dask:{worker['identity'].get('id')}", cores),
            }
        )
    return out

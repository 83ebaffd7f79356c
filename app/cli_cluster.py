"""The cluster's commands: ``modeldesk cluster start|stop|status|use`` and ``modeldesk worker``."""

from __future__ import annotations

import os

from modeldesk.app import formatting


def add_commands(command, common) -> None:
    """Add ``cluster`` and ``worker`` with ``command(name, help) -> subparser``; ``common`` is the
    parent parser with ``--workspace`` and ``--json``."""
    cluster = command(
        "cluster",
        "a Dask scheduler on this machine for other machines' workers (pip install modeldesk[cluster])",
    )
    actions = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    start = actions.add_parser("start", parents=[common], help="start a scheduler and use it for training")
    start.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to listen on (default 127.0.0.1: this machine only; for example 0.0.0.0 for "
        "other machines); Dask TLS with a credentials file it creates (mode 600) either way",
    )
    start.add_argument("--port", type=int, help="port (default 8786; 0 picks a free one)")
    start.add_argument("--credentials", metavar="FILE", help="TLS credentials to use instead of new ones")
    actions.add_parser("stop", parents=[common], help="stop the scheduler this workspace started")
    actions.add_parser("status", parents=[common], help="the cluster setting and the scheduler's address")
    use = actions.add_parser("use", parents=[common], help="train on this cluster by default ('off': none)")
    use.add_argument("address", metavar="ADDRESS", help="tcp://HOST:PORT, tls://HOST:PORT or off")
    use.add_argument("--credentials", metavar="FILE", help="TLS credentials file for a tls:// address")

    worker = command("worker", "join a Dask cluster as a worker (pip install modeldesk[cluster])")
    worker.add_argument("scheduler_address", metavar="SCHEDULER_ADDRESS")
    worker.add_argument("--nthreads", type=int, metavar="N", help="cores to use (default: all usable)")
    worker.add_argument("--name", help="name shown to the app (default: host name and process id)")
    worker.add_argument("--credentials", metavar="FILE", help="the cluster's TLS credentials file (tls://)")
    worker.add_argument(
        "--dashboard",
        action="store_true",
        help="serve Dask's worker dashboard (on 127.0.0.1 only; needs bokeh)",
    )
    worker.add_argument(
        "--cache",
        metavar="DIR",
        help="where this worker keeps the graphs it builds (default: your user cache folder)",
    )


def run_worker(args):
    """``modeldesk worker``: serve until stopped."""
    from modeldesk.scheduler.cluster import start_worker
    from modeldesk.scheduler.cluster_service import security_for

    if args.cache:
        from modeldesk.trainers.cluster_features import ENV_WORKER_CACHE

        os.environ[ENV_WORKER_CACHE] = str(args.cache)
    start_worker(
        args.scheduler_address,
        nthreads=args.nthreads,
        name=args.name,
        security=security_for(args.scheduler_address, args.credentials),
        dashboard=args.dashboard,
    )
    return {"stopped": True}, "worker stopped"


def run_cluster(ws, args):
    """``modeldesk cluster ACTION``."""
    action = args.cluster_command
    if action == "start":
        result = ws.start_cluster(args.host, args.port, args.credentials)
        return result, formatting.cluster_started_text(result)
    if action == "stop":
        result = ws.stop_cluster()
        return result, (
            f"stopped the scheduler at {result['address']}"
            if result["stopped"]
            else "no scheduler of this workspace was running"
        )
    if action == "use":
        result = ws.use_cluster(args.address, args.credentials)
        spec = result["cluster"]
        return (
            result,
            f"training uses {spec['address']} beside this computer"
            if spec
            else "training uses this computer only",
        )
    result = ws.cluster_status()
    return result, formatting.cluster_status_text(result)


def run_devices(ws, args):
    """``modeldesk devices [--cluster ADDRESS]``: this machine, and the cluster's workers."""
    from modeldesk.scheduler import format_resources

    result = ws.devices()
    text = format_resources(result)
    spec = ws.resolve_cluster(args.cluster, args.credentials)
    if spec:
        workers = ws.cluster_workers(args.cluster, args.credentials)
        result["cluster"] = {"address": spec["address"], "workers": workers}
        text += "\n\n" + formatting.cluster_workers_text(spec["address"], workers)
    return result, text

"""The optional cluster backend: run plan partitions on a Dask distributed cluster.

Needs the ``cluster`` extra (``pip install modeldesk[cluster]``, i.e. ``dask[distributed]``); dask is
imported only when a backend starts or a worker is started, never by ``import modeldesk.scheduler``.

Each worker is described once per connection (:func:`describe_this_worker`): a stable identity of
its machine, which the cost model keys its measured throughput by, and the versions the caller's
``versions`` function reports there. A worker whose versions differ from this process's is refused
(kept out of every plan) with a note that names what differs. A worker that leaves mid-run makes
its chunk raise :class:`~modeldesk.scheduler.partition.DeviceLost`, so the run gives it to the others.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import os
import platform
import socket
import threading
from typing import TYPE_CHECKING

from modeldesk.scheduler.partition import DeviceLost
from modeldesk.scheduler.planner import DeviceShare

if TYPE_CHECKING:
    import distributed

log = logging.getLogger(__name__)

INSTALL_HINT = "the cluster backend needs Dask: pip install modeldesk[cluster]"
_THIS_WORKER: dict | None = None  # set by start_worker in a worker process
LOST_AFTER_S = 30.0  # a scheduler silent this long while a chunk waits: its worker counts as lost


class ClusterError(RuntimeError):
    """The cluster cannot be used; the message says why and what to do (a user error)."""

    user_error = True


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ClusterError(INSTALL_HINT) from None
    return distributed


def worker_resources(resources: dict) -> dict:
    """Dask worker resources declared from a :func:`detect_resources` result.

    ``CPU`` (usable cores), ``GPU`` (NVIDIA GPUs, counted only when the CUDA provider works) and
    ``MEMORY`` (available bytes).
    """
    cpu = resources.get("cpu", {})
    providers = resources.get("providers", {})
    cuda = providers.get("CUDAExecutionProvider") or providers.get("TensorrtExecutionProvider")
    declared = {
        "CPU": float(cpu.get("usable_cores") or cpu.get("logical_cores") or 1),
        "MEMORY": float(resources.get("memory", {}).get("available_bytes") or 0),
    }
    if cuda and resources.get("gpus"):
        declared["GPU"] = float(len(resources["gpus"]))
    return declared


def machine_identity(resources: dict) -> dict:
    """What identifies a machine's compute across restarts: host name, CPU and GPU models.

    Returns ``{"id", "host", "cpu", "gpus"}``; ``id`` is a short hash of the rest.
    """
    cpu = resources.get("cpu", {})
    gpus = [str(g.get("name") or g.get("device") or g.get("index")) for g in resources.get("gpus", [])]
    host = socket.gethostname()
    described = (
        f"{host}|{cpu.get('model') or platform.processor()}|{cpu.get('physical_cores')}|{','.join(gpus)}"
    )
    return {
        "id": hashlib.sha1(described.encode()).hexdigest()[:12],
        "host": host,
        "cpu": cpu.get("model") or platform.processor() or "?",
        "gpus": gpus,
    }


def describe_this_worker(versions=None) -> dict:
    """Run on a worker (``Client.run``): its machine identity and ``versions()`` there.

    A worker started by :func:`start_worker` answers from what it detected at start; any other
    Dask worker detects its CPU here.
    """
    info = _THIS_WORKER
    if info is None:
        from modeldesk.scheduler.cpu import cpu_info

        info = {"identity": machine_identity({"cpu": cpu_info()}), "pid": os.getpid()}
    info = dict(info)
    if versions is not None:
        try:
            info["versions"] = dict(versions())
        except Exception as exc:  # noqa: BLE001 - reported as the reason the worker is refused
            info["versions_error"] = f"{type(exc).__name__}: {exc}"
    return info


def version_mismatch(here: dict, there: dict) -> list[str]:
    """Sentences naming each version that differs: "onnxruntime 1.17.0 (this app: 1.18.1)"."""
    return [
        f"{name} {there.get(name) or 'missing'} (this app: {value})"
        for name, value in here.items()
        if there.get(name) != value
    ]


def _run_probe_remote(probe, device: str, batch_size: int, threads: int):
    return probe(device, batch_size, threads)


def _call(fn, *args):
    return fn(*args)


class DaskBackend:
    """A set of cluster workers the planner can place work on.

    Parameters
    ----------
    address : str or None
        Scheduler address ("tcp://host:8786", "tls://host:8786"); None starts a local cluster.
    local_workers : int
        Workers of the local cluster.
    threads_per_worker : int
        Threads per local worker.
    processes : bool
        Local workers as processes (True) or threads of this process (False, fast to start).
    security : distributed.Security, optional
        TLS credentials for a ``tls://`` scheduler (see ``scheduler.cluster_service``).
    versions : callable, optional
        ``versions() -> {name: version}``, run here and on every worker; a worker whose answer
        differs is refused. Must be importable on the workers (a module-level function or a
        ``functools.partial`` of one).
    inflight : int
        Chunks kept in flight per worker device, so the next one travels while one computes.
    max_chunk_items : int
        Largest chunk sent to a worker (what a lost worker costs, and what travels at once).
    poll_s, connect_timeout_s : float
        How often a waiting chunk checks that its worker is still there; how long to try to connect.

    Examples
    --------
        with DaskBackend(local_workers=2) as backend:
            p = plan("work", 100, devices=backend, cost_model=CostModel(None))
            results = run_partitioned(p, items, process_chunk)
    """

    def __init__(
        self,
        address: str | None = None,
        local_workers: int = 2,
        *,
        threads_per_worker: int = 1,
        processes: bool = False,
        security=None,
        versions=None,
        inflight: int = 2,
        max_chunk_items: int = 32,
        poll_s: float = 0.5,
        connect_timeout_s: float = 10.0,
    ):
        self.address = address
        self.local_workers = local_workers
        self.threads_per_worker = threads_per_worker
        self.processes = processes
        self.security = security
        self.versions = versions
        self.inflight = inflight
        self.max_chunk_items = max_chunk_items
        self.poll_s = poll_s
        self.connect_timeout_s = connect_timeout_s
        self.client_: distributed.Client | None = None
        self.cluster_ = None
        self.notes: list[str] = []
        self._described: dict = {}
        self._resources: dict = {}
        self._sent = None
        self._lock = threading.Lock()

    def start(self) -> DaskBackend:
        """Connect to the scheduler (or start the local cluster); returns self.

        Raises ClusterError when the scheduler cannot be reached.
        """
        if self.client_ is not None:
            return self
        distributed = _distributed()
        if self.address is None:
            # Everything it listens on stays on this machine (the default binds every interface);
            # worker processes talk over loopback TCP, which other local users can reach: TLS with a
            # key made for this cluster alone.
            local_only = (
                {"host": "127.0.0.1", "protocol": "tls", "security": distributed.Security.temporary()}
                if self.processes
                else {}
            )
            self.cluster_ = distributed.LocalCluster(
                n_workers=self.local_workers,
                threads_per_worker=self.threads_per_worker,
                processes=self.processes,
                dashboard_address="127.0.0.1:0",
                worker_dashboard_address="127.0.0.1:0",
                silence_logs=logging.WARNING,
                **local_only,
            )
            self.client_ = distributed.Client(self.cluster_)
            return self
        if self.address.startswith("tls://") and self.security is None:
            raise ClusterError(
                f"{self.address} uses TLS: give the cluster's credentials file "
                "(--credentials, written by `modeldesk cluster start`)"
            )
        try:
            self.client_ = distributed.Client(
                self.address, security=self.security, timeout=f"{self.connect_timeout_s}s"
            )
        except (OSError, TimeoutError, asyncio.TimeoutError, ValueError) as exc:
            raise ClusterError(
                f"cannot reach the Dask scheduler at {self.address} ({exc}); check the address "
                "and that `modeldesk cluster start` is running there"
            ) from None
        return self

    def close(self) -> None:
        """Disconnect, and shut the local cluster down if this backend started it."""
        self._sent = None
        if self.client_ is not None:
            self.client_.close()
            self.client_ = None
        if self.cluster_ is not None:
            self.cluster_.close()
            self.cluster_ = None

    def __enter__(self) -> DaskBackend:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _scheduler_workers(self) -> dict:
        assert self.client_ is not None  # asked only while the backend is started
        try:
            return self.client_.scheduler_info(n_workers=-1)["workers"]
        except TypeError:  # older distributed without n_workers
            return self.client_.scheduler_info()["workers"]

    def _describe(self, addresses: list[str]) -> None:
        """Ask workers not seen yet for their identity and versions; refuse mismatches."""
        new = [a for a in addresses if a not in self._described]
        if not new:
            return
        try:
            assert self.client_ is not None  # asked only while the backend is started
            answers = self.client_.run(describe_this_worker, self.versions, workers=new, on_error="return")
        except Exception as exc:  # noqa: BLE001 - a worker that cannot answer is refused below
            answers = {address: exc for address in new}
        here = self.versions() if self.versions is not None else {}
        for address in new:
            info = answers.get(address)
            if isinstance(info, BaseException) or not isinstance(info, dict):
                info = {"identity": {"id": address}, "refused": f"it could not describe itself ({info})"}
            elif "versions_error" in info:
                info["refused"] = f"it cannot report its versions ({info['versions_error']})"
            elif self.versions is not None:
                differs = version_mismatch(here, info.get("versions", {}))
                if differs:
                    info["refused"] = "it runs " + ", ".join(differs)
            if info.get("refused"):
                note = (
                    f"worker {address} is refused: {info['refused']}; install the same versions there, "
                    "since features from other versions would silently mix"
                )
                log.warning(note)
                self.notes.append(note)
            self._described[address] = info

    def workers(self) -> list[dict]:
        """The cluster's workers: ``address``, ``name``, ``nthreads``, ``resources``, ``memory_limit``,
        ``identity`` ({id, host, cpu, gpus}), ``versions`` and ``refused`` (None, or why)."""
        self.start()
        found = self._scheduler_workers()
        self._describe(sorted(found))
        rows = []
        for address, w in sorted(found.items()):
            info = self._described.get(address, {})
            self._resources[address] = dict(w.get("resources") or {})
            rows.append(
                {
                    "address": address,
                    "name": str(w.get("name", address)),
                    "nthreads": int(w.get("nthreads", 1)),
                    "resources": dict(w.get("resources") or {}),
                    "memory_limit": w.get("memory_limit"),
                    "identity": info.get("identity", {"id": address}),
                    "versions": info.get("versions", {}),
                    "refused": info.get("refused"),
                }
            )
        return rows

    def device_shares(self) -> list[DeviceShare]:
        """One CPU share per usable worker, plus one per GPU a worker declared (``GPU`` resource).

        Each share's ``cost_device`` is "dask:<machine id>", so a worker's measured speed is
        remembered across runs and restarts. Raises ClusterError when no worker can be used.
        """
        shares = []
        workers = self.workers()
        for worker in workers:
            if worker["refused"]:
                continue
            name, machine = f"dask:{worker['address']}", f"dask:{worker['identity']['id']}"
            cores = int(worker["resources"].get("CPU") or worker["nthreads"])
            shares.append(
                DeviceShare(
                    name,
                    "CPUExecutionProvider",
                    cores,
                    0,
                    cost_device=machine,
                    memory_bytes=worker["memory_limit"] or None,
                    note=worker["name"],
                )
            )
            for index in range(int(worker["resources"].get("GPU", 0))):
                shares.append(
                    DeviceShare(
                        f"{name}/cuda:{index}",
                        "CUDAExecutionProvider",
                        1,
                        0,
                        cost_device=f"{machine}/cuda:{index}",
                        note=worker["name"],
                    )
                )
        if not shares:
            why = "; ".join(self.notes) if workers else "no worker has joined it"
            raise ClusterError(
                f"the Dask cluster at {self.address or 'this machine'} has no usable worker: {why}"
            )
        return shares

    def _address(self, share: DeviceShare) -> str:
        return share.name[len("dask:") :].split("/cuda:", 1)[0]

    def _task_resources(self, share: DeviceShare) -> dict | None:
        """A GPU share's task holds one GPU; a CPU share's task holds the cores it was planned with
        (only on workers that declared them), so two chunks never share a worker's cores."""
        if "/cuda:" in share.name:
            return {"GPU": 1}
        declared = self._resources.get(self._address(share)) or {}
        return {"CPU": declared["CPU"]} if declared.get("CPU") else None

    def _alive(self, address: str, failures: list | None = None) -> bool:
        """False once the scheduler says the worker is gone. A scheduler that does not answer
        (busy, or a network hiccup) counts as gone only after ``LOST_AFTER_S`` of silence."""
        try:
            alive = address in self._scheduler_workers()
        except Exception as exc:  # noqa: BLE001 - counted below; a long silence is a loss
            if failures is None:
                return True
            failures.append(exc)
            return len(failures) * self.poll_s < LOST_AFTER_S
        if failures:
            failures.clear()
        return alive

    def _submit(self, fn, *args, share: DeviceShare):
        """Run ``fn(*args)`` on the share's worker and wait; DeviceLost when the worker leaves."""
        distributed = _distributed()
        address = self._address(share)
        if not self._alive(address):
            raise DeviceLost(f"worker {address} left the cluster")
        assert self.client_ is not None  # runs only while the backend is started
        future = self.client_.submit(
            fn,
            *args,
            workers=[address],
            allow_other_workers=False,
            pure=False,
            resources=self._task_resources(share),
        )
        lost_errors = (
            distributed.KilledWorker,
            distributed.comm.CommClosedError,
            distributed.client.FutureCancelledError,
        )
        failures: list = []
        try:
            while True:
                try:
                    return future.result(timeout=self.poll_s)
                except (TimeoutError, asyncio.TimeoutError):
                    if not self._alive(address, failures):
                        raise DeviceLost(f"worker {address} left the cluster") from None
                except lost_errors as exc:
                    raise DeviceLost(f"worker {address} failed: {exc}") from None
        finally:
            if not future.done():
                future.cancel()

    def _on_workers(self, fn):
        """``fn`` sent once to every worker (so state it caches, such as a session, lives on there),
        as a future the tasks refer to; re-sent only when a different function comes."""
        with self._lock:
            if self._sent is None or self._sent[0] is not fn:
                self._sent = (fn, self.client_.scatter(fn, broadcast=True, hash=False))
            return self._sent[1]

    def run_chunk(self, share: DeviceShare, process_chunk, chunk: list) -> list:
        """Run ``process_chunk(share, chunk)`` on the share's worker; returns its results."""
        self.start()
        return self._submit(_call, self._on_workers(process_chunk), share, list(chunk), share=share)

    def run_probe(self, share: DeviceShare, probe):
        """Run ``probe(device, batch_size, threads)`` on the share's worker."""
        self.start()
        return self._submit(
            _run_probe_remote, probe, share.local_device, share.batch_size, share.threads, share=share
        )


def listen_host(scheduler_address: str) -> str:
    """The address a worker listens on: the interface it reaches the scheduler through.

    A loopback scheduler gets a loopback worker (nothing else on the network can reach it); for a
    scheduler elsewhere, the interface the route to it leaves by (no packet is sent). Dask would
    otherwise listen on every interface (``0.0.0.0`` and ``[::]``).
    """
    distributed = _distributed()
    _, location = distributed.comm.parse_address(scheduler_address)
    host, port = distributed.comm.parse_host_port(location, default_port=8786)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    except OSError as exc:
        raise ClusterError(f"cannot resolve the scheduler's host {host!r} ({exc.strerror or exc})") from None
    family, _, _, _, address = infos[0]
    if ipaddress.ip_address(address[0]).is_loopback:
        return "::1" if family == socket.AF_INET6 else "127.0.0.1"
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(address)
            return probe.getsockname()[0]
        except OSError as exc:
            raise ClusterError(f"no route to the scheduler at {host} ({exc.strerror or exc})") from None


def start_worker(
    scheduler_address: str,
    *,
    nthreads: int | None = None,
    name: str | None = None,
    resources: dict | None = None,
    security=None,
    dashboard: bool = False,
) -> None:
    """Run a Dask worker for ``scheduler_address`` until it is stopped (blocks).

    The worker declares the cores it may use (``nthreads``, default: all usable), its GPUs and
    memory as Dask resources (``CPU``, ``GPU``, ``MEMORY``) so the planner can place work on it;
    it runs one task per device at a time (a task uses all the cores). It listens only on the
    interface that reaches the scheduler (:func:`listen_host`), with the scheduler's protocol and
    TLS credentials (``security``), and its HTTP server (health, metrics; the dashboard when
    ``dashboard``) on loopback only. Behind ``modeldesk worker SCHEDULER_ADDRESS``.
    """
    global _THIS_WORKER
    distributed = _distributed()
    protocol = scheduler_address.split("://", 1)[0] if "://" in scheduler_address else "tcp"
    if protocol == "tls" and security is None:
        raise ClusterError(
            f"{scheduler_address} uses TLS: give the cluster's credentials file (--credentials)"
        )
    host = listen_host(scheduler_address)
    if resources is None:
        from modeldesk.scheduler.resources import detect_resources

        resources = detect_resources()
    declared = worker_resources(resources)
    if nthreads:
        declared["CPU"] = float(nthreads)
    slots = 1 + int(declared.get("GPU", 0))
    name = name or f"{socket.gethostname()}-{os.getpid()}"
    _THIS_WORKER = {"identity": machine_identity(resources), "pid": os.getpid(), "resources": declared}
    log.info("starting a Dask worker %s on %s for %s: resources %s", name, host, scheduler_address, declared)
    loopback = "[::1]" if ":" in host else "127.0.0.1"

    async def serve() -> None:
        async with distributed.Worker(
            scheduler_address,
            nthreads=slots,
            name=name,
            resources=declared,
            security=security,
            host=host,
            protocol=protocol,
            dashboard=dashboard,
            dashboard_address=f"{loopback}:0",
        ) as worker:
            log.info("worker listening on %s", worker.address)
            await worker.finished()

    asyncio.run(serve())

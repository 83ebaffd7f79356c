"""The optional cluster backend: run plan partitions on a Dask distributed cluster.

Needs the ``cluster`` extra (``pip install modeldesk[cluster]``, i.e. ``dask[distributed]``); dask is
imported only when a backend starts or a worker is started, never by ``import modeldesk.scheduler``.
"""

from __future__ import annotations

import logging
import threading

from modeldesk.scheduler.planner import DeviceShare

log = logging.getLogger(__name__)

INSTALL_HINT = "the cluster backend needs Dask: pip install modeldesk[cluster]"


def _distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return distributed


def worker_resources(resources: dict) -> dict:
    """Dask worker resources declared from a :func:`detect_resources` result.

    ``CPU`` (usable cores), ``GPU`` (NVIDIA GPUs, counted only when the CUDA provider works) and
    ``MEMORY`` (available bytes).
    """
    cpu = resources.get("cpu", {})
    providers = resources.get("providers", {})
    cuda = providers.get("CUDAExecutionProvider") or providers.get("TensorrtExecutionProvider")
    declared = {"CPU": float(cpu.get("usable_cores") or cpu.get("logical_cores") or 1),
                "MEMORY": float(resources.get("memory", {}).get("available_bytes") or 0)}
    if cuda and resources.get("gpus"):
        declared["GPU"] = float(len(resources["gpus"]))
    return declared


def _run_probe_remote(probe, device: str, batch_size: int, threads: int):
    return probe(device, batch_size, threads)


def _call(fn, *args):
    return fn(*args)


class DaskBackend:
    """A set of cluster workers the planner can place work on.

    Parameters
    ----------
    address : str or None
        Scheduler address ("tcp://host:8786"); None starts a local cluster.
    local_workers : int
        Workers of the local cluster.
    threads_per_worker : int
        Threads per local worker.
    processes : bool
        Local workers as processes (True) or threads of this process (False, fast to start).

    Examples
    --------
    >>> with DaskBackend(local_workers=2) as backend:                       # doctest: +SKIP
    ...     p = plan("work", 100, devices=backend, cost_model=CostModel(None))
    ...     results = run_partitioned(p, items, process_chunk)
    """

    def __init__(self, address: str | None = None, local_workers: int = 2, *, threads_per_worker: int = 1,
                 processes: bool = False):
        self.address = address
        self.local_workers = local_workers
        self.threads_per_worker = threads_per_worker
        self.processes = processes
        self.client_ = None
        self.cluster_ = None
        self._sent = None
        self._lock = threading.Lock()

    def start(self) -> "DaskBackend":
        """Connect to the scheduler (or start the local cluster); returns self."""
        if self.client_ is not None:
            return self
        distributed = _distributed()
        if self.address is None:
            # Everything it listens on stays on this machine (the default binds every interface).
            local_only = {"host": "127.0.0.1"} if self.processes else {}
            self.cluster_ = distributed.LocalCluster(
                n_workers=self.local_workers, threads_per_worker=self.threads_per_worker, processes=self.processes,
                dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0",
                silence_logs=logging.WARNING, **local_only)
            self.client_ = distributed.Client(self.cluster_)
        else:
            self.client_ = distributed.Client(self.address)
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

    def __enter__(self) -> "DaskBackend":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()

    def workers(self) -> list[dict]:
        """The cluster's workers: ``address``, ``name``, ``nthreads``, ``resources``, ``memory_limit``."""
        self.start()
        try:
            info = self.client_.scheduler_info(n_workers=-1)
        except TypeError:  # older distributed without n_workers
            info = self.client_.scheduler_info()
        return [{"address": address, "name": str(w.get("name", address)), "nthreads": int(w.get("nthreads", 1)),
                 "resources": dict(w.get("resources") or {}), "memory_limit": w.get("memory_limit")}
                for address, w in sorted(info["workers"].items())]

    def device_shares(self) -> list[DeviceShare]:
        """One CPU share per worker, plus one per GPU a worker declared (``GPU`` resource)."""
        shares = []
        for worker in self.workers():
            name = f"dask:{worker['address']}"
            shares.append(DeviceShare(name, "CPUExecutionProvider", worker["nthreads"], 0, cost_device="dask-cpu",
                                      memory_bytes=worker["memory_limit"] or None, note=worker["name"]))
            for index in range(int(worker["resources"].get("GPU", 0))):
                shares.append(DeviceShare(f"{name}/cuda:{index}", "CUDAExecutionProvider", 1, 0,
                                          cost_device="dask-cuda", note=worker["name"]))
        if not shares:
            raise RuntimeError("the Dask cluster has no workers")
        return shares

    def _address(self, share: DeviceShare) -> str:
        return share.name[len("dask:"):].split("/cuda:", 1)[0]

    def _submit(self, fn, *args, share: DeviceShare):
        resources = {"GPU": 1} if "/cuda:" in share.name else None
        future = self.client_.submit(fn, *args, workers=[self._address(share)], allow_other_workers=False,
                                     pure=False, resources=resources)
        return future.result()

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
        return self._submit(_run_probe_remote, probe, share.local_device, share.batch_size, share.threads,
                            share=share)


def start_worker(scheduler_address: str, *, nthreads: int | None = None, name: str | None = None,
                 resources: dict | None = None) -> None:
    """Run a Dask worker for ``scheduler_address`` until it is stopped (blocks).

    The worker declares the detected cores, GPUs and memory as Dask resources (``CPU``, ``GPU``,
    ``MEMORY``) so the planner can place work on it. Behind ``modeldesk worker SCHEDULER_ADDRESS``.
    """
    import asyncio

    distributed = _distributed()
    if resources is None:
        from modeldesk.scheduler.resources import detect_resources

        resources = detect_resources()
    declared = worker_resources(resources)
    threads = int(nthreads or declared["CPU"])
    log.info("starting a Dask worker for %s: %d threads, resources %s", scheduler_address, threads, declared)

    async def serve() -> None:
        async with distributed.Worker(scheduler_address, nthreads=threads, name=name, resources=declared) as worker:
            await worker.finished()

    asyncio.run(serve())

"""The planner: which devices, how many threads, what batch size, how to split the items, the ETA."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, fields

from modeldesk.devices import DEVICE_PROVIDER, DEVICES

log = logging.getLogger(__name__)

# Accelerators that NVML does not list: one device each when their provider works.
_OTHER_ACCELERATORS = (
    ("rocm:0", "ROCMExecutionProvider"),
    ("directml:0", "DmlExecutionProvider"),
    ("coreml", "CoreMLExecutionProvider"),
)
CPU_MEMORY_FRACTION = 0.5
GPU_MEMORY_FRACTION = 0.8


@dataclass
class DeviceShare:
    """One device's part of a plan.

    ``name`` identifies the worker ("cpu", "cpu:1", "cuda:0", "dask:tcp://...");
    ``cost_device`` is the device name used in the cost model ("cpu", "cuda:0", "dask-cpu").
    """

    name: str
    provider: str
    threads: int
    batch_size: int
    share: float = 0.0
    items_per_s: float | None = None
    cost_device: str = ""
    memory_bytes: float | None = None
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def kind(self) -> str:
        """Device kind without index ("cpu", "cuda", "dask")."""
        return self.name.split(":", 1)[0]

    @property
    def local_device(self) -> str:
        """The device on the machine that runs the chunk: "cpu" or "cuda:N" (also for cluster shares,
        named "dask:ADDRESS" or "dask:ADDRESS/cuda:N")."""
        if self.kind == "dask":
            return "cuda:" + self.name.split("/cuda:", 1)[1] if "/cuda:" in self.name else "cpu"
        return "cpu" if self.kind == "cpu" else self.name

    @property
    def device(self) -> str:
        """Same as :attr:`local_device`: what to pass as ``device=`` when creating a session."""
        return self.local_device


@dataclass
class Plan:
    """A plan for ``n_items`` of ``work_key``; JSON-ready through :meth:`to_dict`.

    ``backends`` (name -> object with ``run_chunk``) and ``cost_model`` ride along for
    :func:`run_partitioned` but are not serialised.
    """

    work_key: str
    n_items: int
    devices: list
    eta_s: float | None
    notes: list = field(default_factory=list)
    actual_s: float | None = None
    run_stats: dict = field(default_factory=dict)
    backends: dict = field(default_factory=dict, repr=False, compare=False)
    cost_model: object = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """``work_key``, ``n_items``, ``devices`` (list of dicts), ``eta_s``, ``notes``, and after a
        run ``actual_s`` and ``run_stats`` (device name -> items, seconds, chunks, items_per_s)."""
        data = {
            "work_key": self.work_key,
            "n_items": self.n_items,
            "devices": [d.to_dict() for d in self.devices],
            "eta_s": self.eta_s,
            "notes": list(self.notes),
            "actual_s": self.actual_s,
            "run_stats": dict(self.run_stats),
        }
        if self.run_stats:
            data["per_device"] = self.estimated_vs_actual()
        return data

    def estimated_vs_actual(self) -> list[dict]:
        """Per device, after a run: the planned share and speed against what it really did.

        Each row has ``name``, ``note`` (a cluster worker's name), ``estimated_share``,
        ``estimated_items_per_s``, ``items``, ``actual_share``, ``actual_items_per_s`` and
        ``lost_chunks``.
        """
        done = sum(s.get("items", 0) for s in self.run_stats.values()) or 1
        rows = []
        for share in self.devices:
            stats = self.run_stats.get(share.name, {})
            rows.append(
                {
                    "name": share.name,
                    "note": share.note,
                    "estimated_share": share.share,
                    "estimated_items_per_s": share.items_per_s,
                    "items": stats.get("items", 0),
                    "actual_share": stats.get("items", 0) / done,
                    "actual_items_per_s": stats.get("items_per_s"),
                    "lost_chunks": stats.get("lost_chunks", 0),
                }
            )
        return rows

    @classmethod
    def from_dict(cls, data: dict) -> Plan:
        """Rebuild a plan from :meth:`to_dict` output (backends and cost model are not restored)."""
        names = {f.name for f in fields(DeviceShare)}
        devices = [DeviceShare(**{k: v for k, v in d.items() if k in names}) for d in data["devices"]]
        return cls(
            data["work_key"],
            int(data["n_items"]),
            devices,
            data.get("eta_s"),
            list(data.get("notes", [])),
            data.get("actual_s"),
            dict(data.get("run_stats") or {}),
        )


def cpu_thread_budget(cores: int) -> tuple[int, str]:
    """Threads the work may use: all but one core for the UI when there are more than 2."""
    cores = max(1, int(cores))
    if cores > 2:
        return cores - 1, f"{cores - 1} of {cores} cores (one kept free for the app)"
    return cores, f"all {cores} core{'s' if cores > 1 else ''}: the app may respond slowly while this runs"


def _candidate_devices(resources: dict) -> list[DeviceShare]:
    providers = resources.get("providers", {})
    memory = resources.get("memory", {}).get("available_bytes") or None
    found = [
        DeviceShare(
            "cpu",
            DEVICE_PROVIDER["cpu"],
            0,
            0,
            cost_device="cpu",
            memory_bytes=memory and memory * CPU_MEMORY_FRACTION,
        )
    ]
    cuda = providers.get("CUDAExecutionProvider") or providers.get("TensorrtExecutionProvider")
    for gpu in resources.get("gpus", []):
        if cuda:
            name = gpu.get("device") or f"cuda:{gpu['index']}"
            provider = (
                "CUDAExecutionProvider"
                if providers.get("CUDAExecutionProvider")
                else "TensorrtExecutionProvider"
            )
            free = gpu.get("memory_free_bytes")
            found.append(
                DeviceShare(
                    name,
                    provider,
                    1,
                    1,
                    cost_device=name,
                    memory_bytes=free and free * GPU_MEMORY_FRACTION,
                    note=gpu.get("name", ""),
                )
            )
    for name, provider in _OTHER_ACCELERATORS:
        if providers.get(provider):
            found.append(DeviceShare(name, provider, 1, 1, cost_device=name))
    return found


def _select(candidates: list[DeviceShare], device: str, notes: list) -> list[DeviceShare]:
    device = (device or "auto").lower()
    if device == "auto":
        return candidates
    kind = device.split(":", 1)[0]
    if kind not in DEVICE_PROVIDER and kind != "dask":
        raise ValueError(
            f"unknown device {device!r}; use auto or one of: {', '.join(DEVICES)} (NAME:N for one GPU)"
        )
    picked = [c for c in candidates if c.name == device or (":" not in device and c.kind == kind)]
    if kind == "tensorrt":
        picked = [
            c
            for c in candidates
            if c.provider in ("TensorrtExecutionProvider", "CUDAExecutionProvider") and c.kind == "cuda"
        ]
        for share in picked:
            share.provider = "TensorrtExecutionProvider"
    if not picked:
        notes.append(f"{device} is not available here; using the CPU")
        return [c for c in candidates if c.kind == "cpu"]
    return picked


def _expand(devices) -> tuple[list[DeviceShare], dict]:
    """Explicit devices: names, dicts, DeviceShares or backends with ``device_shares()``."""
    if not isinstance(devices, (list, tuple)):
        devices = [devices]
    shares, backends = [], {}
    for spec in devices:
        if hasattr(spec, "device_shares"):
            for share in spec.device_shares():
                shares.append(share)
                backends[share.name] = spec
        elif isinstance(spec, DeviceShare):
            shares.append(DeviceShare(**spec.to_dict()))
        elif isinstance(spec, dict):
            name = spec["name"]
            kind = name.split(":", 1)[0]
            shares.append(
                DeviceShare(
                    name,
                    spec.get("provider", DEVICE_PROVIDER.get(kind, "CPUExecutionProvider")),
                    int(spec.get("threads", 1)),
                    int(spec.get("batch_size", 1)),
                    cost_device=str(spec.get("cost_device") or ("cpu" if kind == "cpu" else name)),
                    memory_bytes=spec.get("memory_bytes"),
                )
            )
        else:
            name = str(spec)
            kind = name.split(":", 1)[0]
            if kind not in DEVICE_PROVIDER:
                raise ValueError(f"unknown device {name!r}")
            shares.append(
                DeviceShare(name, DEVICE_PROVIDER[kind], 0, 0, cost_device="cpu" if kind == "cpu" else name)
            )
    return shares, backends


def plan(
    work_key: str,
    n_items: int,
    *,
    device: str = "auto",
    cost_model,
    probe=None,
    resources=None,
    devices=None,
    batch_size: int | None = None,
    bytes_per_item: float | None = None,
    cpu_workers: int = 1,
    max_batch: int | None = None,
    prior_items_per_s: float | None = None,
    cluster=None,
) -> Plan:
    """Choose devices, threads and batch sizes for ``n_items`` of ``work_key``; estimate the time.

    Parameters
    ----------
    work_key : str
        What is run (e.g. the backbone name); the cost model's key.
    n_items : int
        Number of items to process.
    device : str
        "auto" (every working device), "cpu", "cuda", "cuda:N", "tensorrt", "rocm", "directml", "coreml".
    cost_model : CostModel
        Measured throughputs; a probe fills missing ones.
    probe : callable, optional
        ``probe(device, batch_size, threads) -> seconds_per_item`` (or ``(seconds, bytes_per_item)``),
        run for each configuration the cost model does not know yet.
    resources : dict, optional
        A :func:`detect_resources` result (detected when needed and not given).
    devices : list, optional
        Explicit devices instead of detection: names ("cpu", "cuda:0"), dicts, :class:`DeviceShare`
        or a backend such as :class:`~modeldesk.scheduler.cluster.DaskBackend`.
    batch_size : int, optional
        Fixed batch size; otherwise the largest that fits in memory.
    bytes_per_item : float, optional
        Memory per item, when the caller knows it better than the probe.
    cpu_workers : int
        Split the CPU threads over this many workers (each pulls its own chunks).
    max_batch : int, optional
        Upper bound for the chosen batch sizes.
    prior_items_per_s : float, optional
        A rough throughput (per CPU thread, or per accelerator) for devices the cost model does not
        know and no probe measures, so a first run still gets an ETA (noted as a prior).
    cluster : backend, optional
        A :class:`~modeldesk.scheduler.cluster.DaskBackend` whose workers join the local devices;
        its ``notes`` (workers it refused) go into the plan's notes.

    Returns
    -------
    Plan
        Device shares proportional to measured throughput, and ``eta_s`` (None when no figure is
        known and no probe was given).
    """
    if n_items < 0:
        raise ValueError("n_items must be >= 0")
    notes: list = []
    backends: dict = {}
    if devices is not None:
        chosen, backends = _expand(devices)
    else:
        if resources is None:
            from modeldesk.scheduler.resources import detect_resources

            resources = detect_resources()
        chosen = _select(_candidate_devices(resources), device, notes)
    if cluster is not None:
        remote, remote_backends = _expand([cluster])
        chosen = chosen + remote
        backends.update(remote_backends)
        notes.extend(getattr(cluster, "notes", []))
    if not chosen:
        raise ValueError("no device to run on")

    chosen = _assign_threads(chosen, backends, resources, cpu_workers, notes)
    failed = [
        share
        for share in chosen
        if not _assign_batch_and_rate(
            share,
            work_key,
            cost_model,
            probe,
            backends.get(share.name),
            batch_size=batch_size,
            bytes_per_item=bytes_per_item,
            max_batch=max_batch,
        )
    ]
    if failed and len(failed) < len(chosen):
        notes.extend(f"not using {d.name}: {d.note}" for d in failed)
        chosen = [d for d in chosen if d not in failed]
    if prior_items_per_s:
        for share in chosen:
            if not share.items_per_s:
                share.items_per_s = prior_items_per_s * (share.threads if share.local_device == "cpu" else 1)
                share.note = (share.note + "; " if share.note else "") + "throughput is a prior, not measured"
    eta = _split(chosen, n_items, notes)
    result = Plan(work_key, int(n_items), chosen, eta, notes, backends=backends, cost_model=cost_model)
    log.info(
        "plan for %d x %s: %s, ETA %s",
        n_items,
        work_key,
        ", ".join(f"{d.name} ({d.threads} thr, batch {d.batch_size}, {d.share:.0%})" for d in chosen),
        "unknown" if eta is None else f"{eta:.1f}s",
    )
    return result


def _assign_threads(chosen: list, backends: dict, resources, cpu_workers: int, notes: list) -> list:
    """Give local CPU workers the thread budget left after one feeder thread per accelerator."""
    local = [d for d in chosen if d.name not in backends]
    cpus = [d for d in local if d.kind == "cpu" and d.threads == 0]
    if cpus:
        if resources is None:
            from modeldesk.scheduler.cpu import usable_cores

            resources = {"cpu": {"usable_cores": usable_cores()}}
        cpu = resources.get("cpu", {})
        budget, budget_note = cpu_thread_budget(cpu.get("usable_cores") or cpu.get("logical_cores") or 1)
        feeders = sum(1 for d in local if d.kind != "cpu")
        cpu_threads = budget - feeders
        if cpu_threads < 1:
            notes.append(
                f"no core left for CPU work next to {feeders} accelerator(s); the CPU only feeds them"
            )
            chosen = [d for d in chosen if d not in cpus]
        else:
            notes.append(f"CPU: {budget_note}")
            template = cpus[0]
            n_workers = max(1, min(int(cpu_workers), cpu_threads))
            per_worker = [
                cpu_threads // n_workers + (1 if i < cpu_threads % n_workers else 0) for i in range(n_workers)
            ]
            memory = template.memory_bytes and template.memory_bytes / n_workers
            split = [
                DeviceShare(
                    "cpu" if n_workers == 1 else f"cpu:{i}",
                    template.provider,
                    threads,
                    template.batch_size,
                    cost_device="cpu",
                    memory_bytes=memory,
                )
                for i, threads in enumerate(per_worker)
            ]
            position = chosen.index(template)
            chosen = [d for d in chosen if d not in cpus]
            chosen[position:position] = split
    for share in chosen:
        share.threads = max(1, int(share.threads))
    return chosen


def _assign_batch_and_rate(
    share: DeviceShare, work_key: str, cost_model, probe, backend, *, batch_size, bytes_per_item, max_batch
) -> bool:
    """Pick the share's batch size (fixed, or the largest that fits) and its throughput; False when
    its probe failed."""
    if batch_size:
        share.batch_size = int(batch_size)
    elif not share.batch_size or share.batch_size <= 1:
        is_cpu = share.local_device == "cpu"
        share.batch_size = cost_model.pick_batch_size(
            work_key,
            share.cost_device,
            share.memory_bytes or float("inf"),
            bytes_per_item=bytes_per_item,
            default=8 if is_cpu else 32,
            max_batch=max_batch or (32 if is_cpu else 128),
        )
    # With a probe, measure this exact configuration; without one, the nearest known will do.
    rate = cost_model.items_per_s(
        work_key, share.cost_device, share.batch_size, share.threads, exact=probe is not None
    )
    if rate is None and probe is not None:
        entry = _probe(cost_model, work_key, share, probe, backend)
        if entry is None:
            return False
        rate = entry["items_per_s"]
    share.items_per_s = rate
    return True


def _split(chosen: list, n_items: int, notes: list) -> float | None:
    """Shares proportional to throughput; returns the ETA (None when a throughput is unknown)."""
    rates = [d.items_per_s for d in chosen]
    if all(rates):
        total = sum(rates)
        for share in chosen:
            share.share = share.items_per_s / total
        return n_items / total
    if len(chosen) > 1:
        notes.append("throughput not measured yet: equal shares, devices that are faster take more chunks")
    for share in chosen:
        share.share = 1.0 / len(chosen)
    return None


def _probe(cost_model, work_key: str, share: DeviceShare, probe, backend) -> dict | None:
    """Measure one configuration, on the backend's worker when it has one; a failing probe is noted."""
    try:
        if backend is not None and hasattr(backend, "run_probe"):

            def runner(device, batch_size, threads):
                return backend.run_probe(share, probe)

            return cost_model.measure(work_key, share.cost_device, share.batch_size, share.threads, runner)

        def local(device, batch_size, threads):
            return probe(share.local_device, batch_size, threads)

        return cost_model.measure(work_key, share.cost_device, share.batch_size, share.threads, local)
    except Exception as exc:  # noqa: BLE001 - a device whose probe fails gets no figure; reported
        log.warning("probe of %s on %s failed: %s", work_key, share.name, exc)
        share.note = (share.note + "; " if share.note else "") + f"probe failed: {exc}"
        return None

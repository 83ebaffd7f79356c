"""Who can reach a cluster's scheduler and workers (issue 30, item 1).

A Dask worker runs any function a peer sends it. `modeldesk cluster start` and `modeldesk worker`
must therefore be reachable only where they have to be (a worker of a loopback scheduler listens on
loopback only; 127.0.0.2 stands in for another machine's view of this one) and only by holders of
the cluster's credentials, on loopback too (another local user must not submit work).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import subprocess
import sys
import time

import pytest

from modeldesk.scheduler import cluster_service
from modeldesk.scheduler.cluster import DaskBackend

distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler started as `modeldesk cluster start` does, and one `modeldesk worker` process."""
    state = tmp_path_factory.mktemp("cluster")
    running = cluster_service.start(state, "127.0.0.1", 0)
    worker = None
    try:
        credentials = running.get("credentials")
        command = [sys.executable, "-m", "modeldesk", "worker", running["address"]]
        command += ["--credentials", credentials] if credentials else []
        worker = subprocess.Popen(
            [*command, "--nthreads", "1", "--name", "probe"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        security = cluster_service.load_security(credentials) if credentials else None
        with DaskBackend(running["address"], security=security) as backend:
            deadline = time.monotonic() + 120
            while not backend.client_.scheduler_info()["workers"] and time.monotonic() < deadline:
                assert worker.poll() is None, "the worker exited"
                time.sleep(0.2)
            (worker_address,) = backend.client_.scheduler_info()["workers"]
        yield {**running, "worker": worker_address, "worker_pid": worker.pid}
    finally:
        if worker is not None:
            worker.kill()
            worker.wait(30)
        cluster_service.stop(state)


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def test_the_credentials_are_readable_by_their_owner_only(cluster):
    assert cluster["address"].startswith("tls://127.0.0.1:")  # mutual TLS on loopback too
    assert cluster["worker"].startswith("tls://127.0.0.1:")
    if os.name == "posix":
        assert os.stat(cluster["credentials"]).st_mode & 0o077 == 0


def test_a_worker_of_a_loopback_scheduler_listens_on_loopback_only(cluster):
    listening = [
        c.laddr
        for c in psutil.Process(cluster["worker_pid"]).net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert listening  # its Dask port and its HTTP server
    assert all(ipaddress.ip_address(addr.ip).is_loopback for addr in listening), listening
    assert _port(cluster["worker"]) in {addr.port for addr in listening}


@pytest.mark.parametrize("role", ["worker", "address"])
def test_another_address_is_refused(cluster, role):
    """127.0.0.2 is this machine seen from elsewhere: nothing of the cluster answers there."""
    port = _port(cluster[role])
    with socket.socket() as sock:
        sock.bind(("127.0.0.2", 0))
        sock.settimeout(5)
        with pytest.raises(OSError):  # ConnectionRefusedError: nothing listens there
            sock.connect(("127.0.0.2", port))


async def _identity(address: str, security=None) -> dict:
    """The peer's answer to a Dask ``identity`` call (what any RPC, ``run`` included, starts from)."""
    args = security.get_connection_args("client") if security is not None else {}
    comm = await distributed.comm.connect(address, timeout="3s", **args)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await asyncio.wait_for(comm.read(), 5)
    finally:
        await comm.close()


@pytest.mark.parametrize("role", ["worker", "address"])
def test_a_local_client_without_the_credentials_is_refused(cluster, role, tmp_path):
    target = cluster[role]
    assert target.startswith("tls://"), f"{target}: any local client can call it"
    security = cluster_service.load_security(cluster["credentials"])
    assert asyncio.run(_identity(target, security))  # the holder of the file gets an answer
    other = cluster_service.load_security(cluster_service.create_credentials(tmp_path / "other.pem"))
    attempts = [
        (target.replace("tls://", "tcp://"), None),  # plain TCP, no TLS at all
        (target, other),  # TLS with another cluster's certificate
    ]
    for address, credentials in attempts:
        with pytest.raises(
            (OSError, EOFError, asyncio.TimeoutError, TimeoutError, distributed.comm.CommClosedError)
        ):
            asyncio.run(_identity(address, credentials))


def test_a_client_without_credentials_cannot_submit_work(cluster):
    plain = cluster["address"].replace("tls://", "tcp://")
    with pytest.raises((OSError, TimeoutError, ValueError, distributed.comm.CommClosedError)):
        with distributed.Client(plain, timeout="3s") as client:
            client.submit(os.getpid).result(timeout=10)


def test_credentials_others_can_read_are_refused(tmp_path):
    path = cluster_service.create_credentials(tmp_path / "credentials.pem")
    os.chmod(path, 0o644)
    with pytest.raises(cluster_service.ClusterError, match="chmod 600"):
        cluster_service.load_security(path)

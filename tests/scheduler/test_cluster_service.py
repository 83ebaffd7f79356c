"""`modeldesk cluster start/stop`: loopback by default, Dask TLS (mutual) anywhere else."""

import pytest

from modeldesk.scheduler import cluster_service
from modeldesk.scheduler.cluster import ClusterError, DaskBackend

pytest.importorskip("distributed")


def test_another_interface_needs_tls_credentials(tmp_path):
    assert cluster_service.check_bind("127.0.0.1", None) == "tcp"
    assert cluster_service.is_loopback("::1") and not cluster_service.is_loopback("192.168.1.5")
    with pytest.raises(ClusterError, match="needs TLS"):
        cluster_service.check_bind("0.0.0.0", None)
    assert cluster_service.check_bind("0.0.0.0", tmp_path / "credentials.pem") == "tls"


def test_loopback_scheduler_starts_says_its_address_and_stops(tmp_path):
    running = cluster_service.start(tmp_path, "127.0.0.1", 0)
    try:
        assert running["address"].startswith("tls://127.0.0.1:")  # mutual TLS on loopback too
        assert cluster_service.status(tmp_path)["pid"] == running["pid"]
        assert cluster_service.start(tmp_path, "127.0.0.1", 0)["already_running"]
        security = cluster_service.load_security(running["credentials"])
        with DaskBackend(running["address"], security=security) as backend:
            assert backend.workers() == []
    finally:
        assert cluster_service.stop(tmp_path)
    assert cluster_service.status(tmp_path) is None
    assert not cluster_service.stop(tmp_path)


def test_a_tls_scheduler_admits_only_holders_of_its_credentials(tmp_path):
    credentials = cluster_service.create_credentials(tmp_path / "credentials.pem")
    assert credentials.stat().st_mode & 0o077 == 0  # readable by its owner only
    other = cluster_service.create_credentials(tmp_path / "other.pem")
    running = cluster_service.start(tmp_path / "state", "127.0.0.1", 0, credentials=credentials)
    try:
        assert running["address"].startswith("tls://")
        with DaskBackend(running["address"], security=cluster_service.load_security(credentials)) as backend:
            assert backend.workers() == []
        with pytest.raises(ClusterError, match="credentials"):
            DaskBackend(running["address"]).start()
        for security in (cluster_service.load_security(other), None):
            address = running["address"] if security else running["address"].replace("tls://", "tcp://")
            with pytest.raises(ClusterError, match="cannot reach"):
                DaskBackend(address, security=security, connect_timeout_s=2).start()
    finally:
        cluster_service.stop(tmp_path / "state")


def test_a_broken_credentials_file_is_named(tmp_path):
    bad = tmp_path / "credentials.pem"
    bad.write_text("hello")
    with pytest.raises(ClusterError, match="credentials.pem: not a cluster credentials file"):
        cluster_service.load_security(bad)

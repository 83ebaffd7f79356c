"""A disk that fills while a deploy bundle is written or while a training job runs: one sentence that
says the disk is full and what to do (no raw ``OSError: [Errno 28]``), and nothing half-written left."""

from __future__ import annotations

import errno

from modeldesk.scheduler.jobstore import JobStore


def test_export_bundle_on_a_full_disk_says_so_and_leaves_nothing(
    tmp_path, cli, tiny_artifact, mounts, monkeypatch
):
    artifact = tiny_artifact(tmp_path / "model")
    disk = mounts.tmpfs(64 << 10)  # a real 64 KB disk where this may mount; the bundle needs ~240 KB
    if disk is None:
        import modeldesk.deploy.bundle as bundle

        disk = tmp_path / "disk"
        disk.mkdir()
        real = bundle._write_tree

        def fill_up(root, artifact):
            real(root, artifact)
            raise OSError(errno.ENOSPC, "No space left on device", str(root / "model.onnx"))

        monkeypatch.setattr(bundle, "_write_tree", fill_up)
    code, out, err = cli(tmp_path / "ws", "export", artifact, disk / "bundle", "--bundle")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "is full" in lines[0] and "free some space" in lines[0]
    assert "Errno" not in lines[0] and "OSError" not in lines[0]
    assert list(disk.iterdir()) == []  # no bundle, no temporary folder


def _fills_the_disk(params, ctx):
    """A job whose write hits a full disk, as training's model file would."""
    raise OSError(errno.ENOSPC, "No space left on device", params["out"] + "/model.onnx")


def test_a_training_job_on_a_full_disk_records_one_sentence(tmp_path, monkeypatch, cli):
    import modeldesk.scheduler.worker as worker

    db = tmp_path / "workspace.db"
    store = JobStore(db)
    store.create()
    job = store.insert(
        "train", "modeldesk.app.training_job:run_training", {"out": str(tmp_path)}, None, tmp_path
    )
    store.set_state(job, "running")
    monkeypatch.setattr(worker, "resolve", lambda target: _fills_the_disk)
    assert worker.execute(db, job, "modeldesk.app.training_job:run_training") == "failed"
    error = store.get(job)["error"]
    assert error.startswith(f"the disk holding {tmp_path} is full"), error
    assert "Errno" not in error and "OSError" not in error
    # the command line shows a job's recorded reason as its one line
    from modeldesk.app.cli import describe_error

    assert describe_error(RuntimeError(error)) == error

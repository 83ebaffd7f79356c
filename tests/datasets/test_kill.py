"""Killing the process in the middle of an import loses nothing committed and leaves no torn file."""

import hashlib
import os
import signal
import subprocess
import sys
import textwrap

from modeldesk.datasets import Store

SCRIPT = textwrap.dedent("""
    import sys, time
    from modeldesk.datasets import Store, import_path, importing
    importing.BATCH_SIZE = 20  # many small batches, so the kill lands mid-import
    store = Store(sys.argv[1])
    project = store.create_project("p", "image-classification", kind="image", target="label")

    def slow():  # polled before every file: keep the import running for a while
        time.sleep(0.003)
        return False

    import_path(store, project, sys.argv[2], should_stop=slow,
                on_commit=lambda report: print(report.added, flush=True))
    print("done", flush=True)
""")


def test_sigkill_mid_import(tmp_path, make_images):
    make_images(tmp_path / "images", {"a": 150, "b": 150}, size=(24, 24))
    workspace = tmp_path / "ws"
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(workspace), str(tmp_path / "images")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        reported = int(proc.stdout.readline())  # the first committed batch
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert 0 < reported < 300

    with Store(workspace) as store:
        assert store.integrity_check() == "ok"
        samples = store.samples("p")
        assert len(samples) >= reported
        for sample in samples:
            assert hashlib.sha256(sample.path.read_bytes()).hexdigest() == sample.content_hash
        for folder, _dirs, files in os.walk(workspace / "media"):
            for name in files:  # every file under a final name is complete; partial ones are .NAME.*.tmp
                if not (name.startswith(".") and name.endswith(".tmp")):
                    data = open(os.path.join(folder, name), "rb").read()
                    assert hashlib.sha256(data).hexdigest() == name.split(".")[0]
        # the workspace still works: the rest of the import can be done again
        from modeldesk.datasets import import_path

        report = import_path(store, "p", tmp_path / "images")
        assert store.stats("p")["samples"] == 300 and report.added == 300 - len(samples)

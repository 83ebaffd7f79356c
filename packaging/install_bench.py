"""Install the .deb into a fresh Debian root and measure the promise: download size, installed
size, install time, time to the first window, time from the first window to a trained sample model;
then upgrade over it and remove it, checking that the user's workspace stays.

The fresh root is a ``debootstrap --variant=minbase`` Debian (no Python of ours, no Python at all),
copied anew for each run; the app runs there as a new user with an empty environment, on an Xvfb
display of the host (its socket is bind-mounted). Needs root, debootstrap (network once, to make
the base), Xvfb, xwininfo (x11-utils) and ImageMagick's ``import`` for the screenshots.

Usage::

    sudo python3 packaging/install_bench.py dist/modeldesk_0.1.0_amd64.deb --shots shots/installer
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "linux"))
import make_deb  # noqa: E402

USER = "tester"
DISPLAY_NUMBER = 77


def sh(*args, check=True, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], check=check, **kwargs)


def make_base(base: Path, mirror: str) -> None:
    """A minimal Debian root (cached): what the user's desktop has, minus any Python."""
    if (base / "etc" / "debian_version").exists():
        return
    print(f"making the base root in {base} (once; needs the network)", flush=True)
    sh("debootstrap", "--variant=minbase", "bookworm", base, mirror, stdout=subprocess.DEVNULL)


@contextlib.contextmanager
def mounted(root: Path):
    """/proc, /dev, /sys and the X socket folder inside ``root`` for the duration."""
    done = []
    try:
        for source, target, extra in (
            ("proc", "proc", ["-t", "proc"]),
            ("/dev", "dev", ["--rbind"]),
            ("/sys", "sys", ["--rbind"]),
            ("/tmp/.X11-unix", "tmp/.X11-unix", ["--bind"]),
        ):
            (root / target).mkdir(parents=True, exist_ok=True)
            sh("mount", *extra, source, root / target)
            done.append(root / target)
        yield
    finally:
        for path in reversed(done):
            sh("umount", "-R", "-l", path, check=False)


def in_root(
    root: Path,
    command: str,
    *,
    user: str | None = None,
    env: dict | None = None,
    check=True,
    capture=False,
    timeout=None,
) -> subprocess.CompletedProcess:
    """Run a shell ``command`` in the chroot, as root or as ``user`` with exactly ``env``."""
    if user:
        variables = " ".join(f"{k}={v}" for k, v in (env or {}).items())
        command = (
            f"exec setpriv --reuid={user} --regid={user} --init-groups env -i {variables} sh -c '{command}'"
        )
    return subprocess.run(
        ["chroot", str(root), "sh", "-c", command],
        check=check,
        timeout=timeout,
        capture_output=capture,
        text=True,
    )


def user_env(display: str) -> dict:
    home = f"/home/{USER}"
    return {
        "HOME": home,
        "USER": USER,
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "DISPLAY": display,
        "LANG": "C.UTF-8",
    }


def window_present(display: str, title: str = "ModelDesk") -> bool:
    """Whether a top-level window titled ``title`` is mapped and viewable on ``display``."""
    env = {**os.environ, "DISPLAY": display}
    tree = subprocess.run(
        ["xwininfo", "-root", "-children"], env=env, capture_output=True, text=True, check=False
    )
    for line in tree.stdout.splitlines():
        if f'"{title}"' in line:
            info = subprocess.run(
                ["xwininfo", "-id", line.split()[0]], env=env, capture_output=True, text=True, check=False
            )
            if "IsViewable" in info.stdout:
                return True
    return False


def screenshot(display: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["import", "-display", display, "-window", "root", str(path)],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def first_window(root: Path, display: str, shots: Path | None, *, drop_caches: bool, timeout=60.0) -> float:
    """Start ``modeldesk`` (the desktop app) and return seconds until its window is mapped."""
    if drop_caches:
        with contextlib.suppress(OSError):
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
    env = user_env(display)
    variables = " ".join(f"{k}={v}" for k, v in env.items())
    start = time.monotonic()
    process = subprocess.Popen(
        [
            "chroot",
            str(root),
            "setpriv",
            f"--reuid={USER}",
            f"--regid={USER}",
            "--init-groups",
            "env",
            "-i",
            *variables.split(),
            "modeldesk",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not window_present(display):
            if process.poll() is not None:
                raise RuntimeError(
                    f"modeldesk exited with {process.returncode}: {process.stderr.read()[-2000:]}"
                )
            if time.monotonic() - start > timeout:
                raise TimeoutError("no ModelDesk window within the time limit")
            time.sleep(0.05)
        elapsed = time.monotonic() - start
        if shots is not None:
            time.sleep(1.5)  # let it paint
            screenshot(display, shots / "01-first-run.png")
        return elapsed
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        if process.poll() is None:
            process.kill()


def smoke(root: Path, display: str, shots: Path | None) -> dict:
    """The first-run path inside the installed app: sample project, fast template, one prediction."""
    env = user_env(display)
    variables = " ".join(f"{k}={v}" for k, v in env.items())
    process = subprocess.Popen(
        [
            "chroot",
            str(root),
            "setpriv",
            f"--reuid={USER}",
            f"--regid={USER}",
            "--init-groups",
            "env",
            "-i",
            *variables.split(),
            "modeldesk",
            "-m",
            "modeldesk.ui.smoke",
            "--workspace",
            f"/home/{USER}/.local/share/ModelDesk/workspace",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    number = 2
    while process.poll() is None:
        time.sleep(2.5)
        if shots is not None and process.poll() is None and number < 9:
            screenshot(display, shots / f"{number:02d}-first-run-flow.png")
            number += 1
    out, err = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"smoke run failed ({process.returncode}): {(out + err)[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def folder_bytes(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() or p.is_symlink())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("deb", type=Path)
    parser.add_argument(
        "--base",
        type=Path,
        default=Path.home() / ".cache" / "modeldesk-installer" / "rootfs-bookworm",
        help="cached minimal Debian root, outside the checkout (made with debootstrap when missing)",
    )
    parser.add_argument("--mirror", default="http://deb.debian.org/debian")
    parser.add_argument("--shots", type=Path, help="folder for screenshots of the first run")
    parser.add_argument(
        "--drop-caches",
        action="store_true",
        help="drop the page cache before the first start (a cold start; affects the whole machine)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the fresh root afterwards")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("needs root (chroot, mount)")
    deb = args.deb.resolve()
    make_base(args.base.resolve(), args.mirror)
    rows: list[tuple[str, str]] = [("download size (.deb)", f"{deb.stat().st_size / 1e6:.1f} MB")]
    work = Path(tempfile.mkdtemp(prefix="modeldesk-install-"))
    root = work / "root"
    display = f":{DISPLAY_NUMBER}"
    xvfb = subprocess.Popen(
        ["Xvfb", display, "-screen", "0", "1280x820x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        sh("cp", "-a", args.base.resolve(), root)
        shutil.copy2(deb, root / "tmp" / deb.name)
        python_in_root = list((root / "usr" / "bin").glob("python3*"))
        rows.append(("Python in the fresh root", ", ".join(p.name for p in python_in_root) or "none"))
        with mounted(root):
            in_root(root, f"useradd -m {USER}")
            # The system libraries the bundled Qt needs (a desktop has them; a minimal root does not).
            start = time.monotonic()
            in_root(
                root,
                "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                f"--no-install-recommends {' '.join(d.split()[0] for d in make_deb.DEPENDS)} >/dev/null",
            )
            rows.append(("system libraries (apt, network)", f"{time.monotonic() - start:.1f} s"))
            start = time.monotonic()
            in_root(root, f"dpkg -i /tmp/{deb.name} >/dev/null")
            install_s = time.monotonic() - start
            rows.append(("install time (dpkg -i)", f"{install_s:.1f} s"))
            rows.append(
                (
                    "installed size (/opt/modeldesk)",
                    f"{folder_bytes(root / 'opt' / 'modeldesk') / 1e6:.1f} MB",
                )
            )
            which = in_root(
                root,
                "command -v modeldesk && modeldesk --version",
                user=USER,
                env=user_env(display),
                capture=True,
            )
            rows.append(("modeldesk on PATH", " | ".join(which.stdout.split("\n")[:2])))
            desktop = root / "usr/share/applications/modeldesk.desktop"
            rows.append(
                (
                    "desktop entry, icon",
                    f"{desktop.exists()}, {(root / 'usr/share/icons/hicolor/scalable/apps/modeldesk.svg').exists()}",
                )
            )
            cold = first_window(root, display, args.shots, drop_caches=args.drop_caches)
            rows.append(
                (
                    "time to first window (1st start" + (", cold cache)" if args.drop_caches else ")"),
                    f"{cold:.2f} s",
                )
            )
            warm = first_window(root, display, None, drop_caches=False)
            rows.append(("time to first window (2nd start)", f"{warm:.2f} s"))
            result = smoke(root, display, args.shots)
            rows.append(("first window -> sample project", f"{result['sample_project_s']:.1f} s"))
            rows.append(("first window -> trained sample model", f"{result['window_to_model_s']:.1f} s"))
            rows.append(
                (
                    "prediction of one circle",
                    f"{result['prediction']['label']} ({result['prediction']['score']:.2f})",
                )
            )
            workspace = root / "home" / USER / ".local/share/ModelDesk/workspace"
            rows.append(("workspace in the user's data folder", str(workspace.relative_to(root))))
            # Upgrade: the same build as version +1, installed over it; the workspace stays and opens.
            newer = work / "upgrade"
            version = make_deb_version(deb)
            upgraded = make_deb.build(
                root / "opt" / "modeldesk", newer, version + "+1", "amd64", compression="gzip"
            )
            shutil.copy2(upgraded, root / "tmp" / upgraded.name)
            in_root(root, f"dpkg -i /tmp/{upgraded.name} >/dev/null")
            listed = in_root(
                root, "modeldesk project list --json", user=USER, env=user_env(display), capture=True
            )
            rows.append(
                (
                    "upgrade keeps the workspace",
                    "yes" if "Shapes (sample)" in listed.stdout else f"NO: {listed.stdout[:200]}",
                )
            )
            in_root(root, "dpkg --purge modeldesk >/dev/null")
            gone = not (root / "opt" / "modeldesk").exists() and not (root / "usr/bin/modeldesk").exists()
            rows.append(("purge removes the app", "yes" if gone else "NO"))
            rows.append(
                ("purge keeps the workspace", "yes" if (workspace / "workspace.db").exists() else "NO")
            )
    finally:
        xvfb.terminate()
        xvfb.wait(10)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {root}")
    width = max(len(name) for name, _ in rows)
    print(f"\n{'measure':<{width}}  value")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


def make_deb_version(deb: Path) -> str:
    return subprocess.run(
        ["dpkg-deb", "-f", str(deb), "Version"], capture_output=True, text=True, check=True
    ).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())

"""Before Qt aborts for want of a system library, the app names it and how to install it."""

import subprocess

from modeldesk.ui import platform_check
from modeldesk.ui.platform_check import advice, missing_libraries, uses_xcb


def test_the_xcb_plugin_is_checked_only_where_qt_uses_it():
    assert uses_xcb({}, "linux")
    assert uses_xcb({"QT_QPA_PLATFORM": "xcb"}, "linux")
    assert not uses_xcb({"QT_QPA_PLATFORM": "offscreen"}, "linux")
    assert not uses_xcb({"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}, "linux")
    assert not uses_xcb({}, "win32") and not uses_xcb({}, "darwin")


def _loader(missing: list[str]):
    """A stand-in for ctypes.CDLL: the plugin fails on the first of ``missing``, a library on itself."""

    def load(name):
        base = name.rsplit("/", 1)[-1]
        failing = missing[0] if base == "libqxcb.so" and missing else base if base in missing else None
        if failing:
            raise OSError(f"{failing}: cannot open shared object file: No such file or directory")

    return load


def test_missing_libraries_are_named_from_ldd_and_from_loading(tmp_path, monkeypatch):
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"")
    listing = (
        "\tlibxcb-icccm.so.4 => not found\n\tlibc.so.6 => /lib/libc.so.6\n\tlibxcb-icccm.so.4 => not found\n"
    )
    monkeypatch.setattr(
        subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=listing, stderr="")
    )
    found = missing_libraries(plugin, ldd="/usr/bin/ldd", load=_loader(["libxcb-cursor.so.0"]))
    assert found == ["libxcb-icccm.so.4", "libxcb-cursor.so.0"]
    # without ldd, loading the plugin names the first linked library missing
    found = missing_libraries(plugin, ldd=None, load=_loader(["libxcb-keysyms.so.1"]))
    assert found == ["libxcb-keysyms.so.1"]
    assert missing_libraries(plugin, ldd=None, load=_loader([])) == []


def test_advice_names_the_packages_for_each_system():
    text = advice(["libxcb-cursor.so.0", "libxcb-icccm.so.4"])
    assert "libxcb-cursor.so.0, libxcb-icccm.so.4" in text
    assert "sudo apt install libxcb-cursor0 libxcb-icccm4" in text
    assert "sudo dnf install xcb-util-cursor xcb-util-wm" in text


def test_the_window_is_not_opened_when_a_library_is_missing(monkeypatch, capsys):
    from PySide6.QtWidgets import QApplication

    from modeldesk.ui import application

    monkeypatch.setattr(QApplication, "instance", staticmethod(lambda: None))
    monkeypatch.setattr(platform_check, "uses_xcb", lambda environ=None: True)
    monkeypatch.setattr(platform_check, "missing_libraries", lambda plugin: ["libxcb-cursor.so.0"])
    monkeypatch.setattr(
        application, "create_application", lambda: (_ for _ in ()).throw(AssertionError("Qt was started"))
    )
    assert application.run() == 1
    assert "sudo apt install libxcb-cursor0" in capsys.readouterr().err

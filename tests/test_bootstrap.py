"""The one-command setup: what it does when system packages are missing, as root or not."""

from __future__ import annotations

import subprocess

import pytest

from render.tools import bootstrap


def test_missing_packages_without_root_name_the_command_to_run():
    with pytest.raises(bootstrap.SetupError) as error:
        bootstrap.install_system_packages(["ffmpeg", "libcairo2-dev"], is_root=False, has_apt=True)
    message = str(error.value)
    assert "these system packages are missing: ffmpeg libcairo2-dev" in message
    assert "sudo apt-get update && sudo apt-get install -y --no-install-recommends ffmpeg libcairo2-dev" in message


def test_missing_packages_as_root_are_installed_with_apt_get():
    commands = []

    def fake_run(command, **kwargs):
        commands.append(command)
        assert kwargs["env"]["DEBIAN_FRONTEND"] == "noninteractive"
        return subprocess.CompletedProcess(command, 0)

    bootstrap.install_system_packages(["ffmpeg"], is_root=True, has_apt=True, run=fake_run)
    assert commands == [["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "ffmpeg"]]


def test_a_failed_apt_get_is_reported():
    def failing_run(command, **kwargs):
        return subprocess.CompletedProcess(command, 100)

    with pytest.raises(bootstrap.SetupError, match="`apt-get update` failed \\(exit 100\\)"):
        bootstrap.install_system_packages(["ffmpeg"], is_root=True, has_apt=True, run=failing_run)


def test_a_system_without_apt_gets_the_list():
    with pytest.raises(bootstrap.SetupError, match="not a Debian-style system"):
        bootstrap.install_system_packages(["ffmpeg"], is_root=True, has_apt=False)


def test_nothing_missing_does_nothing(capsys):
    """Nothing missing: no command runs and nothing is said, even as root on a Debian system."""
    commands = []

    def recording_run(command, **kwargs):
        commands.append(command)
        return subprocess.CompletedProcess(command, 0)

    bootstrap.install_system_packages([], is_root=True, has_apt=True, run=recording_run)
    assert commands == [] and capsys.readouterr().err == ""
    bootstrap.install_system_packages(["ffmpeg"], is_root=True, has_apt=True, run=recording_run)
    assert commands[-1][:2] == ["apt-get", "install"] and "ffmpeg" in commands[-1]  # the recorder does record


def test_missing_packages_are_found_with_dpkg(monkeypatch):
    monkeypatch.setitem(bootstrap.SYSTEM_PACKAGES, "film", {"ffmpeg": "x", "pkg-config": "y"})
    assert bootstrap.missing_system_packages("film", is_installed=lambda p: p == "pkg-config") == ["ffmpeg"]


def test_an_unknown_profile_is_refused(capsys):
    assert bootstrap.main(["nonsense"]) == 2
    assert "unknown profile 'nonsense'" in capsys.readouterr().err




def fresh_machine(monkeypatch, venv):
    """A root machine with apt-get, four packages missing; apt-get and pip recorded, not run."""
    import threading

    events, pip_running = [], threading.Event()
    monkeypatch.setattr(bootstrap.os, "geteuid", lambda: 0)
    monkeypatch.setattr(bootstrap.shutil, "which", lambda name: f"/usr/bin/{name}")

    def apt_get(packages, update=True, **kwargs):
        if packages:
            events.append(("apt-get", tuple(packages), update))
        if "ffmpeg" in packages:
            assert pip_running.wait(10), "pip did not start while apt-get installed the rest"

    def pip(profile):
        pip_running.set()
        events.append(("pip", profile))
        venv()

    monkeypatch.setattr(bootstrap, "install_system_packages", apt_get)
    monkeypatch.setattr(bootstrap, "ensure_venv", pip)
    monkeypatch.setattr(bootstrap, "compile_sources", lambda: events.append(("compile",)))
    monkeypatch.setattr(bootstrap, "missing_system_packages", lambda profile: [
        "ffmpeg", "libcairo2-dev", "chromium", "pkg-config"])
    return events


def test_pip_installs_the_project_while_apt_get_installs_the_rest(monkeypatch):
    """What pip needs to build (Cairo's headers, pkg-config) first; then the venv beside LaTeX, the browser and
    ffmpeg, apt's lists refreshed once."""
    events = fresh_machine(monkeypatch, venv=lambda: None)
    assert bootstrap.main(["test"]) == 0
    assert events[0] == ("apt-get", ("libcairo2-dev", "pkg-config"), True)
    assert sorted(events[1:-1]) == [("apt-get", ("ffmpeg", "chromium"), False), ("pip", "test")]
    assert events[-1] == ("compile",)  # (the project's modules to bytecode once, not in each command's process)


def test_an_unknown_setup_argument_is_refused(capsys):
    assert bootstrap.main(["test", "--llama"]) == 2
    assert "unknown profile 'test --llama'; use one of test, film" in capsys.readouterr().err


def test_a_failed_pip_beside_apt_get_is_reported_once_both_are_done(monkeypatch, capsys):
    def venv():
        raise bootstrap.SetupError("pip could not install the project (exit 1); see its output above")

    events = fresh_machine(monkeypatch, venv)
    assert bootstrap.main(["test"]) == 1
    assert ("apt-get", ("ffmpeg", "chromium"), False) in events  # apt-get's part finished all the same
    assert "setup: error: pip could not install the project" in capsys.readouterr().err

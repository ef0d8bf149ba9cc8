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


def test_nothing_missing_does_nothing():
    bootstrap.install_system_packages([], is_root=False, has_apt=False)


def test_missing_packages_are_found_with_dpkg(monkeypatch):
    monkeypatch.setitem(bootstrap.SYSTEM_PACKAGES, "film", {"ffmpeg": "x", "pkg-config": "y"})
    assert bootstrap.missing_system_packages("film", is_installed=lambda p: p == "pkg-config") == ["ffmpeg"]


def test_an_unknown_profile_is_refused(capsys):
    assert bootstrap.main(["nonsense"]) == 2
    assert "unknown profile 'nonsense'" in capsys.readouterr().err



"""Shared test helpers: the project's real files, copies to break, and the CLI as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from render.files import DATA_DIR, STORYBOARD_PATH
from render.specs.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(DATA_DIR)


@pytest.fixture
def storyboard_copy(tmp_path):
    """Write the real storyboard with one text replacement, and return its path."""

    def make(old: str = "", new: str = "", count: int = 1) -> Path:
        text = STORYBOARD_PATH.read_text()
        if old:
            assert old in text, f"test setup: {old!r} is not in the storyboard"
            text = text.replace(old, new, count)
        path = tmp_path / "storyboard.yaml"
        path.write_text(text)
        return path

    return make


@pytest.fixture
def data_copy(tmp_path):
    """Copy data/ and apply one text replacement to one of its files; return the copy's folder."""
    import shutil

    def make(filename: str, old: str = "", new: str = "") -> Path:
        target = tmp_path / "data"
        shutil.copytree(DATA_DIR, target)
        if old:
            text = (target / filename).read_text()
            assert old in text, f"test setup: {old!r} is not in {filename}"
            (target / filename).write_text(text.replace(old, new, 1))
        return target

    return make


def run_film(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The film CLI in a separate process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "render.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)

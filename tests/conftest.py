"""Shared test helpers: the project's real files, copies to break, and the CLI as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from render.files import DATA_DIR, STORYBOARD_PATH
from render.specs.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def catalog():
    return load_catalog(DATA_DIR)


@dataclass(frozen=True)
class MadeFilm:
    build: Path           # its build folder (later tests may make other films there)
    result: object        # make_film's FilmResult
    lines: list[str]      # what it printed
    film_bytes: bytes     # the film and subtitles as first made, for comparisons
    srt_bytes: bytes


@pytest.fixture(scope="session")
def default_tiny_film(tmp_path_factory) -> MadeFilm:
    """The default film at the tests' tiny size, made once by `make film`'s code for every module."""
    from render.plan.resolve import resolve_plan
    from render.video.film import make_film

    build = tmp_path_factory.mktemp("build")
    lines: list[str] = []
    result = make_film(resolve_plan(recordings=build / "none"), "tiny", build, jobs=2, say=lines.append)
    return MadeFilm(build, result, lines, result.film.read_bytes(), result.srt.read_bytes())


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

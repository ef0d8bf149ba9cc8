"""Shared test helpers: the project's real files, copies to break, and the CLI as a user runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from render.files import DATA_DIR, STORYBOARD_PATH
from render.specs.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
LLAMA_BUILD_TIMEOUT = 1500  # seconds: the build takes three or four minutes on two cores, more beside the tests


def pytest_collection_finish(session):
    """When a collected test needs llama.cpp's server and it is not built, build it in the background,
    niced, on the core the suite leaves idle (the suite is mostly single-threaded), instead of first."""
    from render.tools import bootstrap

    needed = any("llama_server_binary" in getattr(item, "fixturenames", ()) for item in session.items)
    if not needed or bootstrap.llama_server_ready():
        return
    bootstrap.LLAMA_DIR.mkdir(parents=True, exist_ok=True)
    log = open(bootstrap.LLAMA_DIR / "build.log", "wb")
    session.config.llama_build = subprocess.Popen(
        [sys.executable, str(ROOT / "render" / "tools" / "bootstrap.py"), "llama-server"], stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=lambda: os.nice(10))


def pytest_sessionfinish(session):
    build = getattr(session.config, "llama_build", None)
    if build is not None and build.poll() is None:  # a run that ended early: the build leaves nothing half-made
        os.killpg(build.pid, signal.SIGTERM)
        build.wait()


@pytest.fixture(scope="session")
def llama_server_binary(request) -> Path:
    """llama.cpp's `llama-server`, once its background build (if one was needed) has finished."""
    from render.tools import bootstrap

    build = getattr(request.config, "llama_build", None)
    if build is not None:
        try:
            build.wait(LLAMA_BUILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"building llama-server took over {LLAMA_BUILD_TIMEOUT} s; see "
                        f"{bootstrap.LLAMA_DIR / 'build.log'}")
        if build.returncode != 0:
            log = (bootstrap.LLAMA_DIR / "build.log").read_text(errors="replace")
            pytest.fail(f"building llama-server failed (exit {build.returncode}):\n{log[-3000:]}")
    if not bootstrap.llama_server_ready():
        pytest.fail(f"{bootstrap.LLAMA_SERVER} is missing or damaged, and no build was started")
    return bootstrap.LLAMA_SERVER


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


@pytest.fixture(scope="session")
def cli_tiny_film(tmp_path_factory, default_tiny_film) -> Path:
    """The default film at tiny size made by `film film` as a user runs it (with its kit and its page), from
    the beats the session's tiny film already rendered (their cache, copied: each entry is verified before
    use); the review and page tests read the same build folder."""
    import shutil

    build = tmp_path_factory.mktemp("cli-build")
    shutil.copytree(default_tiny_film.build / "cache", build / "cache")
    made = subprocess.run([sys.executable, "-m", "render.cli", "film", "--quality", "tiny", "--build", str(build)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert made.returncode == 0, made.stderr
    return build


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

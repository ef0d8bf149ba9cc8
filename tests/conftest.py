"""Shared test helpers: the project's real files, copies to break, and the CLI as a user runs it."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from render.files import DATA_DIR, STORYBOARD_PATH, copy_project  # noqa: F401 - the tests import copy_project from here
from render.plan.storyboard import load_storyboard
from render.specs.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
BEAT_IDS = tuple(beat.id for beat in load_storyboard(STORYBOARD_PATH).beats)  # the film's beats, in film order: its
# storyboard's (the list lives there alone)
FIXTURES = Path(__file__).resolve().parent / "fixtures"


# The longest files first, so that the suite's two processes end together instead of one finishing the
# layout lint alone (a file's tests stay together: `--dist loadfile`). (An order with a file that needs no tiny film
# second, so that one process works while the other makes the first, measured slower: 22:01 against 18:34.)
LONGEST_FIRST = ("test_layout.py", "test_scenes.py", "test_cluster.py", "test_hardening.py", "test_film.py",
                 "test_hostile_input.py", "test_studio.py")


def pytest_collection_modifyitems(session, config, items):
    """The longest files first; or, with TEST_ORDER_SEED=N in the environment, the files in an order drawn from that
    seed, each file's tests in their own order (the suite's verdict must not depend on the order its files run in)."""
    seed = os.environ.get("TEST_ORDER_SEED")
    if seed:
        import random

        draw = random.Random(seed)
        files = list(dict.fromkeys(item.path for item in items))
        draw.shuffle(files)
        by_file = {path: [item for item in items if item.path == path] for path in files}
        items[:] = [item for path in files for item in by_file[path]]
        return
    rank = {name: position for position, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order is kept


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With TEST_CPU_LOG=FILE in the environment, each test's CPU seconds (its process's and the children it waited
    for: setup, call and teardown) appended to FILE as `seconds<TAB>test id` (docs/tests.md: where the time goes)."""
    log = os.environ.get("TEST_CPU_LOG")
    before = os.times() if log else None
    yield
    if log:
        after = os.times()
        spent = sum(getattr(after, name) - getattr(before, name)
                    for name in ("user", "system", "children_user", "children_system"))
        with open(log, "a") as handle:
            handle.write(f"{spent:.2f}\t{item.nodeid}\n")


def worker_id(config) -> str:
    """pytest-xdist's name for this process ("gw0", "gw1"), or "master" when the suite runs in one."""
    return getattr(config, "workerinput", {}).get("workerid", "master")


@contextmanager
def held(lock: Path):
    """One process at a time (the others wait): for what the suite's workers make once and share."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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


def tiny_film_once(request, tmp_path_factory, name: str, **choice) -> MadeFilm:
    """A film at the tests' tiny size, made once by `make film`'s code for every module (under pytest-xdist,
    once for all the workers: each gets its own copy of the build, so a test that makes other films there
    never changes another worker's)."""
    from render.plan.resolve import resolve_plan
    from render.video.scheduler import make_film

    def made_in(build: Path) -> MadeFilm:
        lines: list[str] = []
        result = make_film(resolve_plan(recordings=build / "none", **choice), "tiny", build, jobs=2, say=lines.append)
        return MadeFilm(build, result, lines, result.film.read_bytes(), result.srt.read_bytes())

    if worker_id(request.config) == "master":
        return made_in(tmp_path_factory.mktemp("build"))
    shared = tmp_path_factory.getbasetemp().parent / name
    with held(shared.with_suffix(".lock")):
        if not (shared / "made.pickle").is_file():
            made = made_in(shared / "build")
            (shared / "made.pickle").write_bytes(pickle.dumps(made))
    return copied(pickle.loads((shared / "made.pickle").read_bytes()), tmp_path_factory)


def copied(made: MadeFilm, tmp_path_factory) -> MadeFilm:
    """A made film in a build folder of its own (its result's paths in the copy)."""
    own = tmp_path_factory.mktemp("build")
    shutil.copytree(made.build, own, dirs_exist_ok=True, symlinks=True)

    def rebased(path: Path) -> Path:
        return own / Path(path).relative_to(made.build)

    result = made.result
    return dataclasses.replace(made, build=own, result=dataclasses.replace(
        result, film=rebased(result.film), srt=rebased(result.srt), vtt=rebased(result.vtt),
        poster=rebased(result.poster)))


@pytest.fixture(scope="session")
def default_tiny_film(request, tmp_path_factory) -> MadeFilm:
    """The default film at the tests' tiny size, made once (tiny_film_once)."""
    return tiny_film_once(request, tmp_path_factory, "default-tiny-film")


@pytest.fixture(scope="session")
def seed_speech(default_tiny_film):
    """Copies the session tiny film's speech clips into a cache folder (each is verified before use), for tests
    of something other than synthesis that would otherwise voice the default film again; returns the folder."""

    def seed(cache: Path) -> Path:
        shutil.copytree(default_tiny_film.build / "cache" / "speech", cache / "speech", dirs_exist_ok=True)
        return cache

    return seed


@pytest.fixture(scope="session")
def lint_cache(request, tmp_path_factory, default_tiny_film) -> Path:
    """One speech cache and layout-lint memo for every test that narrates and lints the lint set (tests/test_layout.py's
    choices, and the extended cut's for the same choices): each sentence voiced once and each beat linted once for
    the suite, whichever test comes first. Its entries are named by what made them, verified before use and written
    atomically, so what one test adds changes how long another takes, never what it finds. It starts with the session
    film's speech and typesetting (the text every choice shares: a choice's lint 29 -> 21 s)."""

    def seed(cache: Path) -> None:
        for kind in ("speech", "typeset"):
            shutil.copytree(default_tiny_film.build / "cache" / kind, cache / kind, dirs_exist_ok=True)

    return made_once(request, tmp_path_factory, "lint-cache", seed)


OTHER_CHOICE = {"gpu": "a100-sxm-80gb", "model": "llama-3.1-70b", "dtype": "int8"}


@pytest.fixture(scope="session")
def other_tiny_film(request, tmp_path_factory) -> MadeFilm:
    """Another GPU, model and data type's film at the tests' tiny size (OTHER_CHOICE), made once."""
    return tiny_film_once(request, tmp_path_factory, "other-tiny-film", **OTHER_CHOICE)


def made_once(request, tmp_path_factory, name: str, make) -> Path:
    """A folder made once for the whole suite (under pytest-xdist, once for all the workers, under a lock) by
    make(folder); returned as made, to be copied, never written to."""
    if worker_id(request.config) == "master":
        shared = tmp_path_factory.getbasetemp() / name
    else:
        shared = tmp_path_factory.getbasetemp().parent / name
    with held(shared.with_suffix(".lock")):
        if not (shared / ".made").is_file():
            if shared.exists():
                shutil.rmtree(shared)
            make(shared / "build")
            (shared / ".made").write_text("")
    return shared / "build"


@pytest.fixture(scope="session")
def cli_tiny_film_made(request, tmp_path_factory, default_tiny_film) -> Path:
    """The default film at tiny size made by `film film` as a user runs it (with its kit and its page), from
    the beats the session's tiny film already rendered (their cache, copied: each entry is verified before
    use); made once for the suite and never written to: each module reads its own copy (cli_tiny_film)."""

    def make(build: Path) -> None:
        shutil.copytree(default_tiny_film.build / "cache", build / "cache")
        made = subprocess.run([sys.executable, "-m", "render.cli", "film", "--quality", "tiny", "--build", str(build)],
                              cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert made.returncode == 0, made.stderr
        (build.parent / "printed.txt").write_text(made.stderr + made.stdout)  # (beside the build: test_output.py)

    return made_once(request, tmp_path_factory, "cli-tiny-film", make)


@pytest.fixture(scope="module")
def cli_tiny_film(cli_tiny_film_made, tmp_path_factory) -> Path:
    """This module's own copy of the suite's `film film` build (cli_tiny_film_made): what one module's tests
    write there (review stills, screenshots, another cut's film) no other module sees, whatever the order."""
    build = tmp_path_factory.mktemp("cli-build")
    shutil.copytree(cli_tiny_film_made, build, dirs_exist_ok=True, symlinks=True)
    return build


def seeded_cache(cache: Path, *films: MadeFilm, rendering: tuple[str, ...] = ()) -> Path:
    """A build's cache folder made from the suite's tiny films' caches (their speech, typesetting and beats, each entry
    verified before use), less every cached render of the beats in `rendering`: a test renders only what it is
    about. Returns the folder."""
    for film in films:
        shutil.copytree(film.build / "cache", cache, dirs_exist_ok=True, symlinks=True)
    for beat_id in rendering:
        for entry in (cache / "beats").glob(f"{beat_id}-*"):
            entry.unlink()
    return cache


TRACKS = ("narration.wav", ".narration.wav.key", "film-sound.m4a", ".film-sound.m4a.key")


def seeded_tracks(build: Path, *films: MadeFilm) -> Path:
    """A build folder holding the tiny films' levelled narration tracks and encoded sounds, with their keys, each in
    its film's folder (each key is checked: a film of other words levels and encodes its own), so a run goes on to its
    beats and its mux at once. Returns the folder."""
    for film in films:
        folder = film.result.film.parent.parent  # (the film's own folder: the build's, or its choice's in it)
        into = build / folder.relative_to(film.build)
        into.mkdir(parents=True, exist_ok=True)
        for name in TRACKS:
            shutil.copy2(folder / name, into / name)
    return build


def retitled_storyboard(folder: Path, titles: tuple[str, ...] = ("Batching", "Measured")) -> Path:
    """The storyboard with beats retitled (by default the batching and measured beats): those beats and the ones
    after them (which name the beat before) render again, the others come from the cache."""
    text = STORYBOARD_PATH.read_text()
    for title in titles:
        old = f"title: {title}\n"
        assert old in text
        text = text.replace(old, f"title: {title} here\n", 1)
    path = folder / "storyboard.yaml"
    path.write_text(text)
    return path


def studio_project(folder: Path, film: MadeFilm) -> Path:
    """A copy of the project for `film studio`, its build's cache the tiny film's and its studio's narration track the
    film's, levelled (its key names the same speeches at the same places, so the studio's first look levels nothing
    again; a studio of another choice or with other words levels its own)."""
    project = copy_project(folder, film.build / "cache")
    studio = project / "build" / "studio"
    studio.mkdir(parents=True, exist_ok=True)
    for name in ("narration.wav", ".narration.wav.key"):
        shutil.copy2(film.build / name, studio / name)  # (the copy's key is checked: a stale one levels again)
    return project


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


# Commands that compute and print (no pool of processes, no signal handlers, no server): run through the command's own
# entry point in the test's process, which is what `python -m render.cli` runs, without a second of start-up each.
IN_PROCESS = frozenset({"plan", "roofline", "load", "calibrate", "list", "model"})


def run_film(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    """The film CLI as a user runs it: its exit code, standard output and standard error. A command of IN_PROCESS's
    on this project runs through render.cli.main here (an exception it lets out is a traceback on its standard
    error and exit 1, as a process would end); any other, or on a copy of the project, in a process of its own."""
    if args and args[0] in IN_PROCESS and Path(cwd).resolve() == ROOT.resolve():
        return film_in_process(*args)
    return subprocess.run([sys.executable, "-m", "render.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def film_in_process(*args: str) -> subprocess.CompletedProcess:
    import contextlib
    import io
    import traceback

    from render.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as ended:  # argparse's usage errors (2), and --help (0)
            code = ended.code if isinstance(ended.code, int) else 1
        except Exception:  # noqa: BLE001 - what a process would print as its last words
            traceback.print_exc(file=err)
            code = 1
    return subprocess.CompletedProcess(["film", *args], code, out.getvalue(), err.getvalue())


class LoopbackServer:
    """A server on 127.0.0.1 (a free port) for tests of what a careless or hostile peer can do: each connection is
    handed to `answer(connection)` in turn; those it puts in `held` stay open until the server is closed."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        self.held: list = []
        self.thread = threading.Thread(target=self.serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def serve(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except socket.timeout:
                continue
            self.answer(connection)

    def answer(self, connection) -> None:
        raise NotImplementedError

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(5)
        for connection in self.held:
            connection.close()
        self.listener.close()


def start_studio(project: Path, *options: str) -> tuple[subprocess.Popen, str, list[str]]:
    """`film studio --quality tiny` on a copy of the project, as from a terminal (its own process group, Ctrl-C at its
    default): the process, the address it printed, and its output lines as they come."""
    process = subprocess.Popen([sys.executable, "-m", "render.cli", "studio", "--quality", "tiny", "--build",
                                str(project / "build"), *options], cwd=project,
                               env={**os.environ, "PYTHONPATH": str(project)}, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    address, deadline = None, time.monotonic() + 60
    while address is None and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(r"studio: (http://127\.0\.0\.1:\d+/)", line)
        address = found and found.group(1)
    if address is None:
        process.kill()
        pytest.fail("the studio printed no address:\n" + "".join(lines))
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    return process, address, lines

"""`make films` on a real Dask cluster: a `dask scheduler` and `dask worker` processes on 127.0.0.1.

Films are rendered at the tiny size. The workers load tests/fixtures/dask_worker_preload.py (with
Dask's own --preload), whose one broken scene lets a test watch a task fail on both tries.
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from render.cluster.films import check_workers, make_films
from render.cluster.tasks import installation, render_part_task
from render.cluster.variants import matrix_variants, parse_variants, plans_for
from render.plan.types import FilmRequest
from render.errors import FilmError
from render.files import DATA_DIR
from render.media import probe
from render.plan.resolve import resolve_plan
from render.plan.storyboard import load_storyboard
from render.plan.types import Plan
from render.specs.catalog import load_catalog
from render.video.beats import PARTS, beat_frames, part_bounds, quality
from render.video.cache import BeatCache, base_key, beat_slice
from render.video.runner import Part
from render.voice.narration import make_narration

from conftest import FIXTURES, OTHER_CHOICE, ROOT, LoopbackServer, MadeFilm, run_film, seeded_cache, seeded_tracks

DASK = Path(sys.executable).parent / "dask"


def free_port() -> int:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        return probe_socket.getsockname()[1]


@dataclass
class Cluster:
    address: str
    folder: Path
    build: Path          # one build folder for the tests below: later ones reuse earlier films' beats
    attempts: Path       # the broken scene's tries, one line each
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start_worker(self, name: str) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        worker = subprocess.Popen(
            [str(DASK), "worker", self.address, "--name", name, "--nthreads", "1", "--no-dashboard",
             "--local-directory", str(self.folder / name), "--preload", str(FIXTURES / "dask_worker_preload.py")],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, start_new_session=True,
            env={**os.environ, "FILM_TEST_ATTEMPTS": str(self.attempts)})
        self.processes[name] = worker
        return worker

    def client(self):
        from distributed import Client

        return Client(self.address, timeout="20s")

    def worker_address(self, client, name: str) -> str:
        return next(address for address, info in client.scheduler_info()["workers"].items() if info["name"] == name)

    def stop(self, name: str, signal_number: int = signal.SIGTERM) -> None:
        process = self.processes.pop(name)
        try:
            os.killpg(process.pid, signal_number)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, default_tiny_film, other_tiny_film):
    """Two workers, and a build whose cache holds the suite's two tiny films (default_tiny_film, other_tiny_film):
    each test takes out the beats it is about (seeded_cache's `rendering`)."""
    folder = tmp_path_factory.mktemp("dask")
    found = Cluster(f"tcp://127.0.0.1:{free_port()}", folder, folder / "build", folder / "attempts.txt")
    seeded_cache(found.build / "cache", default_tiny_film, other_tiny_film)
    seeded_tracks(found.build, default_tiny_film, other_tiny_film)  # (levelled and encoded: each film joins at once)
    port = found.address.rsplit(":", 1)[1]
    log = open(folder / "scheduler.log", "w")
    found.processes["scheduler"] = subprocess.Popen(
        [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"],
        stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True)
    try:
        for name in ("worker-1", "worker-2"):
            found.start_worker(name)
        with found.client() as client:
            client.wait_for_workers(2, timeout=90)
        yield found
    finally:
        for name in [name for name in found.processes if name != "scheduler"] + ["scheduler"]:
            found.stop(name)


def film_is_whole(path: Path, plan: Plan) -> None:
    info = probe(path)
    kinds = [stream["codec_type"] for stream in info["streams"]]
    assert kinds.count("video") == 1 and kinds.count("audio") == 1, path
    assert abs(float(info["format"]["duration"]) - plan.duration) < 0.4, path
    assert len(info["chapters"]) == len(plan.beats)


def default_and(build: Path, *choices: dict) -> list[Plan]:
    return [resolve_plan(recordings=build / "none", **choice) for choice in ({}, *choices)]


def cached_alike(first: MadeFilm, second: MadeFilm) -> set[str]:
    """The beats the two films share: one cached render serves both."""
    q = quality("tiny")
    return {beat.id for beat in first.result.plan.beats
            if BeatCache(first.build / "cache").lookup(first.result.plan, beat.id, q).name
            == BeatCache(second.build / "cache").lookup(second.result.plan, beat.id, q).name}


def test_a_matrix_renders_each_shared_beat_once_and_its_film_is_make_films(cluster, default_tiny_film,
                                                                           other_tiny_film):
    """The suite's two tiny films on the cluster, each beat but two from the cache: the opening, which shows no GPU's
    numbers (one render serves both films), and the wasted money, which does (a render each)."""
    alike = cached_alike(default_tiny_film, other_tiny_film)
    assert "two-waits" in alike and "wasted-money" not in alike and "prefill" not in alike
    seeded_cache(cluster.build / "cache", rendering=("two-waits", "wasted-money"))
    plans = default_and(cluster.build, OTHER_CHOICE)
    lines: list[str] = []
    result = make_films(plans, "tiny", cluster.build, scheduler=cluster.address, say=lines.append)

    assert not result.failed, result.table()
    default, other = result.films
    assert default.film == cluster.build / "preview" / "film.mp4"
    assert other.film == cluster.build / "a100-sxm-80gb-llama-3.1-70b-int8" / "preview" / "film.mp4"
    for made in result.films:
        film_is_whole(made.film, made.plan)
    # The same films, byte for byte, as `make film` renders on this machine's process pool.
    assert default.film.read_bytes() == default_tiny_film.film_bytes
    assert default.srt.read_bytes() == default_tiny_film.srt_bytes
    assert other.film.read_bytes() == other_tiny_film.film_bytes

    # The opening was rendered once, for the first film, and the second film took it; the wasted money once for
    # each: every render is one video in the cache, and each task ran once.
    assert sorted(default.rendered) == ["two-waits", "wasted-money"] and other.rendered == ["wasted-money"]
    assert "two-waits" in other.reused
    videos = [path for beat in ("two-waits", "wasted-money")
              for path in (cluster.build / "cache" / "beats").glob(f"{beat}-*.mp4")]
    assert result.rendered == len(videos) == 3
    # Each beat in its parts (one at the tests' 3 fps: MIN_PART_FRAMES), each part a task that ran once.
    assert len({task.key for task in result.tasks}) == len(result.tasks) == sum(
        len(part_bounds(beat_frames(plan, beat, quality("tiny")))) for plan, beat in
        ((default.plan, "two-waits"), (default.plan, "wasted-money"), (other.plan, "wasted-money")))
    # (the opening was not in the cache: found there by the second film, it was rendered in this run before it asked)
    assert result.shared + result.from_cache == 18 - 3 and result.requested == 18
    assert result.reuse_ratio == pytest.approx(18 / 3)

    # The workers rendered them (not this process), and the client kept their results.
    with cluster.client() as client:
        workers = set(client.scheduler_info()["workers"])
    assert {task.worker for task in result.tasks} <= workers
    assert all(task.render > 0 and task.round_trip >= task.on_worker >= task.render for task in result.tasks)
    # (whether the second film was waiting on it yet depends on how long its narration took)
    assert any(line.startswith("  rendered two-waits for h100-sxm-llama-3.1-8b-bf16") for line in lines), lines
    table = result.table()
    assert "a100-sxm-80gb-llama-3.1-70b-int8" in table and "films made: 2 of 2" in table


def test_a_worker_killed_mid_run_loses_only_its_beats(cluster):
    """Four beats to render (the opening and the cache's, shared; the wasted money, one a film), a task each at the
    tests' 3 fps, for three workers, one of them killed while it renders one."""
    seeded_cache(cluster.build / "cache", rendering=("two-waits", "cache-rides-along", "wasted-money"))
    cluster.start_worker("doomed")
    outcome: dict = {}
    plans = default_and(cluster.build, OTHER_CHOICE)
    with cluster.client() as client:
        client.wait_for_workers(3, timeout=90)
        doomed = cluster.worker_address(client, "doomed")
        run = threading.Thread(target=lambda: outcome.update(
            result=make_films(plans, "tiny", cluster.build, scheduler=cluster.address, say=lambda line: None)))
        run.start()
        deadline = time.monotonic() + 120
        while not client.processing(workers=[doomed]).get(doomed) and time.monotonic() < deadline:
            time.sleep(0.2)
        in_flight = client.processing(workers=[doomed]).get(doomed)
        assert in_flight, "the doomed worker never got a task"
        cluster.stop("doomed", signal.SIGKILL)
        run.join(timeout=300)
    assert not run.is_alive()
    result = outcome["result"]
    assert not result.failed, result.table()
    assert result.rendered == 4
    for made in result.films:
        film_is_whole(made.film, made.plan)
    # What it was rendering was rendered again elsewhere; nothing it returned was kept.
    assert doomed not in {task.worker for task in result.tasks}
    assert set(in_flight) <= {task.key for task in result.tasks}


def test_a_beat_that_fails_twice_fails_its_film_and_the_other_is_made(cluster):
    """The workers' broken scene fails the RTX 4090's prefill on every try."""
    cluster.attempts.unlink(missing_ok=True)
    failing = "rtx-4090-llama-3.1-8b-int8"
    ran = subprocess.run([sys.executable, "-m", "render.cli", "films", "--variants",
                          "h100-sxm/llama-3.1-8b/bf16 rtx-4090/llama-3.1-8b/int8", "--quality", "tiny",
                          "--scheduler", cluster.address, "--build", str(cluster.build)],
                         cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert (f"FAILED {failing}: beat 'prefill' failed twice: RuntimeError: a broken scene: prefill cannot be drawn "
            f"for the rtx-4090") in ran.stdout
    # The part that failed the film was tried, and retried once; the beat's other part was tried no more than
    # that (it is dropped with the film, perhaps before its retry or before it starts).
    tries = collections.Counter(cluster.attempts.read_text().splitlines())
    assert all(line.startswith(f"prefill {failing} from frame ") for line in tries), tries
    assert max(tries.values()) == 2 and len(tries) <= PARTS, tries
    assert "films made: 1 of 2 (1 failed)" in ran.stdout
    assert not (cluster.build / failing / "preview" / "film.mp4").exists()
    made = cluster.build / "preview"
    film_is_whole(made / "film.mp4", resolve_plan())
    assert (made / "youtube-description.txt").is_file()  # the publishing kit, as `make film` writes it


def test_a_worker_with_other_code_is_refused(cluster, monkeypatch):
    plan = resolve_plan()
    with cluster.client() as client:
        part = Part("two-waits-part0", "two-waits", "two-waits", 0, (0, 12), plan.slice_for("two-waits").to_json(),
                    "tiny")
        future = client.submit(render_part_task, part, "prefill-decode-film 0.0.1 (code 000000000000, manim 0.1)",
                               pure=False)
        with pytest.raises(FilmError, match=r"worker tcp://127\.0\.0\.1:\d+ runs prefill-decode-film .* but the "
                                            r"client runs prefill-decode-film 0\.0\.1 .*install the same version"):
            future.result()
        assert client.run(installation) and set(client.run(installation).values()) == {installation()}
        check_workers(client, "the test cluster")  # the same code: no complaint
        monkeypatch.setattr("render.cluster.films.installation", lambda: "prefill-decode-film 9.9 (code x)")
        with pytest.raises(FilmError, match=r"this client runs prefill-decode-film 9\.9 .*tcp://127\.0\.0\.1:\d+ runs "
                                            r"prefill-decode-film"):
            check_workers(client, "the test cluster")


def test_ctrl_c_stops_a_local_matrix_and_keeps_what_was_finished(cluster):
    """As a terminal does: SIGINT to the whole process group (the client and its local workers)."""
    other = "b200-llama-3.2-1b-bf16"
    run = subprocess.Popen([sys.executable, "-m", "render.cli", "films", "--variants",
                            "h100-sxm/llama-3.1-8b/bf16 b200/llama-3.2-1b/bf16", "--quality", "tiny",
                            "--jobs", "1", "--build", str(cluster.build)],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True,
                           # As from a terminal, whatever this suite inherited (a shell's background job
                           # ignores SIGINT, and Python keeps an ignored SIGINT ignored).
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    watchdog = threading.Timer(300, lambda: os.killpg(run.pid, signal.SIGKILL))
    watchdog.start()
    lines = []
    try:
        for line in run.stdout:  # the default film is made from beats already cached; then the other's
            lines.append(line)    # beats are sent, and Ctrl-C comes while they render
            if line.startswith(f"  {other}: narrated;"):
                time.sleep(2)
                os.killpg(run.pid, signal.SIGINT)
                break
        output = "".join(lines) + run.stdout.read()
        code = run.wait(timeout=60)
    finally:
        watchdog.cancel()
    assert code == 130, output
    assert "  film 1/2: " in output and "  film 2/2" not in output
    assert "films: stopped; 1 of 2 films finished and are intact" in output
    assert "Traceback" not in output
    # Nothing of the run is left running.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.killpg(run.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("processes of the interrupted run are still alive")
    timed = make_narration(resolve_plan(), cluster.build, cluster.build / "cache").plan  # voiced: from its cache
    film_is_whole(cluster.build / "preview" / "film.mp4", timed)
    cache = BeatCache(cluster.build / "cache")
    assert all(cache.lookup(timed, beat.id, quality("tiny")) for beat in timed.beats)
    assert not (cluster.build / other / "preview" / "film.mp4").exists()
    assert not list((cluster.build / "cache" / "beats").glob(".*"))  # no half-written entry


# -- no cluster needed ------------------------------------------------------------------------------


def test_a_beats_slice_of_the_plan_renders_like_the_plan(tmp_path, seed_speech):
    plan = make_narration(resolve_plan(recordings=tmp_path / "none"), tmp_path, seed_speech(tmp_path / "cache")).plan
    q = quality("tiny")
    for beat in plan.beats:
        piece = plan.slice_for(beat.id)
        assert beat_slice(piece, beat.id) == beat_slice(plan, beat.id)
        assert base_key(piece, beat.id, q) == base_key(plan, beat.id, q)
        assert len(piece.beats) <= 3 and piece.beat(beat.id) == beat
        assert all(not other.narration and other.timing is None for other in piece.beats if other.id != beat.id)
        assert piece.numbers == plan.numbers and piece.choice == plan.choice
    assert len(plan.slice_for("prefill").to_json()) < len(plan.to_json()) * 0.8


def test_variants_are_read_as_written_and_refused_with_the_format():
    assert parse_variants("h100-sxm/llama-3.1-8b/bf16  a100-sxm-80gb/llama-3.1-70b/int8/gpus=2/kv=fp8") == [
        FilmRequest("h100-sxm", "llama-3.1-8b", "bf16"),
        FilmRequest("a100-sxm-80gb", "llama-3.1-70b", "int8", 2, "fp8")]
    for wrong, says in (("h100-sxm/llama-3.1-8b", "is not GPU/MODEL/DTYPE"), ("", "VARIANTS is empty"),
                        ("h100-sxm/llama-3.1-8b/bf16/tp=2", "'tp=2' is not gpus=N or kv=DTYPE"),
                        ("h100-sxm/llama-3.1-8b/bf16/gpus=two", "gpus=two is not a whole number")):
        with pytest.raises(FilmError, match=says):
            parse_variants(wrong)


def test_a_matrix_leaves_out_what_does_not_fit_and_a_written_variant_must_fit():
    catalog, storyboard = load_catalog(DATA_DIR), load_storyboard()
    resolve = resolve_plan  # a variant is a FilmRequest, as the command line's choice is
    gpus = matrix_variants("gpus", catalog, storyboard, FilmRequest())
    assert [variant.gpu for variant in gpus] == list(catalog.gpus)
    plans, left_out = plans_for(gpus, resolve, strict=False)
    assert len(plans) == len(catalog.gpus) and not left_out  # an 8B model fits every GPU
    models = matrix_variants("models", catalog, storyboard, FilmRequest(gpu="rtx-4090"))
    plans, left_out = plans_for(models, resolve, strict=False)
    assert {plan.choice.model.id for plan in plans} >= {"llama-3.1-8b", "llama-3.2-1b"}
    assert any(note.startswith("rtx-4090/llama-3.1-70b/bf16") for note in left_out)
    assert len(plans) + len(left_out) == len(catalog.models)
    with pytest.raises(FilmError, match=r"VARIANTS: rtx-4090/llama-3.1-70b/bf16: .*does not fit"):
        plans_for([FilmRequest("rtx-4090", "llama-3.1-70b", "bf16")], resolve, strict=True)


@pytest.mark.parametrize("arguments, says", [
    ([], "say which films, either VARIANTS="),
    (["--variants", "h100-sxm/llama-3.1-8b/bf16", "--matrix", "all"], "(not both)"),
    (["--variants", "h100-sxm/llama-3.1-8b/bf16", "--gpu", "b200"], "each variant names its own GPU"),
    (["--variants", "h100-sxm/nope/bf16"], "VARIANTS: h100-sxm/nope/bf16: unknown model 'nope'"),
    (["--matrix", "every"], "MATRIX=every: use one of all, gpus, models"),
    (["--matrix", "gpus", "--scheduler", "host:8786; rm -rf ~"], "SCHEDULER=host:8786; rm -rf ~: give the Dask "
                                                                  "scheduler's address as tcp://HOST:PORT"),
])
def test_bad_films_commands_say_what_to_do(arguments, says):
    ran = run_film("films", "--quality", "tiny", *arguments)
    assert ran.returncode == 1 and says in ran.stderr and "Traceback" not in ran.stderr, ran.stderr


def test_a_scheduler_that_does_not_answer_is_named():
    ran = run_film("films", "--variants", "h100-sxm/llama-3.1-8b/bf16", "--quality", "tiny",
                   "--scheduler", f"tcp://127.0.0.1:{free_port()}")
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert "no Dask scheduler answered within 10 s" in ran.stderr and "dask scheduler" in ran.stderr


# -- issue 42, item 11: a scheduler that answers and then goes silent, closes, or goes away mid-run ---------------


@pytest.fixture
def lone_scheduler(tmp_path):
    """A real `dask scheduler` of its own (no workers), stopped after the test."""
    address = f"tcp://127.0.0.1:{free_port()}"
    process = subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                                "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1])), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield address, process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


class FirstOnly(LoopbackServer):
    """A proxy in front of a real scheduler: the first connection (film's probe of Dask's handshake) is passed
    through; every later one (the client's own) is held silent, or closed at once."""

    def __init__(self, upstream: str, later: str):
        super().__init__()
        self.upstream = ("127.0.0.1", int(upstream.rsplit(":", 1)[1]))
        self.later, self.first = later, True

    def answer(self, connection) -> None:
        if self.first:
            self.first = False
            upstream = socket.create_connection(self.upstream)
            for source, sink in ((connection, upstream), (upstream, connection)):
                threading.Thread(target=self.pump, args=(source, sink), daemon=True).start()
        elif self.later == "silent":
            self.held.append(connection)
        else:
            connection.close()

    @staticmethod
    def pump(source, sink) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                end.close()


def test_a_scheduler_that_answers_the_probe_and_then_goes_silent_is_named(lone_scheduler, monkeypatch):
    """Bounded as a whole, as the probe is (CONNECT_SECONDS, shortened here to 2 s to spare the suite the wait)."""
    from render.cluster import films

    monkeypatch.setattr(films, "CONNECT_SECONDS", 2)
    with FirstOnly(lone_scheduler[0], "silent") as proxy:
        started = time.monotonic()
        with pytest.raises(FilmError) as refused:
            make_films([resolve_plan()], "tiny", Path("/nonexistent"), scheduler=proxy.address)
        seconds = time.monotonic() - started
    assert str(refused.value).startswith(f"SCHEDULER={proxy.address}: the Dask scheduler there answered Dask's "
                                         f"handshake, then said nothing for 2 s while the client connected")
    assert seconds < 60  # the 2 s, not a hang (a margin no busy machine takes up)


def test_a_scheduler_that_answers_the_probe_and_then_closes_is_named(lone_scheduler):
    with FirstOnly(lone_scheduler[0], "closed") as proxy:
        ran = run_film("films", "--variants", "h100-sxm/llama-3.1-8b/bf16", "--quality", "tiny", "--scheduler",
                       proxy.address)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert f"error: SCHEDULER={proxy.address}: the Dask scheduler there answered, then the connection was lost while " \
           f"the client connected" in ran.stderr, ran.stderr
    assert "no Dask scheduler answered" not in ran.stderr


def test_a_scheduler_that_goes_away_mid_run_is_named_not_the_disk(lone_scheduler, tmp_path, seed_speech):
    address, scheduler = lone_scheduler
    cluster = Cluster(address, tmp_path, tmp_path / "build", tmp_path / "attempts.txt")
    cluster.start_worker("worker")
    seed_speech(tmp_path / "build" / "cache")
    try:
        with cluster.client() as client:
            client.wait_for_workers(1, timeout=90)
            films = subprocess.Popen([sys.executable, "-m", "render.cli", "films", "--variants",
                                      "h100-sxm/llama-3.1-8b/bf16", "--quality", "tiny", "--scheduler", address,
                                      "--build", str(tmp_path / "build")], cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 180
            while not any(client.processing().values()) and time.monotonic() < deadline and films.poll() is None:
                time.sleep(0.2)
            assert any(client.processing().values()), "no beat was ever sent to the worker"
            os.killpg(scheduler.pid, signal.SIGKILL)
        _, stderr = films.communicate(timeout=120)
    finally:
        cluster.stop("worker", signal.SIGKILL)
    assert films.returncode == 1 and "Traceback" not in stderr, stderr
    assert f"error: SCHEDULER={address}: the Dask scheduler there answered, then the connection was lost mid-run" \
        in stderr, stderr
    assert "disk" not in stderr and "Failed to reconnect" not in stderr, stderr


def test_a_local_cluster_leaves_port_8787_alone(tmp_path):
    """Another cluster's dashboard on 8787 made Dask warn "Port 8787 is already in use" into `make films`."""
    import warnings

    from render.cluster.films import dask_client

    taken = socket.socket()
    taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        taken.bind(("127.0.0.1", 8787))
        taken.listen()
    except OSError:
        pass  # someone else has it already: as good
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            with dask_client(None, 1) as (client, where):
                assert client.submit(sum, [1, 2]).result(timeout=60) == 3
        assert not [str(warning.message) for warning in seen if "8787" in str(warning.message)]
    finally:
        taken.close()

"""`make films`: many films at once on a Dask cluster, each distinct beat rendered once.

The films' matrix (render/video/scheduler.py, which `make film` runs on this machine's processes) decides
what to render and shares what films have in common; here its runner sends each part of a beat to the
cluster as a task with the beat's slice of the timed plan, which returns the video's bytes (tasks.py):
the client joins and stores them in its beat cache, so workers need no shared folder. Dask retries a
part that raises once; then each film that needs it is reported failed and the others go on. A worker
that dies loses only its running parts, which the scheduler gives to another.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
import threading
import time
from concurrent.futures import CancelledError
from collections.abc import Callable, Iterator
from typing import TypeVar
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from render import media
from render.errors import FilmError
from render.files import BUILD_DIR, write_atomic
from render.plan.types import Plan
from render.text import clean_text
from render.video import beats
from render.video.cues import check_cues
from render.video.finish import FilmResult
from render.video.scheduler import FilmsResult, schedule_films
from render.video.runner import STOP_GRACE_SECONDS, Drawn, Part, nearly_done
from render.cluster import tasks
from render.cluster.tasks import PROGRESS_TOPIC, RenderedPart, installation, render_part_task

log = logging.getLogger("film")
T = TypeVar("T")

CONNECT_SECONDS = 10    # for a scheduler to answer
WORKERS_SECONDS = 60    # for a scheduler with no workers yet to get one
# Local workers only render: no statistical profiler sampling the render's deep stacks every 10 ms,
# and glibc's default trimming (Dask's MALLOC_TRIM_THRESHOLD_ made a beat about 10% slower here).
RENDER_WORKER_CONFIG = {"distributed.worker.profile.enabled": False,
                        "distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1,
                                                                "OPENBLAS_NUM_THREADS": 1}}
SCHEDULER_ADDRESS = re.compile(r"(tcp|tls)://[A-Za-z0-9.\-]+:\d{1,5}|(tcp|tls)://\[[0-9A-Fa-f:]+\]:\d{1,5}")


class DaskRunner:
    """Parts drawn by a Dask cluster's workers, each part a task keyed by its part key: the scheduler runs the
    higher priorities first, retries a part that raised once, and gives a dead worker's parts to another."""

    retries = 1

    def __init__(self, client, where: str):
        self.client, self.where_words = client, where
        self.scratch: Path | None = None
        self.futures: dict[str, tuple[Part, object, float]] = {}  # part key -> (part, future, when submitted)
        self.drawn: dict[str, int] = {}

    def where(self, parts: int) -> str:
        return self.where_words

    @contextmanager
    def open(self, scratch: Path):
        self.scratch = scratch
        self.client.subscribe_topic(PROGRESS_TOPIC, self.on_progress)
        try:
            yield self
        finally:
            self.client.unsubscribe_topic(PROGRESS_TOPIC)

    def on_progress(self, event) -> None:
        """A worker's progress event (from the scheduler's event loop thread)."""
        _, message = event
        self.drawn[message["key"]] = message["frames"]

    def submit(self, part: Part) -> None:
        submitted = time.perf_counter()  # (before the task can start: its round trip holds all its time on the worker)
        future = self.client.submit(render_part_task, part, installation(), key=part.key, retries=self.retries,
                                    priority=part.priority)
        self.futures[part.key] = (part, future, submitted)

    def collect(self, timeout: float) -> list[Drawn]:
        from distributed import wait

        futures = [future for _, future, _ in self.futures.values()]
        if timeout and futures and not any(future.done() for future in futures):
            try:
                wait(futures, timeout=timeout, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            except CancelledError:  # (Dask's FuturesCancelledError) every part at once: the scheduler is gone
                self.check_connected()
        self.check_connected()
        return [self._handed_back(key) for key, (_, future, _) in list(self.futures.items()) if future.done()]

    def check_connected(self) -> None:
        """The client still has its scheduler: a lost one cancels every part, which is no beat's fault."""
        if self.client.status not in ("running", "connecting") or self.client.scheduler_comm is None:
            raise ConnectionError("the client lost its connection to the scheduler")
        if self.client.status == "connecting":
            raise ConnectionError("the client lost its connection to the scheduler and is trying to reconnect")

    def _handed_back(self, key: str) -> Drawn:
        part, future, submitted = self.futures.pop(key)
        self.drawn.pop(key, None)
        try:
            sent: RenderedPart = future.result()
        except Exception as error:  # noqa: BLE001 - a scene's own bug, a killed worker, a version mismatch
            return Drawn(part, None, error, "", 0.0, time.perf_counter() - submitted)
        finally:
            future.release()
        video = self.scratch / f"{part.key}.mp4"
        write_atomic(video, sent.video)
        return Drawn(part, replace(sent.render, video=video), None, sent.worker, sent.on_worker,
                     time.perf_counter() - submitted)

    def progress(self) -> dict[str, int]:
        return dict(self.drawn)

    def cancel(self, key: str) -> None:
        if key in self.futures:
            self.futures.pop(key)[1].cancel()

    def stop(self) -> list[Drawn]:
        from distributed import wait

        running = [future for part, future, _ in self.futures.values()
                   if future.done() or nearly_done(part, self.drawn.get(part.key, 0))]
        if running:
            try:
                wait(running, timeout=STOP_GRACE_SECONDS, return_when="ALL_COMPLETED")
            except (TimeoutError, CancelledError):  # (cancelled: the scheduler is gone; nothing more will come)
                pass
        done = [key for key, (_, future, _) in self.futures.items() if future.done() and future.status == "finished"]
        kept = [self._handed_back(key) for key in done]
        for key in list(self.futures):
            self.cancel(key)
        return [drawn for drawn in kept if drawn.error is None]


def make_films(plans: list[Plan], quality_name: str = "high", build_dir: Path = BUILD_DIR, scheduler: str | None = None,
               workers: int | None = None, say: Callable[[str], None] = print,
               on_film: Callable[[FilmResult], None] | None = None) -> FilmsResult:
    """Make every plan's film on a Dask cluster (a local one unless `scheduler` names one).

    `on_film` is called with each film as it is made (the CLI writes its publishing kit)."""
    started = time.perf_counter()
    q = beats.quality(quality_name)
    media.require_tools()
    unique = list({plan.choice.name: plan for plan in plans}.values())  # two spellings of one film make it once
    for plan in unique:
        check_cues(plan)
    with dask_client(scheduler, workers) as (client, where):
        if scheduler:  # (a scheduler that goes silent now would hold the check for good)
            connected(scheduler, "its workers were asked which code they run", lambda: check_workers(client, where),
                      WORKERS_SECONDS)
        else:
            check_workers(client, where)
        say(f"films: {len(unique)} at {q.name} ({q.width}x{q.height}, {q.fps} fps) on {where}")
        return schedule_films(unique, q, Path(build_dir), DaskRunner(client, where), say, on_film, started=started)


@contextmanager
def dask_client(scheduler: str | None, workers: int | None) -> Iterator[tuple[object, str]]:
    """A client of the cluster at `scheduler`, or of a local cluster of `workers` processes
    (one thread each: Manim's settings belong to a process) that ends with the run."""
    import dask
    from distributed import Client, LocalCluster

    # Dask's own news (workers joining, comms closing) is not the user's; what matters is reported here.
    for name in ["distributed", *[name for name in logging.root.manager.loggerDict if name.startswith("distributed.")]]:
        logging.getLogger(name).setLevel(logging.CRITICAL)  # (Dask's config gives some of them levels of their own)
    if scheduler:
        if not SCHEDULER_ADDRESS.fullmatch(scheduler):
            raise FilmError(f"SCHEDULER={scheduler}: give the Dask scheduler's address as tcp://HOST:PORT "
                            f"(dask scheduler prints it; its port is 8786 unless told otherwise)")
        probe_scheduler(scheduler)
        # The handshake answered; the client's own connection is bounded as a whole too (a scheduler that answers
        # the probe and then goes silent hung `make films` for good).
        client = connected(scheduler, "the client connected",
                           lambda: Client(scheduler, timeout=f"{CONNECT_SECONDS}s"))
        with client:
            try:
                client.wait_for_workers(1, timeout=WORKERS_SECONDS)
            except TimeoutError:
                raise FilmError(f"the Dask scheduler at {scheduler} has had no workers for {WORKERS_SECONDS} s; "
                                f"start one on each machine with `dask worker {scheduler} --nthreads 1`") from None
            except OSError as error:
                raise lost(scheduler, "while waiting for workers", error) from None
            count = len(connected(scheduler, "the client asked for its workers",
                                  lambda: client.scheduler_info()["workers"]))
            try:
                yield client, f"the Dask cluster at {scheduler} ({count} workers)"
            except OSError as error:  # Dask's CommClosedError: the scheduler went away mid-run
                if not is_comm_error(error):
                    raise
                raise lost(scheduler, "mid-run", error) from None
        return
    count = workers or os.cpu_count() or 1
    if not 1 <= count <= 256:
        raise FilmError(f"JOBS={count}: give from 1 to 256 local workers")
    # The semaphores of workers stopped by Ctrl-C are cleaned up by multiprocessing's resource tracker, which
    # then warns of each as a leak; it is started with this interpreter's -W options, so it is told here.
    if "ignore::UserWarning:multiprocessing.resource_tracker" not in sys.warnoptions:
        sys.warnoptions.append("ignore::UserWarning:multiprocessing.resource_tracker")
    # The workers' own logs are not the user's either: the matrix names a part that failed, and on Ctrl-C a
    # worker's LaTeX (in the terminal's process group) dies with a part nobody wants any more.
    with workers_ignoring_ctrl_c(), dask.config.set(RENDER_WORKER_CONFIG):  # only while they start
        # No dashboard, and the scheduler's HTTP server on a free port: with dashboard_address=None it still took
        # 8787, and warned "Port 8787 is already in use" into the user's terminal when another cluster had it.
        cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.CRITICAL,
                               scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"})
    with cluster, Client(cluster) as client:
        try:
            yield client, f"a local Dask cluster of {count} worker{'s' if count > 1 else ''}"
        except KeyboardInterrupt:
            # Ctrl-C: its workers are drawing beats nobody will use, and a graceful close waits for them
            # (seconds); every finished beat is already in the cache, so they are stopped at once.
            for nanny in list(cluster.workers.values()):
                nanny.close_gracefully(reason="ctrl-c")  # a worker that goes away now is not restarted
            stop_local_workers()
            raise


TRACKER = "from multiprocessing.resource_tracker import"  # how Python starts its resource tracker


def stop_local_workers() -> None:
    """Kill this process's local cluster's processes (its nannies and their workers), all of them children of
    this one, so closing the cluster afterwards has nothing to wait for."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            if not any(part.startswith(TRACKER) for part in child.cmdline()):  # it cleans up after them
                child.kill()
        except psutil.Error:
            pass


def probe_scheduler(scheduler: str) -> None:
    """Dask's own handshake with the scheduler, bounded as a whole: a server that accepts the connection and
    says nothing (which Client's connect timeout does not cover), or that speaks something else, gets one
    message naming the address within CONNECT_SECONDS."""
    import asyncio

    from distributed.comm import connect

    async def handshake() -> None:
        # Dask gives up on a refusing address after its timeout (OSError), before the whole handshake's deadline
        # below: its own handshake has no deadline at all.
        comm = await connect(scheduler, timeout=CONNECT_SECONDS - 1)
        await comm.close()

    def unanswered(why: str) -> FilmError:
        return FilmError(f"SCHEDULER={scheduler}: no Dask scheduler answered within {CONNECT_SECONDS} s ({why}); start "
                         f"one there with `dask scheduler`, or leave SCHEDULER unset to render on a cluster on this "
                         f"machine")

    try:
        asyncio.run(asyncio.wait_for(handshake(), CONNECT_SECONDS))
    except (TimeoutError, asyncio.TimeoutError):
        raise unanswered("something accepted the connection but said nothing") from None
    except OSError as error:
        raise unanswered(f"nothing accepted the connection: {type(error).__name__}") from None
    except (Exception, MemoryError) as error:  # noqa: BLE001 - whatever a stranger's bytes make Dask's decoder do
        raise FilmError(f"SCHEDULER={scheduler}: what answered there is not a Dask scheduler (its reply broke Dask's "
                        f"handshake: {type(error).__name__}); check the address and port (8786 unless told "
                        f"otherwise)") from None


def connected(scheduler: str, step: str, call: Callable[[], T], seconds: float | None = None) -> T:
    """`call()` (a step of connecting the client) within `seconds` (CONNECT_SECONDS), on a thread of its own so that
    a scheduler that goes silent cannot hold it longer; the message says what was seen."""
    seconds = seconds or CONNECT_SECONDS
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - raised below, in the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=run, name="dask-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise FilmError(f"SCHEDULER={scheduler}: the Dask scheduler there answered Dask's handshake, then said "
                        f"nothing for {seconds:g} s while {step}; check that it is not overloaded or stopped, or "
                        f"restart it with `dask scheduler`")
    error = outcome.get("error")
    if isinstance(error, (OSError, TimeoutError)):
        raise lost(scheduler, f"while {step}", error)
    if error is not None:
        raise error
    return outcome["value"]


def lost(scheduler: str, when: str, error: BaseException) -> FilmError:
    """The scheduler answered, then closed or dropped the connection `when`."""
    kept = "; the beats finished before it are in the cache, for the next run" if when == "mid-run" else ""
    return FilmError(f"SCHEDULER={scheduler}: the Dask scheduler there answered, then the connection was lost {when} "
                     f"({type(error).__name__}: {clean_text(str(error), 200) or 'closed'}); check that it is still "
                     f"running (restart it with `dask scheduler`){kept}")


def is_comm_error(error: BaseException) -> bool:
    from distributed.comm.core import CommClosedError

    return isinstance(error, (CommClosedError, ConnectionError, TimeoutError))


@contextmanager
def workers_ignoring_ctrl_c() -> Iterator[None]:
    """Worker processes started in here ignore Ctrl-C (Python keeps an ignored SIGINT ignored in a
    child), so a terminal's Ctrl-C reaches only this process, which cancels the run and closes
    the cluster in order, instead of every worker dying with its own traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def check_workers(client, where: str) -> None:
    """Every worker must run this project's code, as the client does; say which do not."""
    try:
        found = client.run(tasks.installation)  # imported there, from the worker's own files
    except Exception as error:  # noqa: BLE001 - a worker without the project cannot even load the check
        raise FilmError(f"the workers of {where} cannot run this project ({type(error).__name__}: {error}); "
                        f"install it on every worker (pip install /path/to/prefill-decode-film[cluster]) and "
                        f"restart them") from None
    ours = installation()
    wrong = {address: theirs for address, theirs in found.items() if theirs != ours}
    if wrong:
        listed = "; ".join(f"{address} runs {theirs}" for address, theirs in sorted(wrong.items()))
        raise FilmError(f"this client runs {ours}, but {listed}: install the same version of the project on "
                        f"every worker, then restart them")

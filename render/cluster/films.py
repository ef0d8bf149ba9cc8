"""`make films`: many films at once on a Dask cluster, each distinct beat rendered once.

For each film in turn, the client locks its folder, makes its narration (cheap, and cached by
words and voice), and turns each beat the beat cache lacks into a Dask task keyed by the beat
cache's own key, so films that need the same pictures share one task:

    <beat>-<base>-<values>  the scene's reads are known (an earlier render recorded them): the
                            full cache key, which every film showing the same values joins
    <beat>-<base>           not known yet: the first film that needs it renders it; when its
                            reads come back, every film waiting on it looks the cache up with
                            its own values and renders its own only if they differ

A task gets the beat's slice of the timed plan and returns the video's bytes (tasks.py): the
client stores them in its beat cache, so workers need no shared folder. Dask retries a task that
raises once; then each film that needs it is reported failed and the others go on. A worker that
dies loses only its running tasks, which the scheduler gives to another. A film whose beats are
all there is joined here, by the same code as `make film`.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from render import media
from render.errors import FilmError
from render.formatting import counted
from render.files import BUILD_DIR, cache_dir
from render.plan.types import Plan
from render.video import beats
from render.video.cache import BeatCache
from render.video.cues import check_cues
from render.video.film import BeatVideos, FilmResult, film_dir, finish_film, narrate, output_lock
from render.voice.narration import NarrationResult
from render.cluster import tasks
from render.cluster.tasks import PROGRESS_TOPIC, RenderedBeat, installation, render_beat_task

log = logging.getLogger("film")

CONNECT_SECONDS = 10    # for a scheduler to answer
WORKERS_SECONDS = 60    # for a scheduler with no workers yet to get one
REPORT_EVERY = 10.0     # seconds between progress lines while beats render
# Local workers only render: no statistical profiler sampling the render's deep stacks every 10 ms,
# and glibc's default trimming (Dask's MALLOC_TRIM_THRESHOLD_ made a beat about 10% slower here).
RENDER_WORKER_CONFIG = {"distributed.worker.profile.enabled": False,
                        "distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1,
                                                                "OPENBLAS_NUM_THREADS": 1}}
SCHEDULER_ADDRESS = re.compile(r"(tcp|tls)://[A-Za-z0-9.\-]+:\d{1,5}|(tcp|tls)://\[[0-9A-Fa-f:]+\]:\d{1,5}")


@dataclass
class FilmJob:
    """One film of the matrix, from its narration to its file."""

    plan: Plan
    index: int
    folder: Path
    started: float
    lock: ExitStack = field(default_factory=ExitStack)
    narration: NarrationResult | None = None
    made: BeatVideos = field(default_factory=BeatVideos)
    waiting: set[str] = field(default_factory=set)      # beats still being rendered for it
    shared: list[str] = field(default_factory=list)     # beats another film of this run rendered
    failure: str | None = None
    result: FilmResult | None = None

    @property
    def name(self) -> str:
        return self.plan.choice.name

    @property
    def timed(self) -> Plan:
        assert self.narration is not None
        return self.narration.plan


@dataclass
class BeatTask:
    key: str
    beat_id: str
    job: FilmJob                 # the film whose slice of the plan was sent
    future: object               # distributed.Future
    submitted: float
    values_known: bool           # keyed by the full cache key (else by the scene's code and beat alone)
    waiting: list[FilmJob] = field(default_factory=list)  # every film that needs it, the first included


@dataclass(frozen=True)
class TaskRecord:
    """One beat task's times (seconds), for the scheduler's overhead."""

    key: str
    worker: str
    render: float     # Manim drawing and encoding the beat
    on_worker: float  # the task on its worker: the version check, the plan slice and the render
    round_trip: float  # submitted to result received, queueing included


@dataclass(frozen=True)
class FilmRow:
    """One film's line in the summary."""

    name: str
    film: Path | None            # None: it failed
    failure: str | None
    rendered: int                # its beats rendered for it
    shared: int                  # rendered for another film of this run
    cached: int                  # in the beat cache already


@dataclass(frozen=True)
class FilmsResult:
    films: list[FilmResult]      # made, in the order asked
    rows: list[FilmRow]
    failed: dict[str, str]       # film -> why
    requested: int               # beats over all films
    seconds: float
    workers: str                 # where they rendered
    tasks: list[TaskRecord]      # one per distinct beat rendered

    @property
    def rendered(self) -> int:
        return len(self.tasks)

    @property
    def shared(self) -> int:
        """Beats rendered in this run for another film."""
        return sum(row.shared for row in self.rows)

    @property
    def from_cache(self) -> int:
        """Beats found in the beat cache as their film was narrated."""
        return sum(row.cached for row in self.rows)

    @property
    def reuse_ratio(self) -> float:
        """Beats the films needed per beat rendered (0 when nothing was rendered)."""
        return self.requested / self.rendered if self.rendered else 0.0

    def table(self) -> str:
        """The summary: a line per film, then the totals."""
        width = max([len("film"), *(len(row.name) for row in self.rows)])
        lines = [f"{'film':<{width}}  rendered  shared  cached  result"]
        for row in self.rows:
            outcome = str(row.film) if row.film else f"FAILED: {row.failure}"
            lines.append(f"{row.name:<{width}}  {row.rendered:>8}  {row.shared:>6}  {row.cached:>6}  {outcome}")
        lines.append(f"films made: {len(self.films)} of {len(self.rows)}" + (f" ({len(self.failed)} failed)" if self.failed
                                                                               else "")
                     + f"; beats: {self.requested} needed, {self.rendered} rendered, {self.shared} shared between "
                     f"films, {self.from_cache} from the cache"
                     + (f" (each render served {self.reuse_ratio:.2f} beats)" if self.rendered else "")
                     + f"; {self.seconds:.1f} s on {self.workers}")
        return "\n".join(lines)


class FilmMatrix:
    """The client's side of a matrix: the films, their beats' tasks, the cache."""

    def __init__(self, client, q: beats.Quality, build_dir: Path, say: Callable[[str], None],
                 on_film: Callable[[FilmResult], None] | None, films: int):
        self.client, self.q, self.build_dir, self.say, self.on_film = client, q, build_dir, say, on_film
        self.cache = BeatCache(cache_dir(build_dir))
        self.jobs: list[FilmJob] = []
        self.total_films = films
        self.tasks: dict[str, BeatTask] = {}      # running, by key
        self.failed_groups: set[str] = set()
        self.progress: dict[str, tuple[int, int]] = {}  # task key -> frames drawn, frames
        self.records: list[TaskRecord] = []      # one per beat rendered
        self.last_report = time.monotonic()

    # -- films ----------------------------------------------------------------------------------

    def add_film(self, plan: Plan) -> None:
        job = FilmJob(plan, len(self.jobs), film_dir(plan, self.q.name, self.build_dir), time.perf_counter())
        self.jobs.append(job)
        try:
            job.lock.enter_context(output_lock(job.folder))
            job.narration = narrate(plan, self.build_dir)
        except FilmError as error:
            self.fail(job, str(error))
            return
        for beat in job.timed.beats:
            self.need(job, beat.id, first_look=True)
        waiting = sorted(job.waiting, key=[beat.id for beat in job.timed.beats].index)
        self.say(f"  {job.name}: narrated; {counted(len(job.made.reused), 'beat')} cached"
                 + (f", {len(waiting)} to render ({', '.join(waiting)})" if waiting else ""))
        self.finish_if_ready(job)

    def need(self, job: FilmJob, beat_id: str, first_look: bool) -> None:
        """The film needs this beat: from the cache, from a task already asked for, or a new task."""
        hit = self.cache.lookup(job.timed, beat_id, self.q)
        if hit:
            job.made.videos[beat_id] = hit
            job.made.reused.append(beat_id)
            if not first_look:  # another film's render, waited for
                job.shared.append(beat_id)
            return
        key = self.cache.key(job.timed, beat_id, self.q)
        values_known = self.cache.known_reads(job.timed, beat_id, self.q) is not None
        if key in self.failed_groups:  # its first film's render failed: this film tries its own
            key = f"{key}-for-{job.name}"
        task = self.tasks.get(key) or self.submit(key, job, beat_id, values_known)
        task.waiting.append(job)
        job.waiting.add(beat_id)

    def submit(self, key: str, job: FilmJob, beat_id: str, values_known: bool) -> BeatTask:
        future = self.client.submit(render_beat_task, job.timed.slice_for(beat_id).to_json(), beat_id, self.q.name,
                                    installation(), key=key, retries=1, priority=self.total_films - job.index)
        task = BeatTask(key, beat_id, job, future, time.time(), values_known)
        self.tasks[key] = task
        return task

    def finish_if_ready(self, job: FilmJob) -> None:
        if job.failure or job.narration is None or job.waiting or job.result:
            return
        try:
            job.result = finish_film(job.narration, job.made, self.q, job.folder, self.build_dir, job.started,
                                     say=lambda line: None)
            if self.on_film:
                self.on_film(job.result)
        except FilmError as error:
            self.fail(job, str(error))
            return
        finally:
            job.lock.close()
        made = sum(1 for other in self.jobs if other.result)
        self.say(f"  film {made}/{self.total_films}: {job.result.film} ({counted(len(job.made.rendered), 'beat')} rendered, "
                 f"{len(job.shared)} shared, {len(job.made.reused) - len(job.shared)} from the cache)")

    def fail(self, job: FilmJob, why: str) -> None:
        job.failure = why
        job.lock.close()
        self.say(f"  FAILED {job.name}: {why}")
        for task in list(self.tasks.values()):  # beats only failed films still wanted
            if all(other.failure for other in task.waiting):
                task.future.cancel()
                del self.tasks[task.key]

    # -- tasks ----------------------------------------------------------------------------------

    def collect(self, timeout: float) -> None:
        """Take in every finished task, waiting up to `timeout` seconds for one."""
        from distributed import wait

        if timeout and self.tasks and not any(task.future.done() for task in self.tasks.values()):
            try:
                wait([task.future for task in self.tasks.values()], timeout=timeout, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
        for task in [task for task in self.tasks.values() if task.future.done()]:
            if self.tasks.pop(task.key, None) is task:  # not cancelled meanwhile with a failed film
                self.completed(task)
        self.report()

    def completed(self, task: BeatTask) -> None:
        try:
            rendered: RenderedBeat = task.future.result()
        except Exception as error:  # noqa: BLE001 - a scene's own bug, a killed worker, a version mismatch
            self.task_failed(task, error)
            return
        finally:
            self.progress.pop(task.key, None)
        received = time.time()
        task.future.release()
        self.records.append(TaskRecord(task.key, rendered.worker, rendered.seconds,
                                       rendered.finished - rendered.started, received - task.submitted))
        for problem in rendered.safe_area:
            log.warning("%s: outside the safe area: %s", task.beat_id, problem)
        for problem in rendered.layout:
            log.warning("%s: layout: %s", task.beat_id, problem)
        video = self.cache.store(task.job.timed, task.beat_id, self.q, rendered.video, list(rendered.values_read))
        for job in task.waiting:
            job.waiting.discard(task.beat_id)
            if job.failure:
                continue
            if job is task.job:
                job.made.videos[task.beat_id] = video
                job.made.rendered[task.beat_id] = beats.BeatRender(
                    task.beat_id, video, rendered.frames, rendered.safe_area, rendered.values_read, rendered.seconds,
                    rendered.layout)
            else:  # the same pictures if its values match: else it renders its own
                self.need(job, task.beat_id, first_look=False)
        others = [job for job in task.waiting if job is not task.job]
        self.say(f"  rendered {task.beat_id} for {task.job.name}" + (f" (+{len(others)} waiting on it)" if others else "")
                 + f" in {rendered.seconds:.1f} s on {rendered.worker}  [{self.status()}]")
        for job in task.waiting:
            self.finish_if_ready(job)

    def task_failed(self, task: BeatTask, error: Exception) -> None:
        why = f"beat {task.beat_id!r} failed twice: {type(error).__name__}: {error}"
        for job in task.waiting:
            job.waiting.discard(task.beat_id)
            if job.failure:
                continue
            if job is task.job or task.values_known:
                self.fail(job, why)  # the same pictures would fail the same way
            else:  # the failed render was another film's: this one's values may differ
                self.failed_groups.add(task.key)
                self.need(job, task.beat_id, first_look=False)

    def cancel(self) -> None:
        for task in self.tasks.values():
            task.future.cancel()
        self.tasks.clear()
        for job in self.jobs:
            job.lock.close()

    # -- progress ---------------------------------------------------------------------------------

    def on_progress(self, event) -> None:
        """A worker's progress event (from the scheduler's event loop thread)."""
        _, message = event
        self.progress[message["key"]] = (message["frames"], message["total"])

    @property
    def requested(self) -> int:
        return sum(len(job.plan.beats) for job in self.jobs)

    def status(self) -> str:
        requested = self.requested
        ready = sum(len(job.made.videos) for job in self.jobs)
        made = sum(1 for job in self.jobs if job.result)
        failed = sum(1 for job in self.jobs if job.failure)
        return (f"beats {ready}/{requested} · films {made}/{self.total_films}"
                + (f", {failed} failed" if failed else ""))

    def report(self) -> None:
        if time.monotonic() - self.last_report < REPORT_EVERY:
            return
        self.last_report = time.monotonic()
        running = [f"{task.beat_id} for {task.job.name} {100 * frames // max(total, 1)}%"
                   for key, (frames, total) in list(self.progress.items())
                   if (task := self.tasks.get(key))]
        queued = len(self.tasks) - len(running)
        if self.tasks:
            self.say(f"  [{self.status()}] rendering: " + (", ".join(running) or "starting")
                     + (f"; {queued} waiting" if queued > 0 else ""))

    def result(self, started: float, workers: str) -> FilmsResult:
        rows = [FilmRow(job.name, job.result.film if job.result else None, job.failure, len(job.made.rendered),
                        len(job.shared), len(job.made.reused) - len(job.shared)) for job in self.jobs]
        return FilmsResult([job.result for job in self.jobs if job.result], rows,
                           {job.name: job.failure for job in self.jobs if job.failure},
                           self.requested, time.perf_counter() - started, workers, list(self.records))


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
        check_workers(client, where)
        say(f"films: {len(unique)} at {q.name} ({q.width}x{q.height}, {q.fps} fps) on {where}")
        matrix = FilmMatrix(client, q, Path(build_dir), say, on_film, len(unique))
        client.subscribe_topic(PROGRESS_TOPIC, matrix.on_progress)
        try:
            for plan in unique:
                matrix.add_film(plan)
                matrix.collect(timeout=0)
            while matrix.tasks:
                matrix.collect(timeout=1.0)
        except BaseException:
            # Ctrl-C (or a broken connection): nothing half-made is kept; every film and cached
            # beat finished so far was written atomically and stays.
            matrix.cancel()
            made = sum(1 for job in matrix.jobs if job.result)
            say(f"films: stopped; {made} of {len(unique)} films finished and are intact")
            raise
        finally:
            client.unsubscribe_topic(PROGRESS_TOPIC)
    for job in matrix.jobs:  # a film left waiting (its beat's task cancelled with another film's) did not finish
        if not job.result and not job.failure:
            matrix.fail(job, "its beats did not all render")
    return matrix.result(started, where)


@contextmanager
def dask_client(scheduler: str | None, workers: int | None) -> Iterator[tuple[object, str]]:
    """A client of the cluster at `scheduler`, or of a local cluster of `workers` processes
    (one thread each: Manim's settings belong to a process) that ends with the run."""
    import dask
    from distributed import Client, LocalCluster

    # Dask's own news (workers joining, comms closing) is not the user's; what matters is reported here.
    logging.getLogger("distributed").setLevel(logging.ERROR)
    if scheduler:
        if not SCHEDULER_ADDRESS.fullmatch(scheduler):
            raise FilmError(f"SCHEDULER={scheduler}: give the Dask scheduler's address as tcp://HOST:PORT "
                            f"(dask scheduler prints it; its port is 8786 unless told otherwise)")
        probe_scheduler(scheduler)
        try:
            client = Client(scheduler, timeout=f"{CONNECT_SECONDS}s")
        except (OSError, TimeoutError) as error:
            raise FilmError(f"SCHEDULER={scheduler}: no Dask scheduler answered within {CONNECT_SECONDS} s "
                            f"({type(error).__name__}); start one there with `dask scheduler`, or leave SCHEDULER "
                            f"unset to render on a cluster on this machine") from None
        with client:
            try:
                client.wait_for_workers(1, timeout=WORKERS_SECONDS)
            except TimeoutError:
                raise FilmError(f"the Dask scheduler at {scheduler} has had no workers for {WORKERS_SECONDS} s; "
                                f"start one on each machine with `dask worker {scheduler} --nthreads 1`") from None
            count = len(client.scheduler_info()["workers"])
            yield client, f"the Dask cluster at {scheduler} ({count} workers)"
        return
    count = workers or os.cpu_count() or 1
    if not 1 <= count <= 256:
        raise FilmError(f"JOBS={count}: give from 1 to 256 local workers")
    # The semaphores of workers stopped by Ctrl-C are cleaned up by multiprocessing's resource tracker, which
    # then warns of each as a leak; it is started with this interpreter's -W options, so it is told here.
    if "ignore::UserWarning:multiprocessing.resource_tracker" not in sys.warnoptions:
        sys.warnoptions.append("ignore::UserWarning:multiprocessing.resource_tracker")
    with workers_ignoring_ctrl_c(), dask.config.set(RENDER_WORKER_CONFIG):  # only while they start
        cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR)
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

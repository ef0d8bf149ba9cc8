"""The scheduler: films made from their beats on a runner. `make film` schedules one film on this machine's
processes, `make films` many on a Dask cluster.

For each film in turn the scheduler locks its folder, makes its narration (cheap, and cached by words and
voice), and turns each beat the beat cache lacks into a task keyed by the beat cache's own key, so films
that need the same pictures share one task:

    <beat>-<base>-<values>  the scene's reads are known (an earlier render recorded them): the full cache
                            key, which every film showing the same values joins
    <beat>-<base>           not known yet: the first film that needs it renders it; when its reads come
                            back, every film waiting on it looks the cache up with its own values and
                            renders its own only if they differ

A task is the beat's parts (beats.part_bounds), given to the runner: every first part of a film's beats
before any second part, so a second part starts from what its first part typeset. When a beat's parts
are back they are joined without re-encoding and stored; a film whose beats are all there is joined
with its narration (finish.finish_film). A part that fails fails each film that needs it; the others go on.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from render import media
from render.errors import FilmError
from render.files import BUILD_DIR, cache_dir
from render.formatting import counted
from render.plan.types import Plan
from render.video import beats
from render.video.cache import BeatCache
from render.video.cues import check_cues
from render.video.finish import BeatVideos, FilmResult, film_dir, finish_film, narrate, output_lock
from render.video.runner import (Drawn, LocalRunner, Part, Runner, beat_parts, ctrl_c_noted, failure,
                                 remove_stale_scratch)
from render.voice.narration import NarrationResult

log = logging.getLogger("film")

REPORT_EVERY = 10.0  # seconds between progress lines while beats render


@dataclass
class FilmJob:
    """One film of the schedule, from its narration to its file."""

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
    parts: list[Part]
    values_known: bool           # keyed by the full cache key (else by the scene's code and beat alone)
    waiting: list[FilmJob] = field(default_factory=list)  # every film that needs it, the first included
    drawn: dict[int, Drawn] = field(default_factory=dict)  # its parts back so far, by number

    @property
    def frames(self) -> int:
        """In the beat: its last part ends there."""
        return self.parts[-1].bounds[1]


@dataclass(frozen=True)
class TaskRecord:
    """One part's times (seconds), for the runner's overhead."""

    key: str
    worker: str
    render: float     # Manim drawing and encoding the part
    on_worker: float  # the task where it ran: the version check, the plan slice and the render
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
    rendered: int                # distinct beats rendered
    seconds: float
    workers: str                 # where they rendered
    tasks: list[TaskRecord]      # one per part drawn

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
        failed = f" ({len(self.failed)} failed)" if self.failed else ""
        lines.append(f"films made: {len(self.films)} of {len(self.rows)}" + failed
                     + f"; beats: {self.requested} needed, {self.rendered} rendered, {self.shared} shared between "
                     f"films, {self.from_cache} from the cache"
                     + (f" (each render served {self.reuse_ratio:.2f} beats)" if self.rendered else "")
                     + f"; {self.seconds:.1f} s on {self.workers}")
        return "\n".join(lines)


class FilmScheduler:
    """The films, their beats' tasks on the runner, the cache. `one_film`: `make film`'s own words (no film
    names, and a failure is the run's, raised as its one message)."""

    def __init__(self, runner: Runner, q: beats.Quality, build_dir: Path, scratch: Path, say: Callable[[str], None],
                 on_film: Callable[[FilmResult], None] | None, films: int, one_film: bool):
        self.runner, self.q, self.build_dir, self.scratch, self.say = runner, q, build_dir, scratch, say
        self.on_film, self.total_films, self.one_film = on_film, films, one_film
        self.cache = BeatCache(cache_dir(build_dir))
        self.jobs: list[FilmJob] = []
        self.tasks: dict[str, BeatTask] = {}      # running, by key
        self.of_part: dict[str, BeatTask] = {}    # running, by part key
        self.to_submit: list[BeatTask] = []
        self.submitted: set[str] = set()          # part keys given to the runner
        self.failed_groups: set[str] = set()
        self.records: list[TaskRecord] = []       # one per part drawn
        self.beats_rendered = 0
        self.stopping = False
        self.last_report = time.monotonic()

    # -- films ----------------------------------------------------------------------------------

    def add_film(self, plan: Plan) -> None:
        """The film's narration, each beat looked up in the cache (or its parts given to the runner) as soon as
        it is voiced, so the first beats render while the rest are voiced."""
        job = FilmJob(plan, len(self.jobs), film_dir(plan, self.q.name, self.build_dir), time.perf_counter())
        self.jobs.append(job)
        timings: dict = {}

        def voiced(beat_id: str, timing) -> None:
            timings[beat_id] = timing
            # The beats voiced so far timed: a beat's cache key and its slice need only its own timing.
            so_far = replace(plan, beats=tuple(replace(beat, timing=timings.get(beat.id)) for beat in plan.beats))
            self.need(job, beat_id, first_look=True, timed=so_far)
            self.submit_queued(first_parts_only=True)  # a second part waits: it starts from what its first typesets

        try:
            job.lock.enter_context(output_lock(job.folder))
            job.narration = narrate(plan, self.build_dir, on_beat=voiced)
        except FilmError as error:
            self.fail(job, str(error))
            return
        waiting = sorted(job.waiting, key=[beat.id for beat in job.timed.beats].index)
        self.say(self.beats_line(job, waiting))
        self.submit_queued()
        job.narration.levelling.start()  # after the parts are submitted: the render workers are forked by then
        self.finish_if_ready(job)

    def beats_line(self, job: FilmJob, waiting: list[str]) -> str:
        reused = job.made.reused
        cached = f"{len(reused)} cached" + (f" ({', '.join(reused)})" if reused else "")
        if self.one_film:
            parts = sum(len(task.parts) for task in self.tasks.values() if job in task.waiting)
            size = f"{self.q.width}x{self.q.height}, {self.q.fps} fps"
            return (f"beats: {cached}" + (f"; rendering {len(waiting)} at {self.q.name} ({size}) on "
                                          f"{self.runner.where(parts)}: {', '.join(waiting)}"
                                          if waiting else "; nothing to render"))
        return f"  {job.name}: narrated; beats: {cached}" + (f", {len(waiting)} to render ({', '.join(waiting)})"
                                                              if waiting else "")

    def need(self, job: FilmJob, beat_id: str, first_look: bool, timed: Plan | None = None) -> None:
        """The film needs this beat: from the cache, from a task already asked for, or a new task. `timed`: a plan
        with this beat timed (the film's timed plan, unless given)."""
        timed = timed or job.timed
        hit = self.cache.lookup(timed, beat_id, self.q)
        if hit:
            job.made.videos[beat_id] = hit
            job.made.reused.append(beat_id)
            if not first_look:  # another film's render, waited for
                job.shared.append(beat_id)
            return
        key = self.cache.key(timed, beat_id, self.q)
        values_known = self.cache.known_reads(timed, beat_id, self.q) is not None
        if key in self.failed_groups:  # its first film's render failed: this film tries its own
            key = f"{key}-for-{job.name}"
        task = self.tasks.get(key) or self.new_task(key, job, timed, beat_id, values_known)
        task.waiting.append(job)
        job.waiting.add(beat_id)

    def new_task(self, key: str, job: FilmJob, timed: Plan, beat_id: str, values_known: bool) -> BeatTask:
        parts = beat_parts(key, timed, beat_id, self.q, priority=(self.total_films - job.index) * beats.PARTS)
        task = BeatTask(key, beat_id, job, parts, values_known)
        self.tasks[key] = task
        self.of_part.update({part.key: task for part in parts})
        self.to_submit.append(task)
        return task

    def submit_queued(self, first_parts_only: bool = False) -> None:
        """The parts of the tasks asked for since the last call, every first part before any second part (or, with
        `first_parts_only`, the first parts now and the rest at a later call)."""
        if self.stopping:
            return
        parts = sorted((part for task in self.to_submit if self.tasks.get(task.key) is task for part in task.parts
                        if part.key not in self.submitted and (part.index == 0 or not first_parts_only)),
                       key=lambda part: part.index)
        for part in parts:
            self.runner.submit(part)
            self.submitted.add(part.key)
        if not first_parts_only:
            self.to_submit = []

    def finish_if_ready(self, job: FilmJob) -> None:
        if job.failure or job.narration is None or job.waiting or job.result or self.stopping:
            return
        try:
            job.result = finish_film(job.narration, job.made, self.q, job.folder, self.build_dir, job.started,
                                     say=self.say if self.one_film else lambda line: None)
            if self.on_film:
                self.on_film(job.result)
        except FilmError as error:
            self.fail(job, str(error))
            return
        finally:
            job.lock.close()
        if not self.one_film:
            made = sum(1 for other in self.jobs if other.result)
            self.say(f"  film {made}/{self.total_films}: {job.result.film} ({counted(len(job.made.rendered), 'beat')} "
                     f"rendered, {len(job.shared)} shared, {len(job.made.reused) - len(job.shared)} from the cache)")

    def fail(self, job: FilmJob, why: str) -> None:
        job.failure = why
        job.lock.close()
        for task in list(self.tasks.values()):  # beats only failed films still wanted
            if all(other.failure for other in task.waiting):
                self.drop(task)
        if self.one_film:
            raise FilmError(why)
        self.say(f"  FAILED {job.name}: {why}")

    # -- tasks ----------------------------------------------------------------------------------

    def drop(self, task: BeatTask) -> None:
        for part in task.parts:
            self.runner.cancel(part.key)
            self.of_part.pop(part.key, None)
        self.tasks.pop(task.key, None)

    def collect(self, timeout: float) -> None:
        """Take in every finished part, waiting up to `timeout` seconds for one."""
        for drawn in self.runner.collect(timeout):
            self.part_back(drawn)
        self.submit_queued()
        self.report()

    def part_back(self, drawn: Drawn) -> None:
        task = self.of_part.pop(drawn.part.key, None)
        if task is None or self.tasks.get(task.key) is not task:  # dropped meanwhile, with a failed film
            return
        if drawn.error is not None:
            self.drop(task)
            self.task_failed(task, drawn.error)
            return
        render = drawn.render
        self.records.append(TaskRecord(drawn.part.key, drawn.worker, render.seconds, drawn.on_worker, drawn.round_trip))
        task.drawn[drawn.part.index] = drawn
        if len(task.drawn) == len(task.parts):
            self.tasks.pop(task.key, None)
            self.completed(task)

    def completed(self, task: BeatTask) -> None:
        """Every part of the beat is back: joined, stored, and given to each film waiting on it."""
        render = beats.join_parts(task.beat_id, [task.drawn[index].render for index in range(len(task.parts))],
                                  self.scratch / f"{task.key}.mp4")
        for problem in render.safe_area:
            log.warning("%s: outside the safe area: %s", task.beat_id, problem)
        for problem in render.layout:
            log.warning("%s: layout: %s", task.beat_id, problem)
        video = self.cache.store(task.job.timed, task.beat_id, self.q, render.video, list(render.values_read),
                                 dict(render.settled))
        render.video.unlink(missing_ok=True)
        self.beats_rendered += 1
        for job in task.waiting:
            job.waiting.discard(task.beat_id)
            if job.failure:
                continue
            if job is task.job:
                job.made.videos[task.beat_id] = video
                job.made.rendered[task.beat_id] = render
            else:  # the same pictures if its values match: else it renders its own
                self.need(job, task.beat_id, first_look=False)
        others = [job for job in task.waiting if job is not task.job]
        workers = sorted({drawn.worker for drawn in task.drawn.values()})
        self.say(f"  rendered {task.beat_id}" + ("" if self.one_film else f" for {task.job.name}")
                 + (f" (+{len(others)} waiting on it)" if others else "")
                 + f" in {render.seconds:.1f} s" + ("" if self.one_film else f" on {', '.join(workers)}")
                 + f"  [{self.status()}]")
        for job in task.waiting:
            self.finish_if_ready(job)

    def task_failed(self, task: BeatTask, error: BaseException) -> None:
        why = failure(task.beat_id, error, self.runner.retries)  # a scene's own bug, a killed worker, a mismatch
        for job in task.waiting:
            job.waiting.discard(task.beat_id)
            if job.failure:
                continue
            if job is task.job or task.values_known:
                self.fail(job, why)  # the same pictures would fail the same way
            else:  # the failed render was another film's: this one's values may differ
                self.failed_groups.add(task.key)
                self.need(job, task.beat_id, first_look=False)

    def interrupt(self) -> None:
        """Ctrl-C: start nothing more; keep every beat whose parts are all back within a moment."""
        self.stopping = True
        for drawn in self.runner.stop():
            self.part_back(drawn)
        rendered = [beat_id for job in self.jobs for beat_id in job.made.rendered]
        self.say(f"interrupted: {counted(len(rendered), 'beat')} rendered in this run "
                 f"{'is' if len(rendered) == 1 else 'are'} kept in the cache"
                 + (f" ({', '.join(rendered)}); the next run reuses {'it' if len(rendered) == 1 else 'them'}"
                    if rendered else ""))

    def cancel(self) -> None:
        for task in list(self.tasks.values()):
            self.drop(task)
        for job in self.jobs:
            job.lock.close()

    # -- progress ---------------------------------------------------------------------------------

    @property
    def requested(self) -> int:
        return sum(len(job.plan.beats) for job in self.jobs)

    def status(self) -> str:
        ready = sum(len(job.made.videos) for job in self.jobs)
        if self.one_film:
            return f"beats {ready}/{self.requested}"
        made = sum(1 for job in self.jobs if job.result)
        failed = sum(1 for job in self.jobs if job.failure)
        return (f"beats {ready}/{self.requested} · films {made}/{self.total_films}"
                + (f", {failed} failed" if failed else ""))

    def report(self) -> None:
        if time.monotonic() - self.last_report < REPORT_EVERY:
            return
        self.last_report = time.monotonic()
        drawn = self.runner.progress()
        running, queued = [], 0
        for task in self.tasks.values():
            frames = sum(drawn.get(part.key, 0) for part in task.parts if part.index not in task.drawn)
            frames += sum(part.bounds[1] - part.bounds[0] for part in task.parts if part.index in task.drawn)
            if not frames and not any(part.key in drawn for part in task.parts):
                queued += 1
                continue
            running.append(f"{task.beat_id}" + ("" if self.one_film else f" for {task.job.name}")
                           + f" {min(100, 100 * frames // max(task.frames, 1))}%")
        if self.tasks:
            self.say(f"  [{self.status()}] rendering: " + (", ".join(running) or "starting")
                     + (f"; {queued} waiting" if queued > 0 else ""))

    def result(self, started: float, workers: str) -> FilmsResult:
        rows = [FilmRow(job.name, job.result.film if job.result else None, job.failure, len(job.made.rendered),
                        len(job.shared), len(job.made.reused) - len(job.shared)) for job in self.jobs]
        return FilmsResult([job.result for job in self.jobs if job.result], rows,
                           {job.name: job.failure for job in self.jobs if job.failure},
                           self.requested, self.beats_rendered, time.perf_counter() - started, workers,
                           list(self.records))


def schedule_films(plans: list[Plan], q: beats.Quality, build_dir: Path, runner: Runner, say: Callable[[str], None],
               on_film: Callable[[FilmResult], None] | None = None, one_film: bool = False,
               started: float | None = None) -> FilmsResult:
    """Make every plan's film, its beats' parts drawn by `runner` (`started`: when the run began, if before)."""
    started = time.perf_counter() if started is None else started
    beats_folder = BeatCache(cache_dir(build_dir)).folder
    remove_stale_scratch(beats_folder)
    scratch = beats_folder / f".rendering-{os.getpid()}"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        with runner.open(scratch):
            scheduler = FilmScheduler(runner, q, Path(build_dir), scratch, say, on_film, len(plans), one_film)
            try:
                for plan in plans:
                    scheduler.add_film(plan)
                    scheduler.collect(timeout=0)
                with ctrl_c_noted() as interrupted:
                    try:
                        while scheduler.tasks and not interrupted.is_set():
                            scheduler.collect(timeout=0.2)
                    except FilmError:
                        # A part whose tools the same Ctrl-C reached failed as it was stopped: the run was
                        # interrupted, not broken (its finished beats are kept all the same).
                        settle = time.monotonic() + 0.5  # (the signal reaches this process a moment later)
                        while not interrupted.is_set() and time.monotonic() < settle:
                            time.sleep(0.02)
                        if not interrupted.is_set():
                            raise
                    if interrupted.is_set():
                        scheduler.interrupt()
                        raise KeyboardInterrupt
            except BaseException:
                # Ctrl-C, a failed film of `make film`, a broken connection: nothing half-made is kept; every
                # film and cached beat finished so far was written atomically and stays.
                scheduler.cancel()
                if not one_film:
                    made = sum(1 for job in scheduler.jobs if job.result)
                    say(f"films: stopped; {made} of {len(plans)} films finished and are intact")
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for job in scheduler.jobs:  # a film left waiting (its beat's task dropped with another film's) did not finish
        if not job.result and not job.failure:
            scheduler.fail(job, "its beats did not all render")
    return scheduler.result(started, runner.where(sys.maxsize))


def make_film(plan: Plan, quality_name: str = "high", build_dir: Path = BUILD_DIR, jobs: int | None = None,
              say: Callable[[str], None] = print) -> FilmResult:
    """`make film`: one film scheduled, its beats' parts drawn by `jobs` processes here (one per core)."""
    q = beats.quality(quality_name)
    media.require_tools()
    check_cues(plan)
    runner = LocalRunner(jobs or os.cpu_count() or 1, cache_dir(build_dir))
    return schedule_films([plan], q, Path(build_dir), runner, say, one_film=True).films[0]

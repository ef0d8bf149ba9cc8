"""Where the parts of beats are drawn: one small interface, with processes on this machine or a Dask cluster.

A runner is given parts of beats (a beat's slice of the timed plan and the frames to draw), draws them
somewhere and hands each back as a render whose video lies in this machine's scratch folder; it says how
far each running part has got, forgets parts nobody wants any more, and on Ctrl-C starts nothing more and
hands back what finishes within a moment. What to draw, the joins and the beat cache are the scheduler's
(scheduler.py), which never knows where a part was drawn. `LocalRunner` is here; the Dask one is in
render/cluster/films.py.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.managers import SyncManager
from pathlib import Path
from typing import Protocol

from render import media, logs
from render.errors import FilmError
from render.formatting import counted
from render.plan.types import Plan
from render.video import beats

PROGRESS_EVERY = 1.0       # seconds between a part's progress reports
STOP_GRACE_SECONDS = 0.8   # after Ctrl-C, how long parts about to finish may take to do so (and be kept)
NEARLY_DONE = 0.9          # a part with this share of its frames drawn is about to finish: worth the grace


@dataclass(frozen=True)
class Part:
    """One part of one beat, as a runner is given it."""

    key: str                  # the part's name: its task's key and the part's number
    task: str                 # its task's key: the beat's parts share it
    beat_id: str
    index: int                # which part of the beat
    bounds: tuple[int, int]   # its frames: first .. end - 1
    plan_slice: str           # the beat's slice of the timed plan (JSON): all a render reads
    quality: str
    priority: int = 0         # higher first, where the runner can choose


def nearly_done(part: Part, drawn_frames: int) -> bool:
    """Whether a running part is worth waiting for after Ctrl-C: most of its frames are drawn. The others are stopped
    at once, so Ctrl-C does not wait the grace for parts that could never use it (it took 2.6-3.0 s on a busy
    machine)."""
    frames = part.bounds[1] - part.bounds[0]
    return drawn_frames >= NEARLY_DONE * frames


@dataclass(frozen=True)
class Drawn:
    """A part handed back: its render (the video in the runner's scratch folder), or why there is none."""

    part: Part
    render: beats.BeatRender | None
    error: BaseException | None
    worker: str           # where it was drawn
    on_worker: float      # seconds the task took there: reading the plan, drawing, encoding
    round_trip: float     # seconds from submitted to handed back, queueing included


def beat_parts(key: str, plan: Plan, beat_id: str, q: beats.Quality, priority: int = 0) -> list[Part]:
    """A beat's parts (beats.part_bounds), each keyed `<key>-part<n>`; a first part before a second (higher
    priority), all above `priority`."""
    plan_slice = plan.slice_for(beat_id).to_json()
    return [Part(f"{key}-part{index}", key, beat_id, index, bounds, plan_slice, q.name, priority + beats.PARTS - index)
            for index, bounds in enumerate(beats.part_bounds(beats.beat_frames(plan, beat_id, q)))]


def failure(beat_id: str, error: BaseException, retries: int) -> str:
    """Why a beat did not render, in one line: a FilmError's own words, else the beat and the error."""
    if isinstance(error, FilmError):
        return str(error)
    return f"beat {beat_id!r} failed{' twice' if retries else ''}: {type(error).__name__}: {error}"


class Runner(Protocol):
    retries: int  # how many times a part that raised is tried again before it is handed back failed

    def open(self, scratch: Path): ...  # a context manager: the runner's life, its videos into `scratch`
    def where(self, parts: int) -> str: ...  # where `parts` parts would be drawn, for the user
    def submit(self, part: Part) -> None: ...
    def collect(self, timeout: float) -> list[Drawn]: ...  # the parts finished, waiting up to `timeout` for one
    def progress(self) -> dict[str, int]: ...  # part key -> frames drawn so far, for running parts
    def cancel(self, key: str) -> None: ...  # nobody wants it: not started, it never will be
    def stop(self) -> list[Drawn]: ...  # Ctrl-C: the parts that finished within STOP_GRACE_SECONDS


def draw_part(part: Part, out_path: str, cache_folder: str | None, progress_queue=None) -> beats.BeatRender:
    """Draw one part from its slice of the plan into `out_path` (in a worker of either runner)."""
    plan = Plan.from_json(part.plan_slice, f"beat {part.beat_id!r}'s slice of the timed plan")
    first, end = part.bounds
    last_report = 0.0

    def report(frames: int, _total: int) -> None:
        nonlocal last_report
        if progress_queue is not None and (time.monotonic() - last_report >= PROGRESS_EVERY or frames >= end):
            last_report = time.monotonic()
            progress_queue.put((part.key, max(0, min(frames, end) - first)))

    return beats.render_video(plan, part.beat_id, beats.quality(part.quality), Path(out_path), progress=report,
                              cache=Path(cache_folder) if cache_folder else None, part=part.bounds)


def draw_part_here(part: Part, out_path: str, cache_folder: str | None, progress_queue) -> tuple[beats.BeatRender,
                                                                                                 float, str]:
    """In a local worker process: the part, how long the task took, and which process drew it."""
    started = time.perf_counter()
    logs.configure(logging.WARNING)
    render = draw_part(part, out_path, cache_folder, progress_queue)
    return render, time.perf_counter() - started, f"process {os.getpid()}"


def start_worker(parent: int) -> None:
    """In a render worker or the progress manager: it dies with the run's main process (even on SIGKILL),
    and it ignores Ctrl-C, which the main process handles for the whole run (it stops the workers itself,
    keeping every beat they finished)."""
    media.die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logs.configure(logging.WARNING)  # forked with the command's INFO: Manim's import notes are not news
    if os.getppid() != parent:  # the main process died before we could ask
        os._exit(1)


class LocalRunner:
    """Parts drawn by a pool of processes on this machine, each keeping what it typeset in the build's cache for
    the next. A part starts when a process is free, the most wanted first (see `preference`), so the run ends on
    short parts and the cores finish together."""

    retries = 0

    def __init__(self, jobs: int, cache_folder: Path | None):
        self.jobs = jobs
        self.cache_folder = cache_folder
        self.scratch: Path | None = None
        self.pool: ProcessPoolExecutor | None = None
        self.manager: SyncManager | None = None
        self.queue = None
        self.futures: dict[Future, tuple[Part, float]] = {}  # started -> (its part, when submitted)
        self.waiting: dict[str, tuple[Part, float]] = {}    # given, not started: key -> (part, when submitted)
        self.took: dict[str, tuple[float, int]] = {}         # part key -> (seconds it took to draw, its frames)
        self.drawn: dict[str, int] = {}

    def where(self, parts: int) -> str:
        return counted(min(self.jobs, max(parts, 1)), "process", "processes")

    @contextmanager
    def open(self, scratch: Path):
        self.scratch = scratch
        try:
            yield self
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True, cancel_futures=True)
            if self.manager is not None:
                self.manager.shutdown()

    def submit(self, part: Part) -> None:
        self.waiting[part.key] = (part, time.perf_counter())
        self.start_parts()

    def start_parts(self) -> None:
        """Start the most wanted waiting parts while a process is free."""
        while self.waiting and len(self.futures) < self.jobs:
            part, submitted = self.waiting.pop(max(self.waiting.values(),
                                                   key=lambda entry: self.preference(entry[0]))[0].key)
            if self.pool is None:  # started with the first part: a run with nothing to draw starts no process
                self.manager = SyncManager()
                self.manager.start(start_worker, (os.getpid(),))
                self.queue = self.manager.Queue()
                self.pool = ProcessPoolExecutor(max_workers=self.jobs, initializer=start_worker,
                                                initargs=(os.getpid(),))
            future = self.pool.submit(draw_part_here, part, str(self.scratch / f"{part.key}.mp4"),
                                      str(self.cache_folder) if self.cache_folder else None, self.queue)
            self.futures[future] = (part, submitted)

    def preference(self, part: Part) -> tuple:
        """Which waiting part starts first (the greatest): the higher priority (an earlier film, a beat's first part
        before its second); then one whose beat's earlier parts are drawn (it starts from what they typeset); then
        the longest, guessed from those parts (seconds a frame) or, before any, from its frames alone. So the
        parts the run ends with are its shortest, and the cores end together."""
        earlier = [self.took.get(f"{part.task}-part{index}") for index in range(part.index)]
        frames = part.bounds[1] - part.bounds[0]
        if earlier and all(earlier):
            seconds_a_frame = sum(seconds for seconds, _ in earlier) / max(sum(count for _, count in earlier), 1)
            return part.priority, 1, frames * seconds_a_frame
        return part.priority, 0, float(frames)

    def collect(self, timeout: float) -> list[Drawn]:
        done, _ = wait(self.futures, timeout=timeout, return_when=FIRST_COMPLETED) if self.futures else (set(), set())
        while self.queue is not None and not self.queue.empty():
            key, frames = self.queue.get()
            self.drawn[key] = frames
        handed = [self._handed_back(future) for future in done if not future.cancelled()]
        self.start_parts()
        return handed

    def _handed_back(self, future: Future) -> Drawn:
        part, submitted = self.futures.pop(future)
        self.drawn.pop(part.key, None)
        round_trip = time.perf_counter() - submitted
        try:
            render, on_worker, worker = future.result()
        except Exception as error:  # noqa: BLE001 - the scheduler names it
            return Drawn(part, None, error, "", 0.0, round_trip)
        self.took[part.key] = (on_worker, part.bounds[1] - part.bounds[0])
        return Drawn(part, render, None, worker, on_worker, round_trip)

    def progress(self) -> dict[str, int]:
        return dict(self.drawn)

    def cancel(self, key: str) -> None:
        self.waiting.pop(key, None)
        for future, (part, _) in list(self.futures.items()):
            if part.key == key and future.cancel():
                del self.futures[future]

    def stop(self) -> list[Drawn]:
        self.waiting.clear()
        for future in self.futures:
            future.cancel()  # not started: never will be
        while self.queue is not None and not self.queue.empty():
            key, frames = self.queue.get()
            self.drawn[key] = frames
        running = [future for future in self.futures if not future.cancelled()]
        worth = [future for future in running if future.done()
                 or nearly_done(self.futures[future][0], self.drawn.get(self.futures[future][0].key, 0))]
        done, _ = wait(worth, timeout=STOP_GRACE_SECONDS) if worth else (set(), set())
        kept = [drawn for drawn in (self._handed_back(future) for future in done) if drawn.error is None]
        if self.pool is not None:
            for process in list((getattr(self.pool, "_processes", None) or {}).values()):  # the executor's own workers
                process.kill()
        self.futures.clear()
        return kept


def draw_beat(plan: Plan, beat_id: str, q: beats.Quality, out_path: Path, cache_folder: Path | None,
              jobs: int | None = None) -> beats.BeatRender:
    """One beat's pictures as the film has them, its parts drawn at once by processes here (`make scene`), joined."""
    parts = beat_parts(beat_id, plan, beat_id, q)
    out_path = Path(out_path)
    scratch = out_path.parent / f".rendering-{os.getpid()}"
    scratch.mkdir(parents=True, exist_ok=True)
    runner = LocalRunner(min(jobs or os.cpu_count() or 1, len(parts)), cache_folder)
    drawn: dict[int, Drawn] = {}
    try:
        with runner.open(scratch):
            for part in parts:
                runner.submit(part)
            while len(drawn) < len(parts):
                for back in runner.collect(timeout=1.0):
                    if back.error is not None:
                        raise FilmError(failure(beat_id, back.error, runner.retries)) from back.error
                    drawn[back.part.index] = back
        return beats.join_parts(beat_id, [drawn[part.index].render for part in parts], out_path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def remove_stale_scratch(folder: Path) -> None:
    """Scratch folders of runs whose process is gone (killed mid-render)."""
    for scratch in folder.glob(".rendering-*"):
        pid = scratch.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(scratch, ignore_errors=True)


def process_alive(pid: int) -> bool:
    """Whether process `pid` still runs: a zombie (ended, not yet reaped by its parent) writes nothing more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # (Linux: its state, the field after its name)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@contextmanager
def ctrl_c_noted():
    """While parts are drawn, Ctrl-C (SIGINT) is noted rather than raised wherever the main process happens to be
    (in the middle of storing a finished beat, say), so the loop stops at a point of its choosing."""
    noted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: noted.set())
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, previous)


def render_asked(plan: Plan, kind: str, beat_id: str | None, at: float | None, quality_name: str, out_dir: Path,
                 cache: Path) -> Path:
    """`make scene`, `make still` and `make sheet` for a resolved plan: the narration (cached) or only its timings,
    then the beat's clip with its sound, one frame of it, or a contact sheet of every beat."""
    from render.voice.narration import Narrator, make_narration

    if kind != "sheet":
        plan.beat(beat_id)  # an unknown beat fails before anything is voiced
    if kind == "scene":
        narration = make_narration(plan, out_dir, cache)
        return render_beat(narration.plan, narration.track, beat_id, quality_name, out_dir / "beats", cache=cache).video
    narrator = Narrator(plan, cache)  # a picture needs the speech's timings, not the track; a still, its own beat's
    if kind == "still":
        return beats.render_still(narrator.timed_slice(beat_id), beat_id, at, quality_name, out_dir / "stills",
                                  cache=cache)
    return beats.make_sheet(narrator.narrate().plan, quality_name, out_dir / "sheet.png", cache=cache)


def render_beat(plan: Plan, narration: Path, beat_id: str, quality_name: str, out_dir: Path,
                cache: Path | None = None) -> beats.BeatRender:
    """`make scene`: the beat's video with its narration, at <out_dir>/<beat-id>.mp4."""
    beat = plan.beat(beat_id)
    q = beats.quality(quality_name)
    silent = Path(out_dir) / f".{beat_id}.{q.name}.video.mp4"
    try:
        # In its parts at once, as the film has it (a look at a beat should cost its share of the cores).
        render = draw_beat(plan, beat_id, q, silent, cache)
        out_path = beats.mux_beat_audio(silent, narration, beat.start, beat.duration,
                                        Path(out_dir) / f"{beat_id}.mp4")
    finally:
        silent.unlink(missing_ok=True)
    logging.getLogger("film").info("rendered %s at %s (%dx%d, %d fps) in %.1f s", beat_id, q.name, q.width,
                                   q.height, q.fps, render.seconds)
    return dataclasses.replace(render, video=out_path)  # with what the render found (layout, safe area)

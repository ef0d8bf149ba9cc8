"""`make film`: every beat rendered (cached, in parallel), joined, muxed with the narration, checked.

The beat cache (render/video/cache.py) decides which beats must be rendered; they render in
worker processes, each returning its BeatRender. The film is joined without re-encoding,
muxed with the narration, chapters and metadata, written atomically and checked with
ffprobe before it is declared done; a lock keeps two runs on one output folder apart.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.managers import SyncManager
from pathlib import Path

import ffmpeg

from render import media
from render.errors import FilmError
from render.formatting import counted
from render.files import BUILD_DIR, atomic_path, cache_dir, output_dir, record_made, up_to_date, write_atomic
from render.plan.types import Plan
from render.text import clean_text
from render.video import beats
from render.video.cache import CACHE_FORMAT, BeatCache
from render.video.cues import check_cues
from render.voice.narration import NarrationResult, make_narration

log = logging.getLogger("film")


@dataclass(frozen=True)
class FilmResult:
    plan: Plan          # the timed plan the film was made from
    film: Path
    srt: Path
    vtt: Path
    poster: Path
    duration: float
    seconds: float
    rendered: list[str]
    reused: list[str]
    beat_ratios: dict[str, float]  # each rendered beat's render time over its length (one process each)


@dataclass
class BeatVideos:
    """Every beat's video, and which were rendered now (with their render results) or reused."""

    videos: dict[str, Path] = field(default_factory=dict)
    rendered: dict[str, beats.BeatRender] = field(default_factory=dict)
    reused: list[str] = field(default_factory=list)


def render_beat_job(timed_plan_path: str, beat_id: str, quality_name: str, out_path: str,
                    progress_queue, cache_folder: str | None = None,
                    part: tuple[int, int] | None = None) -> beats.BeatRender:
    """In a worker process: render one beat's pictures (or a part of them) and return what the render found."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="film: %(message)s")
    plan = Plan.from_json(Path(timed_plan_path).read_text(), timed_plan_path)
    return beats.render_video(plan, beat_id, beats.quality(quality_name), Path(out_path),
                              progress=lambda frames, total: progress_queue.put((beat_id, part, frames, total)),
                              cache=Path(cache_folder) if cache_folder else None, part=part)


@contextmanager
def output_lock(folder: Path):
    """One run per output folder. A POSIX record lock belongs to the process that took it: the
    kernel releases it when that process dies, however it dies, and forked workers never hold
    it, so a lock left by a killed run is simply taken over."""
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / ".film.lock", "a+")
    try:
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno not in (errno.EACCES, errno.EAGAIN):
            raise
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise FilmError(f"another `make film` is writing {folder} ({holder}); wait for it to finish, "
                        f"or render another choice meanwhile") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    remove_stale_temporaries(folder)
    try:
        yield
    finally:
        fcntl.lockf(handle, fcntl.LOCK_UN)
        handle.close()


def start_worker(parent: int) -> None:
    """In a render worker or the progress manager: it dies with the run's main process (even on SIGKILL),
    and it ignores Ctrl-C, which the main process handles for the whole run (it stops the workers itself,
    keeping every beat they finished)."""
    media.die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger().setLevel(logging.WARNING)  # forked with the command's INFO: Manim's import notes are not news
    if os.getppid() != parent:  # the main process died before we could ask
        os._exit(1)


def remove_stale_scratch(folder: Path) -> None:
    """Scratch folders of runs whose process is gone (killed mid-render)."""
    for scratch in folder.glob(".rendering-*"):
        pid = scratch.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(scratch, ignore_errors=True)


# What only the run holding a folder's lock writes there (the film and its poster): a temporary one left
# behind was a killed run's, since the lock is ours now.
LOCKED_TEMPORARIES = (".film.*.tmp.mp4", ".poster.*.tmp.png")


def remove_stale_temporaries(folder: Path) -> None:
    for pattern in LOCKED_TEMPORARIES:
        for stale in folder.glob(pattern):
            stale.unlink(missing_ok=True)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def film_dir(plan: Plan, quality_name: str, build_dir: Path) -> Path:
    """The film's folder; a preview (any quality but high) goes to a preview/ folder beside it."""
    folder = output_dir(plan.choice.name, plan.choice.is_default, build_dir)
    return folder if quality_name == "high" else folder / "preview"


def make_film(plan: Plan, quality_name: str = "high", build_dir: Path = BUILD_DIR, jobs: int | None = None,
              say=print) -> FilmResult:
    started = time.perf_counter()
    q = beats.quality(quality_name)
    media.require_tools()
    check_cues(plan)
    folder = film_dir(plan, quality_name, build_dir)
    with output_lock(folder):
        narration = narrate(plan, build_dir)
        made = render_all_beats(narration.plan, narration.timed_plan_path, q, cache_dir(build_dir),
                                jobs or os.cpu_count() or 1, say)
        return finish_film(narration, made, q, folder, build_dir, started, say)


def narrate(plan: Plan, build_dir: Path) -> NarrationResult:
    """The film's narration (cached by its words and voice): the track, subtitles and timed plan."""
    return make_narration(plan, output_dir(plan.choice.name, plan.choice.is_default, build_dir), cache_dir(build_dir))


def finish_film(narration: NarrationResult, made: BeatVideos, q: beats.Quality, folder: Path, build_dir: Path,
                started: float, say=print) -> FilmResult:
    """Every beat's video is in the cache: join them with the narration, check the film, and write
    its subtitles, poster and what each beat showed beside it. The same for one film or many."""
    timed = narration.plan
    film = folder / "film.mp4"
    ordered = [made.videos[beat.id] for beat in timed.beats]
    key = film_key(timed, ordered, narration.track)
    key_file = folder / ".film.mp4.key"
    if up_to_date(film, key_file, key):
        say("film: up to date (every beat and the narration unchanged)")
    else:
        key_file.unlink(missing_ok=True)
        assemble(timed, ordered, narration.track, film)
        check_film(film, timed, q, ordered)
        record_made(film, key_file, key)
    for source in (narration.srt, narration.vtt):
        if source.parent != folder:
            write_atomic(folder / source.name, source.read_bytes())
    poster = make_poster(film, timed, folder / "poster.png")
    # What each beat's pictures show, for the review page's numbers (the scenes' recorded reads).
    cache = BeatCache(cache_dir(build_dir))
    shown = {beat.id: cache.values_read(timed, beat.id, q) for beat in timed.beats}
    write_atomic(folder / "shown.json", json.dumps(shown, indent=1) + "\n")
    return FilmResult(timed, film, folder / "film.srt", folder / "film.vtt", poster,
                      float(media.probe(film)["format"]["duration"]), time.perf_counter() - started,
                      list(made.rendered), made.reused,
                      {beat_id: round(render.seconds / timed.beat(beat_id).duration, 2)
                       for beat_id, render in made.rendered.items()})


def render_all_beats(plan: Plan, timed_plan_path: Path, q: beats.Quality, cache_folder: Path, jobs: int,
                     say) -> BeatVideos:
    cache = BeatCache(cache_folder)
    made = BeatVideos()
    to_render = []
    for beat in plan.beats:
        hit = cache.lookup(plan, beat.id, q)
        if hit:
            made.videos[beat.id] = hit
            made.reused.append(beat.id)
        else:
            to_render.append(beat.id)
    reused = made.reused
    workers = min(jobs, beats.PARTS * len(to_render))
    say(f"beats: {len(reused)} cached" + (f" ({', '.join(reused)})" if reused else "")
        + (f"; rendering {len(to_render)} at {q.name} ({q.width}x{q.height}, {q.fps} fps) on "
           f"{counted(workers, 'process', 'processes')}: {', '.join(to_render)}"
           if to_render else "; nothing to render"))
    if not to_render:
        return made
    remove_stale_scratch(cache.folder)
    scratch = cache.folder / f".rendering-{os.getpid()}"
    scratch.mkdir(parents=True, exist_ok=True)
    manager = SyncManager()
    manager.start(start_worker, (os.getpid(),))
    try:
        with manager, ProcessPoolExecutor(max_workers=workers, initializer=start_worker,
                                          initargs=(os.getpid(),)) as pool, ctrl_c_noted() as interrupted:
            progress = manager.Queue()
            # Each beat in its parts: every beat's first part is queued before any second part, so a second part
            # starts from what its first part typeset and parsed (kept in the cache), not at the same time.
            parts = {beat_id: beats.part_bounds(beats.beat_frames(plan, beat_id, q)) for beat_id in to_render}
            order = sorted(((beat_id, index) for beat_id in to_render for index in range(len(parts[beat_id]))),
                           key=lambda job: job[1])
            futures = {pool.submit(render_beat_job, str(timed_plan_path), beat_id, q.name,
                                   str(scratch / f"{beat_id}.part{index}.mp4"), progress, str(cache_folder),
                                   parts[beat_id][index]): (beat_id, index)
                       for beat_id, index in order}
            finished: dict[str, dict[int, beats.BeatRender]] = {beat_id: {} for beat_id in to_render}
            drawn: dict[tuple[str, int], int] = {}  # (beat, its part's first frame) -> frames drawn
            states: dict[str, str] = {}
            last_report = 0.0
            pending = set(futures)

            def keep(done) -> None:
                """Store each beat in the cache once its parts are done (a render that failed stops the run,
                named)."""
                for future in done:
                    beat_id, index = futures[future]
                    try:
                        finished[beat_id][index] = future.result()
                    except FilmError:
                        raise
                    except Exception as error:  # a scene's own bug: name the beat
                        raise FilmError(f"rendering beat {beat_id!r} failed: {type(error).__name__}: {error}") from error
                    if len(finished[beat_id]) < len(parts[beat_id]):
                        continue
                    render = beats.join_parts(beat_id, [finished[beat_id][number] for number in
                                                        range(len(parts[beat_id]))], scratch / f"{beat_id}.mp4")
                    made.videos[beat_id] = cache.store(plan, beat_id, q, render.video, list(render.values_read))
                    made.rendered[beat_id] = render
                    states.pop(beat_id, None)
                    say(f"  done {beat_id} in {render.seconds:.1f} s ({len(made.videos)}/{len(plan.beats)})")

            while pending and not interrupted.is_set():
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                while not progress.empty():
                    beat_id, bounds, frames, total = progress.get()
                    first, end = bounds or (0, total)
                    drawn[beat_id, first] = max(0, min(frames, end) - first)
                    share = sum(count for (other, _), count in drawn.items() if other == beat_id) / max(total, 1)
                    states[beat_id] = f"{beat_id} {min(100, int(100 * share))}%"
                keep(done)
                if states and time.monotonic() - last_report > 10:
                    say("  rendering: " + ", ".join(states.values()))
                    last_report = time.monotonic()
            if interrupted.is_set():
                stop_rendering(pool, pending, keep)
                say(f"interrupted: {counted(len(made.rendered), 'beat')} rendered in this run "
                    f"{'is' if len(made.rendered) == 1 else 'are'} kept in the cache"
                    + (f" ({', '.join(made.rendered)}); the next run reuses "
                       f"{'it' if len(made.rendered) == 1 else 'them'}" if made.rendered else ""))
                raise KeyboardInterrupt
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return made


# After Ctrl-C, how long beats about to finish may take to do so (and be kept) before the rest are stopped.
STOP_GRACE_SECONDS = 0.8


def stop_rendering(pool: ProcessPoolExecutor, pending: set, keep) -> None:
    """Ctrl-C: start nothing more, keep what finishes within a moment, and stop the workers still drawing
    (their beats were not finished; the cache has every one that was)."""
    for future in pending:
        future.cancel()  # not started: never will be
    running = {future for future in pending if not future.cancelled()}
    if running:
        done, _ = wait(running, timeout=STOP_GRACE_SECONDS)
        keep({future for future in done if not future.cancelled() and future.exception() is None})
    for process in list(getattr(pool, "_processes", {}).values()):  # the executor's own workers
        process.kill()
    pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def ctrl_c_noted():
    """While beats render, Ctrl-C (SIGINT) is noted rather than raised wherever the main process happens to be
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


def assemble(plan: Plan, videos: list[Path], narration: Path, out_path: Path) -> None:
    """Join the beats without re-encoding, add the narration (AAC), chapters and metadata; atomically."""
    folder = out_path.parent
    concat = folder / ".film.concat.txt"
    chapters = folder / ".film.chapters.txt"
    media.concat_list(videos, concat)
    chapters.write_text(ffmetadata(plan))
    try:
        pictures = ffmpeg.input(str(concat), format="concat", safe=0)
        sound = ffmpeg.input(str(narration))
        metadata = ffmpeg.input(str(chapters), format="ffmetadata")
        with atomic_path(out_path) as temporary:
            # The metadata input has no streams; mapping its optional data streams ("d?", none) keeps it
            # in ffmpeg-python's graph as input 2, where map_metadata and map_chapters find it.
            joined = media.aac_output(pictures["v"], sound["a"], temporary, plan.duration, extra=[metadata["d?"]],
                                      audio_bitrate="192k", map_metadata=2, map_chapters=2)
            media.run(joined, "joining the beats into the film")
    finally:
        concat.unlink(missing_ok=True)
        chapters.unlink(missing_ok=True)


def film_key(plan: Plan, videos: list[Path], narration: Path) -> str:
    """What the film is made of: the beats' cache entries (named by their keys), the narration, the chapters."""
    digest = hashlib.sha256()
    for video in videos:
        digest.update(video.name.encode())
    narration_key = narration.with_name(f".{narration.name}.key")
    digest.update(narration_key.read_bytes() if narration_key.exists() else narration.read_bytes())
    digest.update(ffmetadata(plan).encode())
    digest.update(str(CACHE_FORMAT).encode())
    return digest.hexdigest()


def ffmetadata(plan: Plan) -> str:
    def escape(text: str) -> str:
        return "".join("\\" + char if char in "=;#\\" else char for char in clean_text(text))

    gpu, model, dtype = plan.choice.gpu.name, plan.choice.model.name, plan.choice.dtype.name
    lines = [";FFMETADATA1", f"title={escape(plan.title)}",
             f"comment={escape(f'{gpu} · {model} · {dtype}; numbers from a roofline model; after ' + plan.source)}",
             f"gpu={escape(gpu)}", f"model={escape(model)}", f"dtype={escape(dtype)}",
             f"description={escape(f'{gpu}, {model}, {dtype}')}"]
    for beat in plan.beats:
        lines += ["[CHAPTER]", "TIMEBASE=1/1000", f"START={round(beat.start * 1000)}",
                  f"END={round(beat.end * 1000)}", f"title={escape(beat.title)}"]
    return "\n".join(lines) + "\n"


def check_film(path: Path, plan: Plan, q: beats.Quality, videos: list[Path] | None = None) -> None:
    """The finished film, checked before it is declared done: its streams, each stream's real
    length (counted in packets, not the container's claim), chapters, and that all of it decodes.

    Given the beats' `videos` it was joined from, each decoded whole when its render made it (render_video)
    and the same bytes since (the cache checks their digest), it is checked to hold exactly their pictures,
    packet for packet, and only its sound and its joins are decoded: the same guarantee, at a fraction of
    the cost of decoding all of it."""
    info = media.probe(path)
    video = [s for s in info["streams"] if s["codec_type"] == "video"]
    sound = [s for s in info["streams"] if s["codec_type"] == "audio"]
    problems = []
    if len(video) != 1 or video[0]["codec_name"] != "h264" or video[0]["pix_fmt"] != "yuv420p":
        problems.append(f"video stream: {[(s['codec_name'], s.get('pix_fmt')) for s in video]}, wanted one h264 yuv420p")
    elif (video[0]["width"], video[0]["height"]) != (q.width, q.height) or video[0]["r_frame_rate"] != f"{q.fps}/1":
        problems.append(f"video is {video[0]['width']}x{video[0]['height']} at {video[0]['r_frame_rate']}, "
                        f"wanted {q.width}x{q.height} at {q.fps}")
    if len(sound) != 1 or sound[0]["codec_name"] != "aac" or sound[0]["sample_rate"] != "48000":
        problems.append("audio stream: wanted one AAC 48 kHz")
    duration = float(info["format"]["duration"])
    if abs(duration - plan.duration) > 1 / q.fps + 1e-3:
        problems.append(f"duration {duration:.3f} s, wanted {plan.duration:.3f} s")
    titles = [chapter.get("tags", {}).get("title") for chapter in info.get("chapters", [])]
    if titles != [beat.title for beat in plan.beats]:
        problems.append(f"chapters {titles}, wanted the nine beats")
    packets = media.packet_counts(path)
    frames, wanted_frames = packets.get("video", 0), round(plan.duration * q.fps)
    if frames != wanted_frames:
        problems.append(f"the video holds {frames} frames ({frames / q.fps:.3f} s), wanted {wanted_frames}")
    sound_seconds = packets.get("audio", 0) * 1024 / 48_000  # an AAC packet is 1024 samples
    if abs(sound_seconds - plan.duration) > 0.05:
        problems.append(f"the sound lasts {sound_seconds:.3f} s, wanted {plan.duration:.3f} s")
    if not problems and videos is not None:
        own, wanted = media.packet_hashes(path), [digest for video in videos for digest in media.packet_hashes(video)]
        if own != wanted:
            first = next((index for index, (a, b) in enumerate(zip(own, wanted)) if a != b), min(len(own), len(wanted)))
            problems.append(f"its pictures are not the beats' own: packet {first} of {len(wanted)} differs")
    if not problems:
        seams = [(beat.start - 2 / q.fps, 4 / q.fps) for beat in plan.beats[1:]] if videos is not None else None
        problems += [f"it does not decode: {line}" for line in media.decode_problems(path, seams)]
    if problems:
        raise FilmError(f"the finished film {path} failed its check: " + "; ".join(problems))


def make_poster(film: Path, plan: Plan, out_path: Path) -> Path:
    """The poster: the roofline beat with everything on it, just before the GPU pills."""
    beat = next((b for b in plan.beats if b.id == "roofline"), plan.beats[len(plan.beats) // 2])
    at = min(beat.end - 0.6, max(beat.timing.cues.values(), default=beat.start) + 1.0)
    return media.frame_at(film, at, out_path)

"""A film from its beats: joined without re-encoding, muxed with the narration, chapters and metadata,
written atomically and checked with ffprobe before it is declared done, with its subtitles and poster; a
lock keeps two runs on one output folder apart. Which beats to render, and where, is the
scheduler's (scheduler.py: `make film` and `make films`).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import ffmpeg

from render import media
from render.errors import FilmError
from render.files import atomic_path, cache_dir, output_dir, record_made, up_to_date, write_atomic
from render.plan.types import Plan
from render.text import clean_text
from render.video import beats
from render.video.cache import CACHE_FORMAT, BeatCache, recorded_packets
from render.video.settling import SETTLED_FILE, settled_time
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
    renders: dict[str, beats.BeatRender] = field(default_factory=dict)  # what each rendered beat's render found


@dataclass
class BeatVideos:
    """Every beat's video, and which were rendered now (with their render results) or reused."""

    videos: dict[str, Path] = field(default_factory=dict)
    rendered: dict[str, beats.BeatRender] = field(default_factory=dict)
    reused: list[str] = field(default_factory=list)


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
        holder = clean_text(handle.read(500)) or "another process"
        handle.close()
        raise FilmError(f"another run is writing {folder} ({holder}); wait for it to finish or stop it, "
                        f"or render another choice meanwhile") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}: {running_command()}")
    handle.flush()
    remove_stale_temporaries(folder)
    try:
        yield
    finally:
        fcntl.lockf(handle, fcntl.LOCK_UN)
        handle.close()


def running_command() -> str:
    """This process's command as a user would know it (`film studio --quality low`), for a lock's holder."""
    program = Path(sys.argv[0]).name if sys.argv else "python"
    name = "film" if program in ("film", "cli.py", "__main__.py") else program
    return clean_text(" ".join([name, *sys.argv[1:]]), 200)


# What only the run holding a folder's lock writes there (the film and its poster): a temporary one left
# behind was a killed run's, since the lock is ours now.
LOCKED_TEMPORARIES = (".film.*.tmp.mp4", ".poster.*.tmp.png")


def remove_stale_temporaries(folder: Path) -> None:
    for pattern in LOCKED_TEMPORARIES:
        for stale in folder.glob(pattern):
            stale.unlink(missing_ok=True)


def film_dir(plan: Plan, quality_name: str, build_dir: Path) -> Path:
    """The film's folder; a preview (any quality but high) goes to a preview/ folder beside it."""
    folder = output_dir(plan.choice.name, plan.choice.is_default, build_dir)
    return folder if quality_name == "high" else folder / "preview"


def narrate(plan: Plan, build_dir: Path, on_beat=None) -> NarrationResult:
    """The film's narration (cached by its words and voice): the subtitles and timed plan, and the track, to be
    levelled while the beats render (`levelling.start()`; `finish_film` waits for it). `on_beat(beat id, its
    timing)` as each beat is voiced."""
    return make_narration(plan, output_dir(plan.choice.name, plan.choice.is_default, build_dir), cache_dir(build_dir),
                          level_later=True, film_sound=True, on_beat=on_beat)


def finish_film(narration: NarrationResult, made: BeatVideos, q: beats.Quality, folder: Path, build_dir: Path,
                started: float, say=print) -> FilmResult:
    """Every beat's video is in the cache: join them with the narration, check the film, and write
    its subtitles, poster and what each beat showed beside it. The same for one film or many."""
    timed = narration.plan
    film = folder / "film.mp4"
    ordered = [made.videos[beat.id] for beat in timed.beats]
    narration.track_ready()  # and the film's sound made from it
    key = film_key(timed, ordered, narration.film_sound)
    key_file = folder / ".film.mp4.key"
    if up_to_date(film, key_file, key):
        say("film: up to date (every beat and the narration unchanged)")
    else:
        key_file.unlink(missing_ok=True)
        assemble(timed, ordered, narration.film_sound, film)
        check_film(film, timed, q, ordered)
        record_made(film, key_file, key)
    for source in (narration.srt, narration.vtt):
        if source.parent != folder:
            write_atomic(folder / source.name, source.read_bytes())
    # When each cue's picture settles in each beat (as its render recorded): the stills of the poster and the
    # pages are taken there, never inside a count-up or a swap.
    cache = BeatCache(cache_dir(build_dir))
    settled = {beat.id: cache.settled(timed, beat.id, q) for beat in timed.beats}
    poster = make_poster(film, timed, folder / "poster.png", settled)
    # What each beat's pictures show, for the review page's numbers (the scenes' recorded reads).
    shown = {beat.id: cache.values_read(timed, beat.id, q) for beat in timed.beats}
    write_atomic(folder / "shown.json", json.dumps(shown, indent=1) + "\n")
    write_atomic(folder / SETTLED_FILE, json.dumps(settled, indent=1) + "\n")
    return FilmResult(timed, film, folder / "film.srt", folder / "film.vtt", poster,
                      float(media.probe(film)["format"]["duration"]), time.perf_counter() - started,
                      list(made.rendered), made.reused,
                      {beat_id: round(render.seconds / timed.beat(beat_id).duration, 2)
                       for beat_id, render in made.rendered.items()}, dict(made.rendered))


def assemble(plan: Plan, videos: list[Path], sound: Path, out_path: Path) -> None:
    """Join the beats and the film's sound (narration.film_sound), neither re-encoded, with chapters and metadata;
    atomically."""
    folder = out_path.parent
    concat = folder / ".film.concat.txt"
    chapters = folder / ".film.chapters.txt"
    media.concat_list(videos, concat)
    chapters.write_text(ffmetadata(plan))
    try:
        pictures = ffmpeg.input(str(concat), format="concat", safe=0)
        sound = ffmpeg.input(str(sound))
        metadata = ffmpeg.input(str(chapters), format="ffmetadata")
        with atomic_path(out_path) as temporary:
            # The metadata input has no streams; mapping its optional data streams ("d?", none) keeps it
            # in ffmpeg-python's graph as input 2, where map_metadata and map_chapters find it.
            joined = ffmpeg.output(pictures["v"], sound["a"], metadata["d?"], str(temporary), c="copy",
                                   use_editlist=0, movflags=media.MP4_FLAGS, map_metadata=2, map_chapters=2)
            media.run(joined, "joining the beats into the film")
    finally:
        concat.unlink(missing_ok=True)
        chapters.unlink(missing_ok=True)


def film_key(plan: Plan, videos: list[Path], sound: Path) -> str:
    """What the film is made of: the beats' cache entries (named by their keys), its sound, the chapters."""
    digest = hashlib.sha256()
    for video in videos:
        digest.update(video.name.encode())
    sound_key = sound.with_name(f".{sound.name}.key")
    digest.update(sound_key.read_bytes() if sound_key.exists() else sound.read_bytes())
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
        found = [(stream["codec_name"], stream.get("pix_fmt")) for stream in video]
        problems.append(f"video stream: {found}, wanted one h264 yuv420p")
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
    if not problems:
        problems += packet_and_decode_problems(path, plan, q, videos)
    if problems:
        raise FilmError(f"the finished film {path} failed its check: " + "; ".join(problems))


def packet_and_decode_problems(path: Path, plan: Plan, q: beats.Quality, videos: list[Path] | None) -> list[str]:
    """The film's packets counted (and, given its beats' videos, compared with theirs) while ffmpeg decodes it:
    at its joins and in its sound, given the beats, else whole."""
    seams = [(beat.start - 2 / q.fps, 4 / q.fps) for beat in plan.beats[1:]] if videos is not None else None
    problems = []
    with ThreadPoolExecutor(max_workers=1) as pool:  # ffmpeg's own programs, while this process reads the packets
        decoded = pool.submit(media.decode_problems, path, seams)
        packets = media.packet_digests(path)
        frames, wanted_frames = len(packets.get("video", [])), round(plan.duration * q.fps)
        if frames != wanted_frames:
            problems.append(f"the video holds {frames} frames ({frames / q.fps:.3f} s), wanted {wanted_frames}")
        sound_seconds = len(packets.get("audio", [])) * 1024 / 48_000  # an AAC packet is 1024 samples
        if abs(sound_seconds - plan.duration) > 0.05:
            problems.append(f"the sound lasts {sound_seconds:.3f} s, wanted {plan.duration:.3f} s")
        if not problems and videos is not None:
            own, wanted = packets["video"], [digest for video in videos for digest in recorded_packets(video)]
            if own != wanted:
                first = next((index for index, (a, b) in enumerate(zip(own, wanted)) if a != b),
                             min(len(own), len(wanted)))
                problems.append(f"its pictures are not the beats' own: packet {first} of {len(wanted)} differs")
        if not problems:
            problems += [f"it does not decode: {line}" for line in decoded.result()]
    return problems


def poster_moment(plan: Plan, settled: dict[str, dict[str, float]] | None = None) -> tuple[str, float]:
    """The poster's beat and its time in the film: the roofline beat with everything on it, just before the GPU
    pills (once its last cue's picture has settled, where the film's render recorded that)."""
    beat = next((b for b in plan.beats if b.id == "roofline"), plan.beats[len(plan.beats) // 2])
    moments = (settled or {}).get(beat.id, {})
    told = [moments[cue] for cue in beat.timing.cues if cue in moments]
    if told:
        return beat.id, min(beat.end - 0.6, settled_time(beat, max(told)))
    # The last cue's words are written by a second after it, later when the moves before it ran late; the pills
    # start once the speech has ended.
    finished = max(max(beat.timing.cues.values(), default=beat.start) + 1.2, beat.timing.speech_end + 0.05)
    return beat.id, min(beat.end - 0.6, finished)


def make_poster(film: Path, plan: Plan, out_path: Path, settled: dict[str, dict[str, float]] | None = None) -> Path:
    return media.frame_at(film, poster_moment(plan, settled)[1], out_path)



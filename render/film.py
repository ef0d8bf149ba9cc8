"""`make film`: every beat rendered (cached, in parallel), joined, muxed with the narration, checked.

A beat's render is cached under build/cache/beats/ by a hash of everything that changes its
pictures: the code of its scene module and the scene modules and formatter it imports, its
slice of the timed plan (words, cue times, the choice of GPU, model and data type), the
quality and Manim's version, and the values of the plan numbers the scene actually read
while it rendered (recorded then), so changing one number re-renders only the beats that
show it. Output is written to a temporary file and renamed; a lock keeps two runs on one
output folder apart.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import Manager
from pathlib import Path

from render import audio, beats
from render.catalog import PROJECT_ROOT
from render.errors import FilmError
from render.narration import make_narration
from render.paths import cache_dir, output_dir
from render.plan import Plan

log = logging.getLogger("film")

SCENES_DIR = PROJECT_ROOT / "scenes"
CACHE_FORMAT = 2


@dataclass(frozen=True)
class FilmResult:
    film: Path
    srt: Path
    vtt: Path
    poster: Path
    duration: float
    seconds: float
    rendered: list[str]
    reused: list[str]
    beat_ratios: dict[str, float]  # each rendered beat's render time over its length (one process each)


# -- the beat cache ----------------------------------------------------------------------------------


def scene_sources(family_module: str) -> list[Path]:
    """The files a beat's pictures depend on: its scene module, the scene modules it imports, the formatter."""
    seen: set[str] = set()
    pending = [family_module, "scenes.base"]
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        path = PROJECT_ROOT / (module.replace(".", "/") + ".py")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("scenes."):
                pending.append(node.module)
    return sorted([PROJECT_ROOT / (module.replace(".", "/") + ".py") for module in seen]
                  + [PROJECT_ROOT / "render" / "formatting.py", PROJECT_ROOT / "render" / "beats.py"])


def beat_slice(timed_plan: dict, beat_id: str) -> dict:
    """The beat's own part of the timed plan; shared values (numbers, GPU, ...) are tracked one by one."""
    entry = beats.beat_entry(timed_plan, beat_id)
    keep = ("id", "title", "start", "end", "scene", "narration", "captions", "cues", "speech_start", "speech_end",
            "cue_times")
    return {"beat": {key: entry[key] for key in keep if key in entry}, "pills": timed_plan["roofline_pills"]}


def base_key(timed_plan: dict, beat_id: str, q: beats.Quality) -> str:
    import importlib.metadata

    entry = beats.beat_entry(timed_plan, beat_id)
    from scenes import FAMILIES

    digest = hashlib.sha256()
    for path in scene_sources(FAMILIES[entry["scene"]]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update(json.dumps(beat_slice(timed_plan, beat_id), sort_keys=True).encode())
    digest.update(f"{q}:{importlib.metadata.version('manim')}:{CACHE_FORMAT}".encode())
    return digest.hexdigest()[:24]


def numbers_key(timed_plan: dict, used: list[str]) -> str:
    """A hash of the shared values a scene read last time ("numbers.prefill_ops", "gpu.short_name", ...)."""
    from scenes.base import view_sections

    sections = view_sections(timed_plan)
    values = {}
    for read in used:
        section, _, key = read.partition(".")
        values[read] = sections.get(section, {}).get(key, "<missing>")
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:16]


class BeatCache:
    """build/cache/beats/<beat>-<base key>.json lists the numbers the scene read; the video is keyed by their values."""

    def __init__(self, folder: Path):
        self.folder = folder / "beats"
        self.folder.mkdir(parents=True, exist_ok=True)

    def lookup(self, timed_plan: dict, beat_id: str, q: beats.Quality) -> Path | None:
        base = base_key(timed_plan, beat_id, q)
        meta_path = self.folder / f"{beat_id}-{base}.json"
        if not meta_path.exists():
            return None
        try:
            used = json.loads(meta_path.read_text())["numbers_used"]
        except (OSError, ValueError, KeyError):
            return None
        video = self.folder / f"{beat_id}-{base}-{numbers_key(timed_plan, used)}.mp4"
        entry = beats.beat_entry(timed_plan, beat_id)
        if video.exists() and frame_count(video) == round((entry["end"] - entry["start"]) * q.fps):
            return video
        return None

    def store(self, timed_plan: dict, beat_id: str, q: beats.Quality, rendered: Path, used: list[str]) -> Path:
        base = base_key(timed_plan, beat_id, q)
        video = self.folder / f"{beat_id}-{base}-{numbers_key(timed_plan, used)}.mp4"
        os.replace(rendered, video)  # the video first: metadata without its video is only a miss
        meta = self.folder / f"{beat_id}-{base}.json"
        temporary = meta.with_name(f".{meta.name}.tmp")
        temporary.write_text(json.dumps({"numbers_used": used}))
        temporary.replace(meta)
        return video


def frame_count(video: Path) -> int:
    result = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-count_packets", "-show_entries",
                             "stream=nb_read_packets", "-of", "csv=p=0", str(video)], capture_output=True, text=True)
    try:
        return int(result.stdout.strip())
    except ValueError:
        return -1


def render_beat_job(timed_plan_path: str, beat_id: str, quality_name: str, out_path: str,
                    progress) -> tuple[list[str], float]:
    """In a worker process: render one beat's pictures; return the plan values its scene read, and the time."""
    started = time.perf_counter()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="film: %(message)s")
    timed_plan = beats.load_timed_plan(Path(timed_plan_path))
    from scenes.base import BeatScene

    BeatScene.progress = staticmethod(lambda frames, total: progress.put((beat_id, frames, total)))
    beats.render_video(timed_plan, beat_id, beats.quality(quality_name), Path(out_path))
    return beats.NUMBERS_READ[beat_id], time.perf_counter() - started


# -- the film ----------------------------------------------------------------------------------------


@contextmanager
def output_lock(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".film.lock"
    handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise FilmError(f"another `make film` is writing {folder} ({holder}); wait for it to finish, "
                        f"or render another choice meanwhile") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def film_dir(plan: Plan, quality_name: str, build_dir: Path) -> Path:
    """The film's folder; a preview (any quality but high) goes to a preview/ folder beside it."""
    folder = output_dir(plan, build_dir)
    return folder if quality_name == "high" else folder / "preview"


def make_film(plan: Plan, quality_name: str = "high", build_dir: Path | None = None, jobs: int | None = None,
              say=print) -> FilmResult:
    from render.paths import BUILD_DIR

    build_dir = build_dir or BUILD_DIR
    started = time.perf_counter()
    q = beats.quality(quality_name)
    folder = film_dir(plan, quality_name, build_dir)
    with output_lock(folder):
        narration = make_narration(plan, output_dir(plan, build_dir), cache_dir(build_dir))
        timed_plan = beats.load_timed_plan(narration.timed_plan_path)
        render_seconds: dict[str, float] = {}
        videos, rendered, reused = render_all_beats(timed_plan, narration.timed_plan_path, q, cache_dir(build_dir),
                                                    jobs or os.cpu_count() or 1, say, render_seconds)
        film = folder / "film.mp4"
        ordered = [videos[beat["id"]] for beat in timed_plan["beats"]]
        key = film_key(timed_plan, ordered, narration.track)
        key_file = folder / ".film.mp4.key"
        if film.exists() and key_file.exists() and key_file.read_text() == key:
            say("film: up to date (every beat and the narration unchanged)")
        else:
            key_file.unlink(missing_ok=True)
            assemble(timed_plan, ordered, narration.track, q, film)
            check_film(film, timed_plan, q)
            key_file.write_text(key)
        for name in ("film.srt", "film.vtt"):
            if narration.srt.parent != folder:
                shutil.copyfile(narration.srt.parent / name, folder / f".{name}.tmp")
                (folder / f".{name}.tmp").replace(folder / name)
        poster = make_poster(film, timed_plan, folder / "poster.png")
    return FilmResult(film, folder / "film.srt", folder / "film.vtt", poster, float(probe(film)["format"]["duration"]),
                      time.perf_counter() - started, rendered, reused,
                      {beat["id"]: round(render_seconds[beat["id"]] / (beat["end"] - beat["start"]), 2)
                       for beat in timed_plan["beats"] if beat["id"] in render_seconds})


def render_all_beats(timed_plan: dict, timed_plan_path: Path, q: beats.Quality, cache_folder: Path, jobs: int,
                     say, render_seconds: dict[str, float]) -> tuple[dict[str, Path], list[str], list[str]]:
    cache = BeatCache(cache_folder)
    videos: dict[str, Path] = {}
    to_render = []
    for beat in timed_plan["beats"]:
        hit = cache.lookup(timed_plan, beat["id"], q)
        if hit:
            videos[beat["id"]] = hit
        else:
            to_render.append(beat["id"])
    reused = [beat_id for beat_id in videos]
    say(f"beats: {len(reused)} cached" + (f" ({', '.join(reused)})" if reused else "")
        + (f"; rendering {len(to_render)} at {q.name} ({q.width}x{q.height}, {q.fps} fps) on {min(jobs, len(to_render))} "
           f"processes: {', '.join(to_render)}" if to_render else "; nothing to render"))
    if not to_render:
        return videos, [], reused
    scratch = cache.folder / f".rendering-{os.getpid()}"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        with Manager() as manager, ProcessPoolExecutor(max_workers=min(jobs, len(to_render))) as pool:
            progress = manager.Queue()
            futures = {pool.submit(render_beat_job, str(timed_plan_path), beat_id, q.name,
                                   str(scratch / f"{beat_id}.mp4"), progress): beat_id for beat_id in to_render}
            states: dict[str, str] = {}
            last_report = 0.0
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                while not progress.empty():
                    beat_id, frames, total = progress.get()
                    states[beat_id] = f"{beat_id} {100 * frames // max(total, 1)}%"
                for future in done:
                    beat_id = futures[future]
                    try:
                        used, seconds = future.result()
                    except FilmError:
                        raise
                    except Exception as error:  # a scene's own bug: name the beat
                        raise FilmError(f"rendering beat {beat_id!r} failed: {type(error).__name__}: {error}") from error
                    videos[beat_id] = cache.store(timed_plan, beat_id, q, scratch / f"{beat_id}.mp4", used)
                    render_seconds[beat_id] = seconds
                    states.pop(beat_id, None)
                    say(f"  done {beat_id} in {seconds:.1f} s ({len(videos)}/{len(timed_plan['beats'])})")
                if states and time.monotonic() - last_report > 10:
                    say("  rendering: " + ", ".join(states.values()))
                    last_report = time.monotonic()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return videos, to_render, reused


def assemble(timed_plan: dict, videos: list[Path], narration: Path, q: beats.Quality, out_path: Path) -> None:
    """Join the beats without re-encoding, add the narration (AAC), chapters and metadata; atomically."""
    folder = out_path.parent
    concat = folder / ".film.concat.txt"
    chapters = folder / ".film.chapters.txt"
    temporary = folder / ".film.tmp.mp4"
    concat.write_text("".join(f"file '{video.resolve()}'\n" for video in videos))
    chapters.write_text(ffmetadata(timed_plan))
    try:
        audio.run_ffmpeg(["-f", "concat", "-safe", "0", "-i", str(concat), "-i", str(narration),
                          "-f", "ffmetadata", "-i", str(chapters),
                          "-map", "0:v", "-map", "1:a", "-map_metadata", "2", "-map_chapters", "2",
                          "-c:v", "copy", "-c:a", "aac", "-b:a", "192k", "-ar", "48000",
                          "-t", f"{timed_plan['duration']:.6f}", "-movflags", "+faststart+use_metadata_tags",
                          "-y", str(temporary)],
                         what="joining the beats into the film")
        temporary.replace(out_path)
    finally:
        for path in (concat, chapters, temporary):
            path.unlink(missing_ok=True)


def film_key(timed_plan: dict, videos: list[Path], narration: Path) -> str:
    """What the film is made of: the beats' cache entries (named by their keys), the narration, the chapters."""
    digest = hashlib.sha256()
    for video in videos:
        digest.update(video.name.encode())
    narration_key = narration.with_name(f".{narration.name}.key")
    digest.update(narration_key.read_bytes() if narration_key.exists() else narration.read_bytes())
    digest.update(ffmetadata(timed_plan).encode())
    digest.update(str(CACHE_FORMAT).encode())
    return digest.hexdigest()


def ffmetadata(timed_plan: dict) -> str:
    def escape(text: str) -> str:
        return "".join("\\" + char if char in "=;#\\\n" else char for char in str(text))

    gpu, model, dtype = timed_plan["gpu"]["name"], timed_plan["model"]["name"], timed_plan["dtype"]["name"]
    lines = [";FFMETADATA1", f"title={escape(timed_plan['title'])}",
             f"comment={escape(f'{gpu} · {model} · {dtype}; numbers from a roofline model; after ' + timed_plan['source'])}",
             f"gpu={escape(gpu)}", f"model={escape(model)}", f"dtype={escape(dtype)}",
             f"description={escape(f'{gpu}, {model}, {dtype}')}"]
    for beat in timed_plan["beats"]:
        lines += ["[CHAPTER]", "TIMEBASE=1/1000", f"START={round(beat['start'] * 1000)}",
                  f"END={round(beat['end'] * 1000)}", f"title={escape(beat['title'])}"]
    return "\n".join(lines) + "\n"


def probe(path: Path) -> dict:
    result = subprocess.run(["ffprobe", "-v", "error", "-show_format", "-show_streams", "-show_chapters",
                             "-of", "json", str(path)], capture_output=True, text=True)
    if result.returncode != 0:
        raise FilmError(f"{path} cannot be read: {result.stderr.strip()}")
    return json.loads(result.stdout)


def check_film(path: Path, timed_plan: dict, q: beats.Quality) -> None:
    """The finished film, checked before it is declared done: streams, duration, chapters."""
    info = probe(path)
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
    if abs(duration - timed_plan["duration"]) > 1 / q.fps + 1e-3:
        problems.append(f"duration {duration:.3f} s, wanted {timed_plan['duration']:.3f} s")
    titles = [chapter.get("tags", {}).get("title") for chapter in info.get("chapters", [])]
    if titles != [beat["title"] for beat in timed_plan["beats"]]:
        problems.append(f"chapters {titles}, wanted the nine beats")
    if problems:
        raise FilmError(f"the finished film {path} failed its check: " + "; ".join(problems))


def make_poster(film: Path, timed_plan: dict, out_path: Path) -> Path:
    """The poster: the roofline beat with everything on it, just before the GPU pills."""
    beat = beats.beat_entry(timed_plan, "roofline") if any(b["id"] == "roofline" for b in timed_plan["beats"]) \
        else timed_plan["beats"][len(timed_plan["beats"]) // 2]
    at = min(beat["end"] - 0.6, max(beat["cue_times"].values(), default=beat["start"]) + 1.0)
    temporary = out_path.with_name(f".{out_path.name}.tmp.png")
    audio.run_ffmpeg(["-ss", f"{at:.3f}", "-i", str(film), "-frames:v", "1", "-y", str(temporary)],
                     what="extracting the poster")
    temporary.replace(out_path)
    return out_path

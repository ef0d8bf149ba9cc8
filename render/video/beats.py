"""Rendering beats with Manim: one beat's pictures, a beat with its narration, stills and a sheet.

Every render reads the timed plan and nothing else, and returns what it found (a BeatRender);
nothing comes back through globals.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import logging
import multiprocessing.util
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import ffmpeg

from render import media
from render.errors import FilmError
from render.files import atomic_path, move, write_atomic
from render.formatting import timestamp
from render.plan.types import Plan
from render.video.cache import LintMemo, StillCache
from render.video.frames import kept_frame_buffers
from render.video.quality import ENCODER, HELD_CRF, QUALITIES, Quality, quality  # noqa: F401  (the renderer's)
from render.video.shapes import kept_shapes

log = logging.getLogger("film")


def own_folder(kind: str) -> Path:
    """This process's folder for typeset formulas ("tex") or laid-out text ("texts"): every formula and
    text is made once per process, however many beats it renders; a folder per process, so parallel
    workers never read each other's half-written files (Manim writes a parsed SVG's copy beside it and
    removes it). Per process id: a worker forked from a process that had one makes its own."""
    return process_folder(kind, os.getpid())


@functools.lru_cache(maxsize=None)
def process_folder(kind: str, pid: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f"film-{kind}-{pid}-"))
    atexit.register(shutil.rmtree, folder, True)
    # A pool's worker leaves through multiprocessing's own exit (atexit does not run there).
    multiprocessing.util.Finalize(None, shutil.rmtree, args=(folder, True), exitpriority=0)
    return folder


# Manim's LaTeX SVGs and Pango's text SVGs, each named by a hash of its source, and the setting naming each folder.
TYPESETTING = {"tex": "tex_dir", "texts": "text_dir"}


def remove_process_folders(pid: int) -> None:
    """The folders process `pid` made for its typesetting (process_folder), removed: it was killed before it could
    (the studio stops a drawing that newer edits made needless)."""
    for kind in TYPESETTING:
        for folder in Path(tempfile.gettempdir()).glob(f"film-{kind}-{pid}-*"):
            shutil.rmtree(folder, ignore_errors=True)


def typesetting_dirs(cache: Path | None) -> dict[str, str]:
    """Manim's tex_dir and text_dir for a render: this process's folders, holding everything the shared
    cache (`<cache>/typeset/`) has typeset before, each entry checked first (a damaged or half-written
    one is dropped and made again)."""
    folders = {}
    for kind, setting in TYPESETTING.items():
        own = own_folder(kind)
        if cache is not None:
            for entry in typeset_files(Path(cache) / "typeset" / kind):
                if not (own / entry.name).exists():
                    if complete_svg(entry):
                        # A copy, not a link: Manim writes files in its folders in place, and a link would
                        # let two renders write one file at once.
                        shutil.copyfile(entry, own / entry.name)
                    else:
                        entry.unlink(missing_ok=True)
        folders[setting] = str(own)
    return folders


def keep_typesetting(cache: Path | None) -> None:
    """Put what this process typeset into the shared cache, each file whole or not at all."""
    if cache is None:
        return
    for kind in TYPESETTING:
        shared = Path(cache) / "typeset" / kind
        shared.mkdir(parents=True, exist_ok=True)
        for made in typeset_files(own_folder(kind)):
            if not complete_svg(shared / made.name) and complete_svg(made):  # missing or damaged there
                with atomic_path(shared / made.name) as temporary:
                    shutil.copyfile(made, temporary)


def typeset_files(folder: Path) -> list[Path]:
    """The SVGs typeset in a folder: not Manim's scratch copy of one it is parsing (`<name>_.svg`)."""
    return [path for path in folder.glob("*.svg") if not path.stem.endswith("_")]


def complete_svg(path: Path) -> bool:
    """Whole: it starts as XML and ends with its closing tag (a truncated copy does not)."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(64)
            handle.seek(max(0, path.stat().st_size - 64))
            return start.lstrip().startswith(b"<") and b"</svg>" in handle.read()
    except OSError:
        return False



@dataclass(frozen=True)
class BeatRender:
    """What rendering one beat's pictures produced and found."""

    beat_id: str
    video: Path
    frames: int
    safe_area: tuple[str, ...]    # what was drawn within 5% of the frame's edge (should be nothing)
    values_read: tuple[str, ...]  # the plan values the scene read ("numbers.prefill.ops"), for the cache
    seconds: float                # wall time of the render
    layout: tuple[str, ...] = ()  # text over text, or text under ~28 px at 1080p (should be nothing)
    frames_layered: int = 0       # frames drawn over their play's still objects (render/engine/layers.py)
    settled: tuple[tuple[str, float], ...] = ()  # (cue, seconds into the beat) once what it set moving has ended
    places: tuple[tuple[str, str], ...] = ()     # (finding, the scene's file:line that played it first)


# A beat is rendered in this many parts of about equal length, each by its own process where there are
# several, and joined without re-encoding: a film's last beats, and a one-beat edit, keep every core busy.
# Always the same split for the same frames, wherever it runs, so a beat (and the film) is the same file every time.
PARTS = 2
# ... where each part has at least this many frames: a part builds its scene and plays it through to its first frame
# before it draws, which a short render's frames do not repay (the tests' 3 fps film: 51.5 CPU-seconds in two parts
# a beat, 41.8 in one, and sooner on two cores; a 1080p60 beat's thousand frames still split).
MIN_PART_FRAMES = 100


def part_bounds(frames: int, parts: int | None = None) -> list[tuple[int, int]]:
    """(first, end) frames of each part of a beat of `frames` frames: PARTS parts, or one where they would be shorter
    than MIN_PART_FRAMES (unless `parts` is given)."""
    parts = parts or (PARTS if frames >= PARTS * MIN_PART_FRAMES else 1)
    edges = [round(frames * index / parts) for index in range(parts + 1)]
    return [(first, end) for first, end in zip(edges, edges[1:]) if end > first]


def beat_frames(plan: Plan, beat_id: str, q: Quality) -> int:
    return round(plan.beat(beat_id).duration * q.fps)


def render_video(plan: Plan, beat_id: str, q: Quality, out_path: Path, fps: int | None = None,
                 progress=None, cache: Path | None = None, part: tuple[int, int] | None = None) -> BeatRender:
    """Render one beat's pictures (no sound) with Manim into `out_path`, or with `part` (first, end) only
    those frames of it (a part: see BeatScene; parts are joined by `join_parts`).

    `progress(frames drawn, frames in the beat)` is called as the render goes, when given; `cache`, the
    build's cache folder, keeps what was typeset for the next render.
    """
    from manim import tempconfig

    from scenes import scene_class

    started = time.perf_counter()
    scene_type = scene_class(beat_id)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"manim-{beat_id}-", dir=out_path.parent))
    settings = {
        "pixel_width": q.width, "pixel_height": q.height, "frame_rate": fps or q.fps,
        "media_dir": str(work), **typesetting_dirs(cache), "output_file": beat_id, "disable_caching": True,
        "verbosity": "WARNING", "progress_bar": "none", "write_to_movie": True, "format": "mp4",
        "video_encoder_options": dict(ENCODER),
    }
    try:
        with tempconfig(settings), kept_shapes(cache), kept_frame_buffers(HELD_CRF):
            scene = scene_type(plan, beat_id, progress, part=part)
            scene.render()
            produced = Path(scene.renderer.file_writer.movie_file_path)
            frames = scene.frames_of_part(0, scene.frames_done)
        broken = media.decode_problems(produced)  # once, here, so the film needs only its joins decoded
        if broken:
            raise FilmError(f"beat {beat_id!r}: its render does not decode: {'; '.join(broken)}")
        move(produced, out_path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    keep_typesetting(cache)
    for problem in sorted(scene.safe_area_violations):
        log.warning("%s: outside the safe area: %s", beat_id, problem)
    for problem in sorted(scene.layout_problems):
        log.warning("%s: layout: %s", beat_id, problem)
    return BeatRender(beat_id, out_path, frames, tuple(sorted(scene.safe_area_violations)),
                      tuple(sorted(scene.reads)), time.perf_counter() - started, tuple(sorted(scene.layout_problems)),
                      scene.frames_layered, settled_moments(scene.moments, fps or q.fps),
                      tuple(sorted(scene.places.items())))


def join_parts(beat_id: str, renders: list[BeatRender], out_path: Path) -> BeatRender:
    """A beat's video from its parts' (in order), not re-encoded, and what their renders found together."""
    if len(renders) == 1:
        move(renders[0].video, out_path)
    else:
        media.join_pictures([render.video for render in renders], out_path)
        for render in renders:
            render.video.unlink(missing_ok=True)

    def union(name: str) -> tuple:
        return tuple(sorted({item for render in renders for item in getattr(render, name)}))

    settled: dict[str, float] = {}
    places: dict[str, str] = {}
    for render in renders:  # (the last part ran every play of the beat, skipping those before it: it knows them all)
        settled.update(render.settled)
        places.update({finding: line for finding, line in render.places if finding not in places})
    return BeatRender(beat_id, Path(out_path), sum(render.frames for render in renders), union("safe_area"),
                      union("values_read"), sum(render.seconds for render in renders), union("layout"),
                      sum(render.frames_layered for render in renders), tuple(sorted(settled.items())),
                      tuple(sorted(places.items())))


def settled_moments(frames: dict[str, int], fps: int) -> tuple[tuple[str, float], ...]:
    """Each cue's settled frame as seconds into the beat (a whole number of frames)."""
    return tuple(sorted((cue, frame / fps) for cue, frame in frames.items()))


@functools.cache
def lint_quality() -> Quality:
    """The film's frame (the rate only counts frames), named with this module's code: the lint memo's entries are
    keyed by the checks this module adds to the scenes' own, as by the scenes."""
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    return Quality(f"lint {digest}", 1920, 1080, 15)


def played_through(plan: Plan, beat_id: str, cache: Path | None = None):
    """The beat's scene played through at the lint's frame, every animation run to its end without drawing a
    frame: what it found (layout problems), what it read and what it played (its text morphs) stay on it."""
    from manim import tempconfig

    from scenes import scene_class

    q = lint_quality()
    settings = {"pixel_width": q.width, "pixel_height": q.height, "frame_rate": q.fps, "dry_run": True,
                "disable_caching": True, "verbosity": "WARNING", "progress_bar": "none", "write_to_movie": False}
    work = Path(tempfile.mkdtemp(prefix=f"lint-{beat_id}-"))
    try:
        with tempconfig({**settings, "media_dir": str(work), **typesetting_dirs(cache)}), kept_shapes(cache):
            scene = scene_class(beat_id)(plan, beat_id, skip_animations=True)
            scene.render()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    keep_typesetting(cache)
    return scene


def lint_beat(plan: Plan, beat_id: str, cache: Path | None = None) -> tuple[str, ...]:
    """The layout problems of one beat (text over text, text too small, drawing outside the safe
    area, a length other than its slot's), from Manim's bounding boxes after every animation,
    without drawing a single frame. `cache`: a build's cache folder, whose typesetting and parsed
    shapes it uses and adds to (many choices share most of their text), and whose lint memo
    answers for a beat already linted with the same code, words, times and values read."""
    q = lint_quality()
    memo = LintMemo(cache) if cache is not None else None
    if memo is not None and (found := memo.found(plan, beat_id, q)) is not None:
        return found
    scene = played_through(plan, beat_id, cache)
    problems = scene.layout_problems | {f"outside the safe area: {problem}" for problem in scene.safe_area_violations}
    slot = round(plan.beat(beat_id).duration * q.fps)
    if scene.frames_done != slot:
        problems.add(f"lasts {scene.frames_done} frames at {q.fps} fps; its slot is {slot}")
    if memo is not None:
        memo.keep(plan, beat_id, q, sorted(scene.reads), tuple(sorted(problems)))
    return tuple(sorted(problems))


def mux_beat_audio(video: Path, narration: Path, start: float, duration: float, out_path: Path) -> Path:
    """The beat's slice of the narration track under its pictures, written atomically."""
    pictures = ffmpeg.input(str(video))
    sound = ffmpeg.input(str(narration), ss=f"{start:.6f}", t=f"{duration:.6f}")
    with atomic_path(out_path) as temporary:
        media.run(media.aac_output(pictures["v"], sound["a"], temporary, duration, audio_bitrate="160k"),
                  f"adding the narration to {out_path.name}")
    return out_path


@dataclass
class FramesTaken:
    """Frames of a beat as PNGs, what each frame's counters showed then (Counter.counter_state), and when each
    cue's picture had settled, of the cues the scene reached before its last frame."""

    paths: list[Path]
    counters: list[list[tuple[str, str, str, str]]]
    settled: dict[str, float]
    values_read: tuple[str, ...] = ()  # the plan values the scene read, for the still cache


def render_frames(plan: Plan, beat_id: str, times: list[float], quality_name: str, out_dir: Path,
                 names: list[str] | None = None, cache: Path | None = None) -> list[Path]:
    """Frames of one beat at `times` (seconds into the beat), as PNGs: the frames the film shows then."""
    return take_frames(plan, beat_id, times, quality_name, out_dir, names, cache).paths


def take_frames(plan: Plan, beat_id: str, times: list[float], quality_name: str, out_dir: Path,
                names: list[str] | None = None, cache: Path | None = None) -> FramesTaken:
    """Frames of one beat at `times` (seconds into the beat), as PNGs, and the counters each shows.

    Nothing else is drawn or encoded: the scene runs in Manim's skipping mode to each frame, draws it
    and stops after the last (BeatScene's `stills`), so a still costs the beat's set-up, not its length.
    """
    from manim import tempconfig
    from PIL import Image

    from scenes import scene_class

    duration = plan.beat(beat_id).duration
    for at in times:
        if not 0 <= at < duration:
            raise FilmError(f"AT={at:g} is outside beat {beat_id!r}, which lasts {duration:g} s "
                            f"(0 <= AT < {duration:g})")
    q = quality(quality_name)
    last = round(duration * q.fps) - 1
    wanted = [min(round(at * q.fps), last) for at in times]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"still-{beat_id}-", dir=out_dir))
    settings = {"pixel_width": q.width, "pixel_height": q.height, "frame_rate": q.fps, "media_dir": str(work),
                **typesetting_dirs(cache), "disable_caching": True, "verbosity": "WARNING", "progress_bar": "none",
                "write_to_movie": False, "save_last_frame": False}
    try:
        with tempconfig(settings), kept_shapes(cache):
            scene = scene_class(beat_id)(plan, beat_id, stills=wanted)
            scene.render()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    keep_typesetting(cache)
    paths = []
    for frame, at, name in zip(wanted, times, names or [f"{beat_id}@{at:g}.png" for at in times]):
        if frame not in scene.stills:
            raise FilmError(f"beat {beat_id!r} ended before frame {frame} ({at:g} s): it drew {scene.frames_done}")
        path = out_dir / name
        with atomic_path(path) as temporary:
            Image.fromarray(scene.stills[frame]).convert("RGB").save(temporary, format="PNG")
        paths.append(path)
    return FramesTaken(paths, [scene.counter_states.get(frame, []) for frame in wanted],
                       dict(settled_moments(scene.moments, q.fps)), tuple(sorted(scene.reads)))


def render_still(plan: Plan, beat_id: str, at: float, quality_name: str, out_dir: Path,
                 cache: Path | None = None) -> Path:
    """`make still`: the frame at `at` seconds into the beat, as <out_dir>/<beat-id>@<at>.png: the one kept in the
    cache's stills/ (StillCache) when the beat's key and the values its scene read are unchanged, else drawn."""
    q = quality(quality_name)
    duration = plan.beat(beat_id).duration
    if cache is None or not 0 <= at < duration:  # (an AT outside the beat: take_frames names the range)
        return render_frames(plan, beat_id, [at], quality_name, out_dir, cache=cache)[0]
    frame = min(round(at * q.fps), round(duration * q.fps) - 1)
    stills = StillCache(cache)
    kept = stills.lookup(plan, beat_id, q, frame)
    path = Path(out_dir) / f"{beat_id}@{at:g}.png"
    if kept is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, kept)
        return path
    taken = take_frames(plan, beat_id, [at], quality_name, out_dir, cache=cache)
    stills.store(plan, beat_id, q, frame, taken.paths[0].read_bytes(), list(taken.values_read))
    return taken.paths[0]


def make_sheet(plan: Plan, quality_name: str, out_path: Path, cache: Path | None = None) -> Path:
    """`make sheet`: three frames of every beat (just after it starts, its middle, just before it
    ends), each labelled with the beat's title and film time, on one PNG."""
    from PIL import Image, ImageDraw

    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sheet-", dir=out_path.parent))
    try:
        rows = []
        for beat in plan.beats:
            times = [min(0.8, beat.duration / 4), beat.duration / 2, max(0, beat.duration - 0.6)]
            frames = render_frames(plan, beat.id, times, quality_name, work,
                                   [f"{beat.id}-{index}.png" for index in range(3)], cache=cache)
            rows.append((beat, times, [Image.open(frame).convert("RGB") for frame in frames]))
        width, height = rows[0][2][0].size
        label_height = max(18, height // 9)
        gap = max(4, width // 100)
        sheet = Image.new("RGB", (3 * width + 4 * gap, len(rows) * (height + label_height + gap) + gap), "#05070a")
        draw = ImageDraw.Draw(sheet)
        font = sheet_font(int(label_height * 0.62))
        for row, (beat, times, images) in enumerate(rows):
            top = gap + row * (height + label_height + gap)
            for column, (at, image) in enumerate(zip(times, images)):
                left = gap + column * (width + gap)
                label = f"{beat.title}  ·  {timestamp(beat.start + at)}  (+{at:.1f} s)"
                draw.text((left + 4, top + label_height * 0.15), label, fill="#e9edf3", font=font)
                sheet.paste(image, (left, top + label_height))
        with atomic_path(out_path) as temporary:
            sheet.save(temporary)
        return out_path
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sheet_font(size: int):
    from PIL import ImageFont

    try:
        path = subprocess.run(["fc-match", "-f", "%{file}", "Inter"], capture_output=True, text=True).stdout.strip()
        return ImageFont.truetype(path, size)
    except (OSError, FileNotFoundError):
        return ImageFont.load_default()

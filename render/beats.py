"""Rendering beats with Manim: one beat to a video with its narration, stills and a contact sheet.

Every render reads the timed plan (numbers, words, cue times) and nothing else.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from render import audio
from render.errors import FilmError
from render.formatting import timestamp

log = logging.getLogger("film")


@dataclass(frozen=True)
class Quality:
    name: str
    width: int
    height: int
    fps: int


QUALITIES = {
    # Tests: review size (text lays out differently at very small sizes) at a low frame rate.
    "tiny": Quality("tiny", 854, 480, 3),
    "low": Quality("low", 854, 480, 15),        # review
    "medium": Quality("medium", 1280, 720, 30),
    "high": Quality("high", 1920, 1080, 60),    # the film
}
STILL_FPS = 10  # a still at another quality renders its beat at this rate, not the full one
SAFE_AREA_REPORT: dict[str, list[str]] = {}  # beat id -> what its last render drew outside the safe area
NUMBERS_READ: dict[str, list[str]] = {}      # beat id -> the shared plan values ("numbers.x") its last render read


def quality(name: str) -> Quality:
    if name not in QUALITIES:
        raise FilmError(f"unknown quality {name!r}; use one of: {', '.join(QUALITIES)}")
    return QUALITIES[name]


def load_timed_plan(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def beat_entry(timed_plan: dict, beat_id: str) -> dict:
    for beat in timed_plan["beats"]:
        if beat["id"] == beat_id:
            return beat
    known = ", ".join(beat["id"] for beat in timed_plan["beats"])
    raise FilmError(f"unknown beat {beat_id!r}; the beats are: {known}")


def render_video(timed_plan: dict, beat_id: str, q: Quality, out_path: Path, fps: int | None = None) -> Path:
    """Render one beat's pictures (no sound) with Manim into `out_path`."""
    from manim import tempconfig

    from scenes import scene_class
    from scenes.base import BeatView

    entry = beat_entry(timed_plan, beat_id)
    scene_type = scene_class(entry["scene"], beat_id)
    work = Path(tempfile.mkdtemp(prefix=f"manim-{beat_id}-", dir=out_path.parent))
    settings = {
        "pixel_width": q.width, "pixel_height": q.height, "frame_rate": fps or q.fps,
        "media_dir": str(work), "output_file": beat_id, "disable_caching": True,
        "verbosity": "WARNING", "progress_bar": "none", "write_to_movie": True, "format": "mp4",
    }
    try:
        with tempconfig(settings):
            scene = scene_type()
            scene.beat = BeatView.from_timed_plan(timed_plan, beat_id)
            scene.render()
            produced = Path(scene.renderer.file_writer.movie_file_path)
        os.replace(produced, out_path)
        for problem in sorted(scene.safe_area_violations):
            log.warning("%s: outside the safe area: %s", beat_id, problem)
        SAFE_AREA_REPORT[beat_id] = sorted(scene.safe_area_violations)
        NUMBERS_READ[beat_id] = sorted(scene.beat.reads)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out_path


def mux_beat_audio(video: Path, narration: Path, start: float, duration: float, out_path: Path) -> None:
    """The beat's slice of the narration track under its pictures, written atomically."""
    temporary = out_path.with_name(f".{out_path.name}.tmp.mp4")
    try:
        audio.run_ffmpeg(["-i", str(video), "-ss", f"{start:.6f}", "-t", f"{duration:.6f}", "-i", str(narration),
                          "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac", "-b:a", "160k",
                          "-ar", "48000", "-t", f"{duration:.6f}", "-movflags", "+faststart", "-y", str(temporary)],
                         what=f"adding the narration to {out_path.name}")
        temporary.replace(out_path)
    finally:
        temporary.unlink(missing_ok=True)


def render_beat(timed_plan_path: Path, narration: Path, beat_id: str, quality_name: str, out_dir: Path) -> Path:
    """`make scene`: the beat's video with its narration, at build/beats/<beat-id>.mp4."""
    timed_plan = load_timed_plan(timed_plan_path)
    entry = beat_entry(timed_plan, beat_id)
    q = quality(quality_name)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    silent = out_dir / f".{beat_id}.{q.name}.video.mp4"
    render_video(timed_plan, beat_id, q, silent)
    out_path = out_dir / f"{beat_id}.mp4"
    mux_beat_audio(silent, narration, entry["start"], entry["end"] - entry["start"], out_path)
    silent.unlink(missing_ok=True)
    log.info("rendered %s at %s (%dx%d, %d fps) in %.1f s", beat_id, q.name, q.width, q.height, q.fps,
             time.perf_counter() - started)
    return out_path


def extract_frame(video: Path, frame_index: int, out_path: Path) -> None:
    temporary = out_path.with_name(f".{out_path.name}.tmp.png")
    try:
        audio.run_ffmpeg(["-i", str(video), "-vf", f"select=eq(n\\,{frame_index})", "-vsync", "0",
                          "-frames:v", "1", "-y", str(temporary)], what=f"extracting frame {frame_index}")
        if not temporary.exists():
            raise FilmError(f"{video} has no frame {frame_index}")
        temporary.replace(out_path)
    finally:
        temporary.unlink(missing_ok=True)


def render_frames(timed_plan: dict, beat_id: str, times: list[float], quality_name: str, out_dir: Path,
                  names: list[str] | None = None) -> list[Path]:
    """Frames of one beat at `times` (seconds into the beat), from one render, as PNGs.

    The beat is rendered at the quality's size but at a low frame rate (the quality's own
    when lower), several times faster than the full render; it draws the same frame at each
    moment, because every animation is a function of time, not of frame count.
    """
    entry = beat_entry(timed_plan, beat_id)
    duration = entry["end"] - entry["start"]
    for at in times:
        if not 0 <= at < duration:
            raise FilmError(f"AT={at:g} is outside beat {beat_id!r}, which lasts {duration:g} s "
                            f"(0 <= AT < {duration:g})")
    q = quality(quality_name)
    fps = min(q.fps, STILL_FPS)
    out_dir.mkdir(parents=True, exist_ok=True)
    video = out_dir / f".{beat_id}.{q.name}.{fps}fps.mp4"
    try:
        render_video(timed_plan, beat_id, q, video, fps=fps)
        paths = []
        for at, name in zip(times, names or [f"{beat_id}@{at:g}.png" for at in times]):
            path = out_dir / name
            extract_frame(video, min(round(at * fps), round(duration * fps) - 1), path)
            paths.append(path)
        return paths
    finally:
        video.unlink(missing_ok=True)


def render_still(timed_plan_path: Path, beat_id: str, at: float, quality_name: str, out_dir: Path) -> Path:
    """`make still`: the frame at `at` seconds into the beat, as build/stills/<beat-id>@<at>.png."""
    return render_frames(load_timed_plan(timed_plan_path), beat_id, [at], quality_name, out_dir)[0]


def make_sheet(timed_plan_path: Path, quality_name: str, out_path: Path) -> Path:
    """`make sheet`: three frames of every beat (just after it starts, its middle, just before it
    ends), each labelled with the beat's title and film time, on one PNG."""
    from PIL import Image, ImageDraw

    timed_plan = load_timed_plan(timed_plan_path)
    work = Path(tempfile.mkdtemp(prefix="sheet-", dir=out_path.parent))
    try:
        rows = []
        for beat in timed_plan["beats"]:
            duration = beat["end"] - beat["start"]
            times = [min(0.8, duration / 4), duration / 2, max(0, duration - 0.6)]
            frames = render_frames(timed_plan, beat["id"], times, quality_name, work,
                                   [f"{beat['id']}-{index}.png" for index in range(3)])
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
                film_time = beat["start"] + at
                label = f"{beat['title']}  ·  {timestamp(film_time)}  (+{at:.1f} s)"
                draw.text((left + 4, top + label_height * 0.15), label, fill="#e9edf3", font=font)
                sheet.paste(image, (left, top + label_height))
        temporary = out_path.with_name(f".{out_path.name}.tmp.png")
        sheet.save(temporary)
        temporary.replace(out_path)
        return out_path
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sheet_font(size: int):
    from PIL import ImageFont
    import subprocess

    try:
        path = subprocess.run(["fc-match", "-f", "%{file}", "Inter"], capture_output=True, text=True).stdout.strip()
        return ImageFont.truetype(path, size)
    except (OSError, FileNotFoundError):
        return ImageFont.load_default()

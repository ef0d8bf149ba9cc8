"""The publishing kit written beside every film: what a publisher needs besides the MP4.

    youtube-description.txt   title, a one-line summary with the film's own numbers, chapters
                              (0:00 first, as YouTube turns them into chapters) and the sources
    transcript.txt            the whole narration, beat by beat with timestamps: the film's text
                              alternative
    thumbnail.jpg             1280x720, under 2 MB: the roofline picture with the title, large
                              enough to read at a thumbnail's size

Everything is read from the timed plan and the finished film; every file is written atomically.
"""

from __future__ import annotations

import io
import subprocess
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from render.errors import FilmError
from render.files import write_atomic
from render.text import clean_text, description_line
from render.plan.types import Plan

THUMBNAIL_SIZE = (1280, 720)
THUMBNAIL_LIMIT = 2 * 1024 * 1024  # YouTube's limit for a custom thumbnail
FRAME_DROP = 128


@dataclass(frozen=True)
class Kit:
    description: Path
    transcript: Path
    thumbnail: Path


def write_kit(plan: Plan, poster: Path, folder: Path) -> Kit:
    """The three files, beside the film, from the timed plan and the film's poster frame."""
    description = folder / "youtube-description.txt"
    transcript = folder / "transcript.txt"
    write_atomic(description, description_text(plan))
    write_atomic(transcript, transcript_text(plan))
    thumbnail = make_thumbnail(plan, poster, folder / "thumbnail.jpg")
    return Kit(description, transcript, thumbnail)


def clock(seconds: float) -> str:
    """Whole seconds as YouTube writes a chapter's start: 0:00, 1:07, 1:02:03."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def chapters(plan: Plan) -> list[str]:
    """One line per beat; YouTube needs the first at 0:00, three or more, each at least 10 s long."""
    lines = [f"{clock(beat.start)} {beat.title}" for beat in plan.beats]
    if plan.beats and plan.beats[0].start != 0:
        raise FilmError("the storyboard's first beat must start at 0:00 for YouTube chapters")
    return lines


def sources(plan: Plan) -> list[str]:
    choice, measured = plan.choice, plan.measured
    found = [f"The film this follows: {plan.source}",
             f"{choice.gpu.name}: {clean_text(choice.gpu.source)}"]
    if choice.gpus > 1:
        found.append(f"{choice.gpu.name} interconnect: {clean_text(choice.gpu.interconnect_source)}")
    found += [f"{choice.compare_gpu.name}: {clean_text(choice.compare_gpu.source)}",
              f"{choice.model.name}: {clean_text(choice.model.source)}",
              f"{choice.dtype.name}: {clean_text(choice.dtype.source)}",
              f"Measured timings ({measured.dataset.provider}): {clean_text(measured.dataset.source)}"]
    return found


def description_text(plan: Plan) -> str:
    parts = [f"{plan.title}: {plan.choice.long_label}", "", plan.summary, "", "Chapters", *chapters(plan), "",
             "Every number is computed by a roofline model from the datasheets and model configs below "
             "(dense peaks; no overlap of arithmetic, memory traffic and communication assumed)"
             + (f"; the expected ones at {plan.choice.efficiency.described}." if plan.choice.efficiency else "."), "",
             "Sources", *[f"- {line}" for line in sources(plan)]]
    if plan.notes:
        parts += ["", "Notes", *[f"- {note}" for note in plan.notes]]
    # Each part one line, whatever a name or a source holds: nothing can add a chapter line.
    return "\n".join(map(description_line, parts)) + "\n"


def transcript_text(plan: Plan) -> str:
    parts = [f"{plan.title}: {plan.choice.long_label}", f"Transcript ({clock(plan.duration)})", ""]
    for beat in plan.beats:
        start = beat.timing.speech_start if beat.timing else beat.start
        parts += [f"[{clock(start)}] {beat.title}", beat.narration, ""]
    return "\n".join(map(clean_text, parts))


def font_file(bold: bool) -> str | None:
    """The film's typeface from fontconfig (Inter, else any sans-serif)."""
    for name in ("Inter", "DejaVu Sans", "sans-serif"):
        try:
            found = subprocess.run(["fc-match", "-f", "%{file}", f"{name}:{'bold' if bold else 'regular'}"],
                                   capture_output=True, text=True, timeout=10, check=False).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return None
        if found:
            return found
    return None


def font(size: int, bold: bool = False) -> ImageFont.ImageFont:
    path = font_file(bold)
    return ImageFont.truetype(path, size) if path else ImageFont.load_default(size)


def make_thumbnail(plan: Plan, poster: Path, out_path: Path) -> Path:
    """The roofline frame, scaled to 1280x720, under a band with the title and the deployment."""
    try:
        frame = Image.open(poster).convert("RGB")
    except OSError as error:
        raise FilmError(f"{poster}: cannot read the poster frame for the thumbnail ({error})") from None
    width, height = THUMBNAIL_SIZE
    # The frame moves down under the title band, so the roof and the ridge stay in sight (its bottom
    # margin, the axis title, goes).
    picture = Image.new("RGB", THUMBNAIL_SIZE, frame.getpixel((2, 2)))
    picture.paste(frame.resize(THUMBNAIL_SIZE, Image.Resampling.LANCZOS), (0, FRAME_DROP))
    band = Image.new("RGBA", THUMBNAIL_SIZE, (0, 0, 0, 0))
    ImageDraw.Draw(band).rectangle([0, 0, width, 240], fill=(11, 13, 18, 255))
    picture = Image.alpha_composite(picture.convert("RGBA"), band).convert("RGB")
    draw = ImageDraw.Draw(picture)
    title_font = font(128, bold=True)
    draw.text((56, 28), plan.title, font=title_font, fill=(246, 247, 249))
    draw.text((60, 178), plan.choice.label, font=font(48), fill=(255, 196, 92))
    buffer = io.BytesIO()
    for quality in (90, 80, 70, 60):
        buffer = io.BytesIO()
        picture.save(buffer, "JPEG", quality=quality, optimize=True)
        if buffer.tell() < THUMBNAIL_LIMIT:
            break
    write_atomic(out_path, buffer.getvalue())
    return out_path

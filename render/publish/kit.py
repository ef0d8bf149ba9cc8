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

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from render.errors import FilmError
from render.files import write_atomic
from render.text import clean_text, description_line
from render.plan.types import Plan

THUMBNAIL_SIZE = (1280, 720)
THUMBNAIL_LIMIT = 2 * 1024 * 1024  # YouTube's limit for a custom thumbnail
BAND_HEIGHT = 210         # the title band across the top
BAND_COLOUR = (11, 13, 18)
THUMBNAIL_MARGIN = 24     # clear pixels between the picture and the band or an edge
TEXT_LEFT = 56
INK_LEVEL = 24            # grey levels from the background that count as drawn
TITLE_WIDTH = 0.45        # the share of the frame's width a beat's title block may take


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
        parts += ["", "Notes", *[f"- {note.text}" for note in plan.notes]]  # (the settings are the project's)
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


def runs(flags: np.ndarray, gap: int) -> list[tuple[int, int]]:
    """The runs of True in `flags` (start, end), joined across gaps shorter than `gap`."""
    found: list[list[int]] = []
    for index in np.flatnonzero(flags):
        if found and index - found[-1][1] < gap:
            found[-1][1] = index + 1
        else:
            found.append([index, index + 1])
    return [(start, end) for start, end in found]


def line_end(ink: np.ndarray, top: int, bottom: int, above: int, below: int) -> int:
    """Where the words of the line drawn in rows top..bottom end: its glyphs follow each other closer than the
    line's height, and each lies within the rows from `above` to `below` (the space up to the lines around it)
    without reaching their edges; a pill or a chart beside the line is taller and does."""
    glyphs = runs(ink[top:bottom].any(axis=0), 2)
    end = glyphs[0][1]
    for start, stop in glyphs[1:]:
        rows = np.flatnonzero(ink[above:below, start:stop].any(axis=1))
        if start - end > bottom - top or rows[0] == 0 or rows[-1] == below - above - 1:
            break
        end = stop
    return end


def without_title(frame: Image.Image) -> Image.Image:
    """The frame with the beat's own title and deployment line painted over (the thumbnail's band says them,
    larger): the lines of text at its top left that start where the title starts, each up to where its words
    end."""
    grey = np.asarray(frame.convert("L"), dtype=float)
    ink = np.abs(grey - np.median(grey[:4, :4])) > INK_LEVEL
    height, width = ink.shape
    left_part = ink[:, : int(width * TITLE_WIDTH)]
    drawn = np.flatnonzero(left_part.any(axis=0))
    cleared = frame.copy()
    if not drawn.size:
        return cleared
    title_left = int(drawn[0])
    draw = ImageDraw.Draw(cleared)
    # The lines, told apart by the rows drawn just right of the title's left edge (a pill beside a line is not).
    lines = runs(left_part[:, title_left:title_left + max(4, width // 40)].any(axis=1), 2)
    for index, (top, bottom) in enumerate(lines):
        if index and top - lines[index - 1][1] > lines[0][1] - lines[0][0]:
            break  # past the title block: the picture begins
        if abs(int(np.flatnonzero(left_part[top:bottom].any(axis=0))[0]) - title_left) > width // 100:
            break
        line = bottom - top
        above = lines[index - 1][1] + 1 if index else max(0, top - line)
        below = lines[index + 1][0] - 1 if index + 1 < len(lines) else min(height, bottom + line)
        right = line_end(ink, top, bottom, above, below)
        draw.rectangle([title_left - 2, top - 2, right + 2, bottom + 2], fill=frame.getpixel((2, 2)))
    return cleared


def picture_box(frame: Image.Image) -> tuple[int, int, int, int]:
    """Where the frame's picture lies (left, top, right, bottom): its pixels unlike the background."""
    grey = np.asarray(frame.convert("L"), dtype=float)
    ink = np.abs(grey - np.median(grey[:4, :4])) > INK_LEVEL
    rows, columns = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if not rows.size:
        return 0, 0, frame.width, frame.height
    return int(columns[0]), int(rows[0]), int(columns[-1]) + 1, int(rows[-1]) + 1


def fitted_font(text: str, size: int, width: int, bold: bool = False) -> ImageFont.ImageFont:
    """The font at `size`, or smaller until `text` fits `width` pixels (a long deployment's label)."""
    while size > 12 and font(size, bold).getlength(text) > width:
        size -= 2
    return font(size, bold)


def make_thumbnail(plan: Plan, poster: Path, out_path: Path) -> Path:
    """The roofline frame's picture, scaled whole into the space under a band with the title and the deployment
    (nothing under the band, nothing cut by the edges), 1280x720."""
    try:
        frame = Image.open(poster).convert("RGB")
    except OSError as error:
        raise FilmError(f"{poster}: cannot read the poster frame for the thumbnail ({error})") from None
    width, height = THUMBNAIL_SIZE
    frame = without_title(frame)
    left, top, right, bottom = picture_box(frame)
    room = (width - 2 * THUMBNAIL_MARGIN, height - BAND_HEIGHT - 2 * THUMBNAIL_MARGIN)
    scale = min(room[0] / (right - left), room[1] / (bottom - top))
    size = (round((right - left) * scale), round((bottom - top) * scale))
    picture = Image.new("RGB", THUMBNAIL_SIZE, frame.getpixel((2, 2)))
    picture.paste(frame.crop((left, top, right, bottom)).resize(size, Image.Resampling.LANCZOS),
                  ((width - size[0]) // 2, BAND_HEIGHT + THUMBNAIL_MARGIN + (room[1] - size[1]) // 2))
    draw = ImageDraw.Draw(picture)
    draw.rectangle([0, 0, width, BAND_HEIGHT], fill=BAND_COLOUR)
    words = width - 2 * TEXT_LEFT
    draw.text((TEXT_LEFT, 16), plan.title, font=fitted_font(plan.title, 112, words, bold=True), fill=(246, 247, 249))
    draw.text((TEXT_LEFT + 4, 146), plan.choice.label, font=fitted_font(plan.choice.label, 44, words),
              fill=(255, 196, 92))
    buffer = io.BytesIO()
    for quality in (90, 80, 70, 60):
        buffer = io.BytesIO()
        picture.save(buffer, "JPEG", quality=quality, optimize=True)
        if buffer.tell() < THUMBNAIL_LIMIT:
            break
    write_atomic(out_path, buffer.getvalue())
    return out_path

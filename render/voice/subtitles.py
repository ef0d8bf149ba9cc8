"""Subtitles: the narration's written words in cues of at most two lines of 42 characters,
split at sentence and clause boundaries and timed from the audio of their own words."""

from __future__ import annotations

import re
from dataclasses import dataclass

from render.plan.types import Subtitle
from render.text import clean_text, cue_text_srt, cue_text_vtt

MAX_LINE = 42
MAX_LINES = 2
# Words a long clause is best split before ("... teraflops / but only 1.6 times ...").
JOINING_WORDS = {"and", "but", "so", "while", "with", "for", "because", "then", "or", "past", "instead"}

WEAK_LINE_ENDS = {"a", "an", "the", "of", "to", "at", "in", "on", "by", "for", "is", "its", "per"}

CLAUSE_END = re.compile(r"(?<=[,;:.!?])\s+")
SENTENCE_END = (".", "!", "?", ":", ";")


@dataclass(frozen=True)
class TextUnit:
    """A stretch of narration that can be subtitled on its own."""

    offset: int          # character offset in the beat's narration
    text: str
    clause: int          # index of the clause it belongs to
    ends_sentence: bool  # a full stop, colon or semicolon closes it


def clauses(narration: str) -> list[tuple[int, str]]:
    """(offset, text) of each clause: split after , ; : . ! ? followed by a space."""
    result, cursor = [], 0
    for match in CLAUSE_END.finditer(narration):
        result.append((cursor, narration[cursor:match.start()]))
        cursor = match.end()
    if cursor < len(narration):
        result.append((cursor, narration[cursor:]))
    return result


def wrap(text: str, width: int = MAX_LINE, lines: int = MAX_LINES) -> tuple[str, ...] | None:
    """The most balanced split into at most `lines` lines of at most `width`, or None."""
    if len(text) <= width:
        return (text,)
    if lines < 2:
        return None
    words = text.split(" ")
    best = None
    for cut in range(1, len(words)):
        first = " ".join(words[:cut])
        if len(first) > width:
            break
        rest = wrap(" ".join(words[cut:]), width, lines - 1)
        if rest is None:
            continue
        candidate = (first, *rest)
        # Balanced lines; never a line that ends on "a", "the", "of" ... cut from its noun.
        score = max(map(len, candidate)) + (10 if words[cut - 1].lower() in WEAK_LINE_ENDS else 0)
        if best is None or score < best[0]:
            best = (score, candidate)
    return best[1] if best else None


def text_units(narration: str) -> list[TextUnit]:
    """Clauses, with any too long for one cue split at the best word boundary."""
    units = []
    for index, (offset, text) in enumerate(clauses(narration)):
        ends_sentence = text.endswith(SENTENCE_END)
        pieces = split_to_fit(text)
        position = offset
        for number, piece in enumerate(pieces):
            position = narration.index(piece, position)
            units.append(TextUnit(position, piece, index, ends_sentence and number == len(pieces) - 1))
            position += len(piece)
    return units


def split_to_fit(text: str) -> list[str]:
    if wrap(text) is not None:
        return [text]
    words = text.split(" ")
    best = None
    for cut in range(1, len(words)):
        head, tail = " ".join(words[:cut]), " ".join(words[cut:])
        if wrap(head) is None:
            break
        # Balanced halves, preferring a cut before a joining word.
        score = abs(len(head) - len(tail)) - (12 if words[cut].lower() in JOINING_WORDS else 0)
        if best is None or score < best[0]:
            best = (score, head, tail)
    if best is None:  # a single word longer than a cue: let it stand
        return [text]
    return [best[1], *split_to_fit(best[2])]


TimedUnit = tuple[TextUnit, float, float]  # a unit and the film times its words start and end

MAX_CPS = 17.0          # characters a second a viewer reads comfortably (spaces count)
MIN_CUE_SECONDS = 1.0   # no cue flashes by quicker
JOIN_GAP = 0.5          # a cue held to within this of the next runs on to it (no flicker between them)


def cue_groups(units: list[TimedUnit]) -> list[list[TimedUnit]]:
    """Consecutive units of one sentence joined into cues while they still fit two lines."""
    groups: list[list[TimedUnit]] = []
    for item in units:
        if groups:
            current = groups[-1]
            joined = " ".join(unit.text for unit, _, _ in current) + " " + item[0].text
            if not current[-1][0].ends_sentence and wrap(joined) is not None:
                current.append(item)
                continue
        groups.append([item])
    return groups


def reading_seconds(text: str) -> float:
    """How long a cue of `text` stays up at the least: read at MAX_CPS, and never under MIN_CUE_SECONDS."""
    return max(MIN_CUE_SECONDS, len(text) / MAX_CPS)


def group_text(group: list[TimedUnit]) -> str:
    return " ".join(unit.text for unit, _, _ in group)


def reading_pauses(groups: list[list[TimedUnit]], slack: float) -> dict[int, float]:
    """Silence to add so each cue can be read before the next replaces it: {the next cue's character offset:
    seconds}, the pause before that cue's first word (after a clause, or a breath inside a long one). Together no
    more than `slack` (the beat's time after its speech), shared in proportion when that is short."""
    wanted: dict[int, float] = {}
    for group, following in zip(groups, groups[1:]):
        lacking = reading_seconds(group_text(group)) - (following[0][1] - group[0][1])
        if lacking > 0:
            wanted[following[0][0].offset] = lacking + 0.02  # a frame or so over: rounding never leaves it short
    total = sum(wanted.values())
    scale = min(1.0, max(0.0, slack) / total) if total else 1.0
    return {offset: seconds * scale for offset, seconds in wanted.items()}


def pack(units: list[TimedUnit], until: float | None = None) -> list[Subtitle]:
    """The cues: each from its first word until read (held into the pause after it, up to the next cue, and to
    the next cue when that is near), never before its last word ends nor past `until` (the beat's end)."""
    groups = cue_groups(units)
    cues = []
    for index, group in enumerate(groups):
        text, start, spoken_end = group_text(group), group[0][1], group[-1][2]
        limit = groups[index + 1][0][1] if index + 1 < len(groups) else until if until is not None else spoken_end
        end = max(spoken_end, start + reading_seconds(text))
        if index + 1 < len(groups) and limit - end < JOIN_GAP:
            end = limit
        cues.append(Subtitle(start, max(spoken_end, min(end, limit)), wrap(text) or (text,)))
    return cues


def caption_problems(cues: list[Subtitle], end: float) -> list[str]:
    """What makes a beat's cues hard to read: one faster than MAX_CPS or shorter than MIN_CUE_SECONDS, one over
    the next or past the beat's `end`."""
    problems = []
    for index, cue in enumerate(cues):
        text, seconds = " ".join(cue.lines), cue.end - cue.start
        if len(text) / seconds > MAX_CPS + 1e-6 or seconds < MIN_CUE_SECONDS - 1e-6:
            problems.append(f"{text!r}: {len(text)} characters in {seconds:.2f} s ({len(text) / seconds:.1f} a "
                            f"second; at most {MAX_CPS:g}, and at least {MIN_CUE_SECONDS:g} s)")
        if index + 1 < len(cues) and cue.end > cues[index + 1].start + 1e-6:
            problems.append(f"{text!r} is still up when the next cue starts")
        if cue.end > end + 1e-6:
            problems.append(f"{text!r} runs past the beat's end")
    return problems


def timestamp(seconds: float, separator: str) -> str:
    milliseconds = round(seconds * 1000)
    hours, rest = divmod(milliseconds, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def to_srt(cues: list[Subtitle]) -> str:
    blocks = [f"{number}\n{timestamp(cue.start, ',')} --> {timestamp(cue.end, ',')}\n"
              + "\n".join(cue_text_srt(clean_text(line)) for line in cue.lines) for number, cue in enumerate(cues, 1)]
    return "\n\n".join(blocks) + "\n"


def to_vtt(cues: list[Subtitle], title: str = "") -> str:
    title = clean_text(title).replace("-->", "->")
    header = f"WEBVTT{(' - ' + title) if title else ''}\n"
    blocks = [f"{timestamp(cue.start, '.')} --> {timestamp(cue.end, '.')}\n"
              + "\n".join(cue_text_vtt(clean_text(line)) for line in cue.lines) for cue in cues]
    return header + "\n" + "\n\n".join(blocks) + "\n"

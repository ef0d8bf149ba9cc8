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


def pack(units: list[tuple[TextUnit, float, float]]) -> list[Subtitle]:
    """Join consecutive units of one sentence into cues while they still fit two lines."""
    cues: list[Subtitle] = []
    current: list[tuple[TextUnit, float, float]] = []

    def flush():
        if current:
            text = " ".join(unit.text for unit, _, _ in current)
            cues.append(Subtitle(current[0][1], current[-1][2], wrap(text) or (text,)))
            current.clear()

    for item in units:
        if current:
            joined = " ".join(unit.text for unit, _, _ in current) + " " + item[0].text
            if current[-1][0].ends_sentence or wrap(joined) is None:
                flush()
        current.append(item)
    flush()
    return cues


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

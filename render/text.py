"""Free text from users, configs and servers (a model's name, a label, what an endpoint reports), made
safe where it enters and escaped for each format it reaches.

Where it enters, `clean_text` takes out control characters (newlines, ESC sequences, NULs) and limits
the length, so a name can never add a line to a file or move a terminal's cursor. Where it leaves,
each format's own escape: WebVTT and SRT cue text (players render cue markup), the description
(YouTube refuses angle brackets), and terminals.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

NAME_LENGTH = 80  # a model's or GPU's name on screen, in titles and in file names

# C0 and C1 controls, DEL, and the Unicode format characters that reorder or hide text (bidi overrides,
# zero-width joiners and the like).
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
ESCAPE_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def control_characters(text: str) -> list[str]:
    """The control characters in `text`, as they would be written in Python ('\\n', '\\x1b')."""
    return sorted({repr(char)[1:-1] for char in CONTROL.findall(text)})


def clean_text(text: str, limit: int | None = None) -> str:
    """One line of plain text: escape sequences and control characters gone (a line break or tab becomes a
    space), whitespace collapsed, at most `limit` characters."""
    text = ESCAPE_SEQUENCE.sub("", unicodedata.normalize("NFC", str(text)))
    text = " ".join(CONTROL.sub(" ", text).split())
    return text[:limit].rstrip() if limit is not None and len(text) > limit else text


TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def terminal_text(text: str) -> str:
    """Text for a terminal, its lines kept: escape sequences and every other control character taken out, so
    nothing a server or a file said can set the window's title, move the cursor or clear the screen."""
    return TERMINAL_CONTROL.sub("", ESCAPE_SEQUENCE.sub("", str(text)))


def cue_text_vtt(text: str) -> str:
    """WebVTT cue text: '&', '<' and '>' as character references, so no name becomes markup (or '-->')."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cue_text_srt(text: str) -> str:
    """SRT has no escapes and players render its <i>, <b> and <font> tags: angle brackets become the
    single guillemets that look like them, and braces (ASS-style {\\an8} overrides) their fullwidth forms."""
    return text.translate(str.maketrans({"<": "‹", ">": "›", "{": "｛", "}": "｝"}))


def description_line(text: str) -> str:
    """A line of the description: YouTube refuses '<' and '>' in one, so they become guillemets."""
    return clean_text(text).translate(str.maketrans({"<": "‹", ">": "›"}))


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to fit; the last column (the source) is left to run on."""
    rows = [[clean_text(str(cell)) for cell in row] for row in rows]  # nothing a terminal would obey
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for row in [header, *rows]:
        cells = [str(cell).ljust(width) for cell, width in zip(row, widths)]
        lines.append("  ".join([*cells, clean_text(str(row[-1]))]))
    return "\n".join(lines)


ECHO_LENGTH = 80  # what of a wrong value a message repeats: enough to recognise it, never a screenful


def echo(value: object, limit: int = ECHO_LENGTH) -> str:
    """A value as a message repeats it (Python's repr, as the user can find it in the file), cut to `limit`
    characters with its full length said: a 1.5 MB string is one readable line, not 1.5 MB of error."""
    text = repr(value) if not isinstance(value, str) or len(value) <= 4 * limit else repr(value[:4 * limit])
    length = len(value) if isinstance(value, str) else len(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()}… ({length:,} characters)"


def whole_number_in(text: str, low: int, high: int) -> int:
    """A whole number from `low` to `high` (commas and underscores allowed), or a ValueError that says why not."""
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise ValueError(f"{echo(text)} is not a whole number") from None
    if value < low:
        raise ValueError(f"must be at least {low}, not {text}" if low else f"must not be negative, not {text}")
    if value > high:
        raise ValueError(f"at most {high:,}, not {text}")
    return value

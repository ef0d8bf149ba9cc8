"""The one error type a user sees: a clear message, no traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from render.text import echo


class FilmError(Exception):
    """Bad input or an impossible choice. The message names the file, the place and the fix."""

    def with_prefix(self, prefix: str) -> "FilmError":
        """The same error, located: 'script/storyboard.yaml:23: beat 'prefill': ...'."""
        return FilmError(prefix + str(self))


class DoesNotFit(FilmError):
    """A deployment its GPUs cannot hold: too little memory, or a GPU count that cannot split the
    model's heads. The film refuses it, rightly; nothing the storyboard or the voice could change."""


class SpeechOverrun(FilmError):
    """A beat's speech that does not fit its slot even at the storyboard's maximum tempo."""

    def __init__(self, message: str, beat: str, seconds: float, tempo: float, available: float):
        super().__init__(message)
        self.beat, self.seconds, self.tempo, self.available = beat, seconds, tempo, available


def close_matches(word: str, known: Iterable[str], limit: int = 3) -> list[str]:
    """Known names that look like `word`: spelling neighbours first, then substrings."""
    known = list(known)
    matches = difflib.get_close_matches(word, known, n=limit, cutoff=0.6)
    lowered = word.lower()
    for name in known:
        if len(matches) >= limit:
            break
        if name not in matches and lowered and (lowered in name.lower() or name.lower() in lowered):
            matches.append(name)
    return matches


def unknown_name_error(kind: str, word: str, known: Iterable[str], where: str) -> FilmError:
    """'unknown GPU 'h100' ... did you mean h100-sxm? Known GPUs: ...' with the file that lists them."""
    known = sorted(known)
    message = f"unknown {kind} {echo(word)}"
    suggestions = close_matches(word, known)
    if suggestions:
        message += f"; did you mean {', '.join(suggestions)}?"
    message += f"\nKnown {kind}s ({where}): {', '.join(known)}"
    return FilmError(message)

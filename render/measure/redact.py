"""What an endpoint's messages may carry out of the program: the API key taken out of every text (however the
server escaped, split or decorated it) before it is shown, logged or written, and the server's own words from an
error body."""

from __future__ import annotations

import html.entities
import json
import re
import sys
import unicodedata

from render.text import clean_text

REDACTED = "***"


def server_message(body: bytes | str, redact=lambda text: text) -> str:
    """The server's own words from an error body: OpenAI's {"error": {"message": …}}, or whatever it sent.
    The secret is taken out of the whole text before it is cut to length, so no part of it survives."""
    text = body.decode(errors="replace") if isinstance(body, bytes) else body
    text = text.strip()

    def words(found: str) -> str:  # the secret out first (its characters may be split by what cleaning takes out)
        return clean_text(redact(found))[:300]

    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return words(text)
    error = document.get("error", document) if isinstance(document, dict) else document
    if isinstance(error, dict):
        for key in ("message", "detail", "msg"):
            if isinstance(error.get(key), str):
                return words(error[key])
    if isinstance(error, str):
        return words(error)
    return words(text)


MIN_KEY_LENGTH = 8  # a shorter "key" is ordinary text: hiding it would damage numbers, routes and names


class Redactor:
    """Replaces a secret wherever its characters stand in text that leaves the program: glued to letters
    (`keysk-…XYZend`) or split by spaces, line breaks or characters a reader does not see. What is compared is the
    text as a reader would see it (`readable`): escapes decoded (HTML entities in every spelling, JSON's \\u0073,
    \\x73, URL's %73, a JSON-escaped slash, each twice over), every default-ignorable code point dropped (zero-width
    spaces and joiners, soft hyphens, variation selectors, tags) and whitespace dropped; what is replaced is every
    character the secret was written with. (A key is at least MIN_KEY_LENGTH characters, so the match is on its
    characters alone, not on word boundaries.) Each character is compared as a reader takes it (`folded`): fullwidth,
mathematical and other compatibility letters as their plain forms, combining marks dropped."""

    def __init__(self, secret: str | None):
        self.secret = "".join(piece for char in secret if not invisible(char) for piece in folded(char)
                              if not piece.isspace()) if secret else secret

    def __call__(self, text: str) -> str:
        if not self.secret or not text:
            return text
        seen, spans = readable(text)
        kept = [index for index, char in enumerate(seen) if not char.isspace()]
        seen, spans = "".join(seen[index] for index in kept), [spans[index] for index in kept]
        cuts: list[tuple[int, int]] = []
        start = seen.find(self.secret)
        while start >= 0:
            end = start + len(self.secret)
            cuts.append((spans[start][0], spans[end - 1][1]))
            start = seen.find(self.secret, start + 1)
        if not cuts:
            return text
        pieces, cursor = [], 0
        for begin, finish in cuts:
            if begin >= cursor:
                pieces += [text[cursor:begin], REDACTED]
            cursor = max(cursor, finish)
        return "".join(pieces) + text[cursor:]


# An escape a server may write a character with: &#115; &#0115; &#x73; &#X73; &sol; &amp; \u0073 \x73 %73 \/
ESCAPED = re.compile(r"&#[xX](?P<hex>[0-9a-fA-F]{1,8});?|&#(?P<decimal>[0-9]{1,10});?"
                     r"|&(?P<name>[A-Za-z][A-Za-z0-9]{1,31};?)|\\u(?P<u>[0-9a-fA-F]{4})|\\x(?P<x>[0-9a-fA-F]{2})|%(?P<percent>[0-9a-fA-F]{2})|\\(?P<slash>/)")
# What a terminal or a page shows as nothing (or as a mere break): Unicode's default-ignorable code points (zero-width
# spaces and joiners, soft hyphens, bidi controls, variation selectors, tags, the BOM, Hangul fillers), line and
# paragraph breaks, and the other controls. (DerivedCoreProperties.txt, Default_Ignorable_Code_Point.)
DEFAULT_IGNORABLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
                               "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
                               "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff\u2028\u2029]")


def invisible(char: str) -> bool:
    return DEFAULT_IGNORABLE.match(char) is not None or unicodedata.category(char) in ("Cf", "Cc")


def readable(text: str, passes: int = 2) -> tuple[str, list[tuple[int, int]]]:
    """`text` as it reads once its escapes are decoded (`passes` times over: &amp;#115; is &#115; is s) and its
    invisible characters dropped, and for each character of that, the span of `text` it was written with."""
    seen, spans = text, [(index, index + 1) for index in range(len(text))]
    for _ in range(passes):
        decoded, mapped = [], []
        cursor = 0
        for found in ESCAPED.finditer(seen):
            for index in range(cursor, found.start()):
                decoded.append(seen[index])
                mapped.append(spans[index])
            span = (spans[found.start()][0], spans[found.end() - 1][1])
            value = escaped_value(found)
            if value is None:  # not an escape after all (&nbsp-like text that names nothing): kept as written
                value = found.group(0)
                decoded += list(value)
                mapped += spans[found.start():found.end()]
            else:
                decoded += list(value)
                mapped += [span] * len(value)
            cursor = found.end()
        for index in range(cursor, len(seen)):
            decoded.append(seen[index])
            mapped.append(spans[index])
        if decoded == list(seen):
            break
        seen, spans = "".join(decoded), mapped
    out: list[str] = []
    mapped = []
    for char, span in zip(seen, spans):
        if invisible(char):
            continue
        pieces = folded(char)
        if not pieces:  # a combining mark: the character before it is read with it, so it goes where that goes
            if mapped:
                mapped[-1] = (mapped[-1][0], max(mapped[-1][1], span[1]))
            continue
        out += pieces
        mapped += [span] * len(pieces)
    return "".join(out), mapped


def folded(char: str) -> str:
    """A character as a reader takes it: its compatibility form (fullwidth and mathematical letters, circled
    digits, ligatures: NFKC), combining marks (U+0332 under each letter, accents) dropped."""
    if char.isascii():
        return char  # the fast path: most text, and every line of a stream
    return "".join(piece for piece in unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", char))
                   if not unicodedata.combining(piece) and unicodedata.category(piece) not in ("Mn", "Me"))


def escaped_value(found: re.Match) -> str | None:
    """The text an escape stands for, or None where it stands for nothing."""
    if found.group("name"):
        name = found.group("name")
        return html.entities.html5.get(name) or (html.entities.html5.get(name + ";") if not name.endswith(";")
                                                  else None)
    if found.group("slash"):
        return "/"
    digits = next(group for group in ("hex", "decimal", "u", "x", "percent") if found.group(group))
    code = int(found.group(digits), 10 if digits == "decimal" else 16)
    return chr(code) if 0 < code <= sys.maxunicode and not 0xD800 <= code <= 0xDFFF else None

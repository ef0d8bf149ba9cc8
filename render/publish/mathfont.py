"""The film's page sets its formulas in Noto Sans Math, an OpenType maths font (with the MATH table a browser lays
out MathML by) whose letters are sans, as the film's formulas are: Chromium's own maths face is a serif. The page
ships it inside itself, cut to the glyphs its formulas use, as WOFF2 in a data: URL (a page opened from disk may not
load a font file beside it), so it needs nothing from the network and no font installed where it is read.
Its words are set in the film's own face, Inter, shipped the same way (its regular, semibold and italic, each cut to
the characters the page shows), so a reader without Inter installed sees the film's letters and one face for every
digit.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import re
import string
from pathlib import Path

from render.memo import key_of, remembered


MATH_FONT = "Noto Sans Math"
# Noto Sans Math 3.000 (Google, SIL Open Font License 1.1: fonts/OFL.txt), as @fontsource/noto-sans-math 5.3.0 ships
# it: Debian's (2020) has no MATH table.
FONT_FILE = Path(__file__).parent / "fonts" / "NotoSansMath-Regular.woff2"
# ASCII, a few operators, and the mathematical italic letters a browser draws a one-letter <mi> with (U+1D434 on, with
# ℎ for h): without them W, B, C and k fell back to a serif face.
MATH_ITALIC = "".join(chr(code) for code in range(0x1D434, 0x1D468) if code != 0x1D455) + "\u210e"
ALWAYS = string.ascii_letters + string.digits + string.punctuation + " \u00a0\u2212\u00d7\u00b7\u2248" + MATH_ITALIC


BODY_FONT = "Inter"
# Inter 4.0 beta 7 (The Inter Project Authors, SIL Open Font License 1.1: fonts/OFL.txt), as Debian's fonts-inter
# ships it and the film draws with, each face cut once with fontTools to Latin-1, Latin Extended-A, the general
# punctuation, super- and subscripts, arrows and the mathematical operators (about 34 kB each as WOFF2).
# The features the page's words use (kerning, ligatures, tabular digits for its numbers): Inter's others (stylistic
# sets, fractions, case forms) would double each face's bytes.
BODY_FEATURES = ("kern", "liga", "calt", "ccmp", "locl", "mark", "mkmk", "tnum")
BODY_FACES = (("Inter-Regular.woff2", 400, "normal"), ("Inter-SemiBold.woff2", 600, "normal"),
              ("Inter-Italic.woff2", 400, "italic"))


def characters_of(mathml: str) -> str:
    """Every character a formula's MathML shows."""
    return html.unescape(re.sub(r"<[^>]+>", "", mathml))


def page_characters(page: str) -> str:
    """Every character a page can show: its text, its attributes' and its script's (the numbers it writes)."""
    return html.unescape(page)


def font_face(family: str, file: Path, characters: str, weight: int = 400, style: str = "normal",
              features: tuple[str, ...] = ("*",)) -> str:
    """An @font-face rule for `file` cut to `characters` (and the ASCII ones) and its OpenType `features`,
    embedded as WOFF2. The cut is kept between processes (render/memo.py), named by the font's bytes, the characters,
    the features and fontTools' release: cutting is most of what a page costs to build (3 s a face)."""
    import importlib.metadata

    import fontTools

    text = "".join(sorted(set(characters + ALWAYS)))
    key = key_of("font", fontTools.version, importlib.metadata.version("brotli"), Path(__file__).read_bytes(),
                 Path(file).read_bytes(), text, "\0".join(features))
    data = remembered("fonts", key, lambda: font_subset(file, text, features))
    encoded = base64.b64encode(data).decode("ascii")
    return (f'@font-face {{ font-family: "{family}"; src: url(data:font/woff2;base64,{encoded}) format("woff2"); '
            f"font-weight: {weight}; font-style: {style}; font-display: block; }}")


def font_subset(file: Path, text: str, features: tuple[str, ...]) -> bytes:
    """`file` cut to the characters of `text` and its OpenType `features`, as WOFF2."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff2"
    options.layout_features = list(features)  # (all of the maths face's: its MATH table's stretchy parts need them)
    options.name_IDs = ["*"]
    font = subset.load_font(str(file), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text)
    subsetter.subset(font)
    data = io.BytesIO()
    subset.save_font(font, data, options)
    return data.getvalue()


@functools.lru_cache(maxsize=8)
def math_font_css(characters: str) -> str:
    """An @font-face rule for the maths font cut to `characters` (and the ASCII ones), embedded."""
    return font_face(MATH_FONT, FONT_FILE, characters)


@functools.lru_cache(maxsize=8)
def body_font_css(characters: str) -> str:
    """The @font-face rules of the body face's three faces, each cut to `characters`, embedded."""
    return "\n".join(font_face(BODY_FONT, FONT_FILE.parent / name, characters, weight, style, BODY_FEATURES)
                     for name, weight, style in BODY_FACES)

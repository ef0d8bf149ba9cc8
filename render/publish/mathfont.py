"""The film's page sets its formulas in Noto Sans Math, an OpenType maths font (with the MATH table a browser lays
out MathML by) whose letters are sans, as the film's formulas are: Chromium's own maths face is a serif. The page
ships it inside itself, cut to the glyphs its formulas use, as WOFF2 in a data: URL (a page opened from disk may not
load a font file beside it), so it needs nothing from the network and no font installed where it is read.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import re
import string
from pathlib import Path


MATH_FONT = "Noto Sans Math"
# Noto Sans Math 3.000 (Google, SIL Open Font License 1.1: fonts/OFL.txt), as @fontsource/noto-sans-math 5.3.0 ships
# it: Debian's (2020) has no MATH table.
FONT_FILE = Path(__file__).parent / "fonts" / "NotoSansMath-Regular.woff2"
# ASCII, a few operators, and the mathematical italic letters a browser draws a one-letter <mi> with (U+1D434 on, with
# ℎ for h): without them W, B, C and k fell back to a serif face.
MATH_ITALIC = "".join(chr(code) for code in range(0x1D434, 0x1D468) if code != 0x1D455) + "\u210e"
ALWAYS = string.ascii_letters + string.digits + string.punctuation + " \u00a0\u2212\u00d7\u00b7\u2248" + MATH_ITALIC


def characters_of(mathml: str) -> str:
    """Every character a formula's MathML shows."""
    return html.unescape(re.sub(r"<[^>]+>", "", mathml))


@functools.lru_cache(maxsize=8)
def math_font_css(characters: str) -> str:
    """An @font-face rule for the maths font cut to `characters` (and the ASCII ones), embedded."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff2"
    options.layout_features = ["*"]  # (the MATH table and the shaping a formula's stretchy parts need are kept)
    options.name_IDs = ["*"]
    font = subset.load_font(str(FONT_FILE), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(sorted(set(characters + ALWAYS))))
    subsetter.subset(font)
    data = io.BytesIO()
    subset.save_font(font, data, options)
    encoded = base64.b64encode(data.getvalue()).decode("ascii")
    return (f'@font-face {{ font-family: "{MATH_FONT}"; src: url(data:font/woff2;base64,{encoded}) format("woff2"); '
            f"font-display: block; }}")

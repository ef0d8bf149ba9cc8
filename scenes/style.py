"""The film's look, defined once: palette, font, sizes and the safe area."""

from __future__ import annotations

import manimpango

from render import formulas
from render.engine.cuts import BACKGROUND, LEAD, TRANSITION  # noqa: F401  (the engine's, part of the film's look)

TEXT = "#e9edf3"
MUTED = "#8d97a8"
COMPUTE = "#ff9f43"    # warm: arithmetic, busy cores, the flat roof, prefill
MEMORY = "#3fa9f5"     # cool: weights, bandwidth, the slope, decode
IDLE = "#343b47"       # idle cores, empty bars
KV_CACHE = "#c77dff"   # the accent: the KV cache
HIGHLIGHT = "#ffe066"  # the number being spoken
PANEL = "#171c24"      # cards and windows
# A serving scheduler's colour (the extended cut's capacity chart, the page's Under load)
SCHEDULER_COLOURS = {"static": MUTED, "continuous": MEMORY, "chunked": COMPUTE, "disaggregated": KV_CACHE}
# The film's formulas name the role of each part (render/formulas.py); this is the colour of each role.
ROLE_COLOURS = {formulas.TEXT: TEXT, formulas.COMPUTE: COMPUTE, formulas.MEMORY: MEMORY, formulas.KV_CACHE: KV_CACHE,
                formulas.MUTED: MUTED, formulas.HIGHLIGHT: HIGHLIGHT}

FONT_PREFERENCE = ("Inter", "DejaVu Sans")
FONT = next((name for name in FONT_PREFERENCE if name in manimpango.list_fonts()), "sans-serif")

# Text sizes (Manim font sizes). Body text stays legible at 480p: at least ~28 px at 1080p.
TITLE_SIZE = 34
BODY_SIZE = 26
LABEL_SIZE = 23
SMALL_SIZE = 20
NUMBER_SIZE = 40
FORMULA_SIZE = 36

# Formulas are set in the labels' face: Helvetica (a neo-grotesque like Inter) for text and letters through
# sfmath, with = and + from Computer Modern Sans, whose bars span the minus sign's width as Inter's do.
FORMULA_PREAMBLE = r"""\usepackage[english]{babel}
\usepackage{amsmath}
\usepackage{amssymb}
\usepackage[scaled=0.95]{helvet}
\renewcommand{\familydefault}{\sfdefault}
\usepackage[helvet]{sfmath}
\DeclareSymbolFont{sansoperators}{OT1}{cmss}{m}{n}
\DeclareMathSymbol{=}{\mathrel}{sansoperators}{"3D}
\DeclareMathSymbol{+}{\mathbin}{sansoperators}{"2B}"""

# The frame is 14.22 x 8 units; nothing goes within 5% of an edge.
SAFE_WIDTH = 14.22 * 0.9
SAFE_HEIGHT = 8 * 0.9
SAFE_LEFT, SAFE_RIGHT = -SAFE_WIDTH / 2, SAFE_WIDTH / 2
SAFE_BOTTOM, SAFE_TOP = -SAFE_HEIGHT / 2, SAFE_HEIGHT / 2

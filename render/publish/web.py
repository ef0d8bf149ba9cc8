"""What the film's two pages share: their templates (base.html, parts.html, pages.css), the film's
palette and font, and the beats as both list them (chapters, transcript).

The review page (review.py) is the checking tool; the film's page (page.py) is the one to publish.
Both extend base.html, use the macros in parts.html and explain their numbers from render/plan/meaning.py
(through explain.py).
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import jinja2

from render import formatting as fmt
from render.plan.types import Plan
from scenes import style

TEMPLATES = Path(__file__).parent
PALETTE = ("BACKGROUND", "TEXT", "MUTED", "COMPUTE", "MEMORY", "IDLE", "KV_CACHE", "HIGHLIGHT", "PANEL")


def render(template: str, **context) -> str:
    """One of the pages, filled in (autoescaped; a name missing from `context` is an error, not a blank)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.globals.update(palette={name.lower(): getattr(style, name) for name in PALETTE},
                       font=style.FONT_PREFERENCE[0], clock=lambda seconds: fmt.timestamp(round(seconds)))
    env.filters["unbroken"] = unbroken
    return env.get_template(template).render(**context)


# A number and its unit stay on one line ("3.35 TB/s", "34 ms", "2.1 GB")
UNIT_AFTER_NUMBER = re.compile(r"(\d) (?=(?:[KMGTP]i?B(?:/s)?|TFLOP/s|ms|s|µs|ns|GiB|percent|%)(?![\w/]))")


def unbroken(text: str) -> str:
    return UNIT_AFTER_NUMBER.sub("\\1\u00a0", text)


# What JSON inside a <script> element must not hold as written: "</script>" ends the element, "<!--" changes how the
# HTML parser reads it, & starts a character reference, and U+2028/U+2029 end a line in older JavaScript.
SCRIPT_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                                "\u2029": "\\u2029"})


def script_json(value) -> str:
    """`value` as JSON to embed in a page's <script> element: no name (a GPU called `</script><script>…`) can close the
    element and run as script; JSON.parse reads the escapes back as the same characters."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).translate(SCRIPT_ESCAPES)


def beat_views(plan: Plan) -> list[dict]:
    """Each beat as the pages list it: its chapter (start, end, clock) and its transcript's clauses."""
    return [{"id": beat.id, "title": beat.title, "start": beat.start, "end": beat.end,
             "clock": fmt.timestamp(round(beat.start)), "narration": beat.narration,
             "clauses": [{"text": clause.text, "start": clause.start, "clock": fmt.timestamp(round(clause.start, 1))}
                         for clause in (beat.timing.clauses if beat.timing else ())]}
            for beat in plan.beats]


def captions_url(vtt: str) -> str:
    """The captions inline: a page opened from disk may not fetch film.vtt beside it (file: URLs are their
    own origin)."""
    return "data:text/vtt;base64," + base64.b64encode(vtt.encode("utf-8")).decode("ascii") if vtt else ""

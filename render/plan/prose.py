"""Reads script/page.yaml, the film's page in words, and fills it from the plan as the narration is filled.

Each text (a paragraph of the article, "why it matters", a connected idea's sentence) is a template with the
narration's names and filters: compiled when the file is read, so a syntax error names its line before anything is
computed, and filled in the resolve step with the storyboard, so a name the plan lacks fails `make plan`, not the page.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path

from render.errors import FilmError
from render.files import PAGE_SCRIPT_PATH, display_path
from render.plan.templating import compile_template, fill
from render.plan.types import Link, PageStep, Paper, Prose
from render.specs.yamlio import YamlMap, check_fields, kept_while_unchanged, load_yaml
from render.text import echo

TOP_FIELDS = {"article": list, "why_it_matters": str, "connected": list, "papers": list, "steps": dict}
TOP_OPTIONAL = {"read_first": list, "related": list, "byline": dict, "standfirst": str, "rule_of_thumb": dict}
BYLINE_FIELDS = {"series": str, "author": str, "date": (str, datetime.date)}
RULE_FIELDS = {"text": str, "source": str, "url": str}
LINK_FIELDS = {"title": str, "url": str}
PAPER_FIELDS = {"authors": str, "year": int, "title": str, "url": str, "shows": str}
STEP_FIELDS = {"formula": str}
STEP_OPTIONAL = {"controls": list, "readout": list, "opens_at": dict, "earlier_picture": str,
                 "says_whose_timings": bool}
YEARS = (1900, 2100)


@dataclass(frozen=True)
class ProseScript:
    """The page's texts as written (templates), each with where it is, for messages."""

    article: tuple[tuple[str, str], ...]           # (template, file:line)
    why_it_matters: tuple[str, str]
    read_first: tuple[Link, ...]
    connected: tuple[tuple[Link, str], ...]        # (link whose text is a template, file:line)
    related: tuple[Link, ...]
    papers: tuple[Paper, ...]
    byline: str = ""
    standfirst: tuple[str, str] | None = None      # (template, file:line)
    rule_of_thumb: Link | None = None
    steps: dict[str, StepScript] = field(default_factory=dict)  # each beat's step on the page, by beat id


@dataclass(frozen=True)
class StepScript:
    """A beat's step as written: its page step, with the plan paths its sliders open at still to be read."""

    step: PageStep                           # opens_at left empty
    opens_at: tuple[tuple[str, str, str], ...]  # (control, plan path, file:line)
    where: str


@kept_while_unchanged(lambda path=PAGE_SCRIPT_PATH: [path])
def load_prose(path: Path = PAGE_SCRIPT_PATH) -> ProseScript:
    path = Path(path)
    document = load_yaml(path, "the film page's words (script/page.yaml is the film's)")
    if not isinstance(document, YamlMap):
        raise FilmError(f"{display_path(path)}: expected a mapping with article, why_it_matters, connected and papers")
    check_fields(document, "the page's words", TOP_FIELDS, TOP_OPTIONAL)
    article = []
    for index, paragraph in enumerate(items(document, "article"), 1):
        where = document["article"].where(index - 1)
        if not isinstance(paragraph, str):
            raise FilmError(f"{where}: article: paragraph {index} should be text (a template)")
        compile_template(paragraph, where, f"article paragraph {index}")
        article.append((paragraph, where))
    compile_template(document["why_it_matters"], document.where("why_it_matters"), "why_it_matters")
    connected = []
    for entry in items(document, "connected"):
        check_fields(entry, f"connected idea {title_of(entry)}", {**LINK_FIELDS, "text": str})
        compile_template(entry["text"], entry.where("text"), f"connected idea {entry['title']!r}")
        connected.append((Link(entry["title"], checked_url(entry), entry["text"]), entry.where("text")))
    papers = []
    for entry in items(document, "papers"):
        check_fields(entry, f"paper {title_of(entry)}", PAPER_FIELDS)
        if not YEARS[0] <= entry["year"] <= YEARS[1]:
            raise FilmError(f"{entry.where('year')}: paper {entry['title']!r}: year {entry['year']} is not a year of "
                            f"publication; write it as 2022")
        papers.append(Paper(entry["authors"], entry["year"], entry["title"], checked_url(entry), entry["shows"]))
    standfirst = None
    if "standfirst" in document:
        compile_template(document["standfirst"], document.where("standfirst"), "standfirst")
        standfirst = (document["standfirst"], document.where("standfirst"))
    rule = None
    if "rule_of_thumb" in document:
        entry = document["rule_of_thumb"]
        check_fields(entry, "the rule of thumb", RULE_FIELDS)
        rule = Link(entry["source"], checked_url(entry), " ".join(entry["text"].split()))
    return ProseScript(tuple(article), (document["why_it_matters"], document.where("why_it_matters")),
                       links(document, "read_first"), tuple(connected), links(document, "related"), tuple(papers),
                       byline_of(document), standfirst, rule, steps_of(document))


def steps_of(document: YamlMap) -> dict[str, StepScript]:
    """Each beat's step (steps: beat id -> formula, controls, readout, opens_at, earlier_picture), its texts checked."""
    written = document["steps"]
    if not written:
        raise FilmError(f"{document.where('steps')}: steps is empty; the page needs a step for each beat")
    steps = {}
    for beat_id, entry in written.items():
        what = f"steps: beat {echo(beat_id)}'s step"
        check_fields(entry, what, STEP_FIELDS, STEP_OPTIONAL)
        controls = entry.get("controls") or []
        if not all(isinstance(control, str) for control in controls):
            raise FilmError(f"{entry.where('controls')}: {what}: controls should be a list of names, e.g. [prompt]")
        readout = entry.get("readout") or []
        if not all(isinstance(row, list) and len(row) == 2 and all(isinstance(part, str) for part in row)
                   for row in readout):
            raise FilmError(f"{entry.where('readout')}: {what}: each readout is [label, number], e.g. "
                            f"[First token, prefill.ttft] (quote a label with a comma)")
        opens_at = entry.get("opens_at") or {}
        if not all(isinstance(path, str) for path in opens_at.values()):
            raise FilmError(f"{entry.where('opens_at')}: {what}: opens_at gives each control a plan path, e.g. "
                            f"prompt: parameters.prompt_tokens (make plan lists them)")
        step = PageStep(entry["formula"], tuple(controls), tuple((label, name) for label, name in readout),
                        earlier_picture=entry.get("earlier_picture"),
                        says_whose_timings=entry.get("says_whose_timings", False))
        steps[str(beat_id)] = StepScript(step, tuple((control, path, opens_at.where(control))
                                                     for control, path in opens_at.items()), written.where(beat_id))
    return steps


def byline_of(document: YamlMap) -> str:
    """'AI Engineering Visualised · after James Phoenix · 4 December 2026', its date checked."""
    if "byline" not in document:
        return ""
    entry = document["byline"]
    check_fields(entry, "the byline", BYLINE_FIELDS)
    try:  # (YAML reads 2026-12-04 as a date, '2026-12-04' as text)
        day = entry["date"] if isinstance(entry["date"], datetime.date) else datetime.date.fromisoformat(
            entry["date"].strip())
    except ValueError:
        raise FilmError(f"{entry.where('date')}: byline: date {echo(entry['date'])} is not a date; write it as "
                        f"2026-12-04") from None
    if not YEARS[0] <= day.year <= YEARS[1]:
        raise FilmError(f"{entry.where('date')}: byline: date {day.isoformat()} is not the film's; write its year "
                        f"from {YEARS[0]} to {YEARS[1]}")
    return " · ".join((entry["series"].strip(), entry["author"].strip(), f"{day.day} {day:%B %Y}"))


def items(document: YamlMap, key: str) -> list:
    found = document.get(key) or []
    if key in TOP_FIELDS and not found:
        raise FilmError(f"{document.where(key)}: {key} is empty; the page needs at least one")
    return found


def links(document: YamlMap, key: str) -> tuple[Link, ...]:
    found = []
    for entry in items(document, key):
        check_fields(entry, f"{key} entry {title_of(entry)}", LINK_FIELDS)
        found.append(Link(entry["title"], checked_url(entry)))
    return tuple(found)


def title_of(entry) -> str:
    return repr(entry.get("title", "?")) if isinstance(entry, dict) else "(not a mapping)"


def checked_url(entry: YamlMap) -> str:
    """Only a web address: a page's link never runs script (javascript:) or reads the reader's disk (file:)."""
    url = entry["url"].strip()
    if not url.startswith(("https://", "http://")) or any(c.isspace() or c in "\"'<>" for c in url):
        raise FilmError(f"{entry.where('url')}: {echo(entry['title'])}: {echo(url)} is not a web address; write it as "
                        f"https://…")
    return url


def fill_prose(script: ProseScript, context: dict[str, object]) -> Prose:
    """The page's words for this deployment; `context` holds the names a narration may use."""
    article = tuple(fill(text, context, where, f"article paragraph {index}")
                    for index, (text, where) in enumerate(script.article, 1))
    why = fill(script.why_it_matters[0], context, script.why_it_matters[1], "why_it_matters")
    connected = tuple(Link(link.title, link.url, fill(link.text, context, where, f"connected idea {link.title!r}"))
                      for link, where in script.connected)
    standfirst = fill(script.standfirst[0], context, script.standfirst[1], "standfirst") if script.standfirst else ""
    return Prose(article, why, script.read_first, connected, script.related, script.papers, script.byline,
                 standfirst, script.rule_of_thumb)

"""The README fits on a few screens and the rest lies in docs/ by topic; every command they name exists and every
relative link they hold resolves (issue 44)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from render.arguments import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 200

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def code_of(text: str) -> list[str]:
    """What a page sets as code: each line of a fenced block (without its comment), each inline span."""
    fenced = [line.split(" #")[0] for block in FENCE.findall(text) for line in block.splitlines()]
    return fenced + SPAN.findall(FENCE.sub("", text))


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))


def film_commands() -> set[str]:
    parser = build_parser()
    return {name for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name in action.choices}


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_fits_on_a_few_screens_and_leads_to_every_page_of_docs():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_README_LINES, len(text.splitlines())
    for heading in ("## The two commands", "## How it works", "### Finding your way", "## Change a beat",
                    "## Add a GPU or a model", "## Other commands", "## Tests"):
        assert f"\n{heading}\n" in text, heading
    # Finding your way sits right under the data flow
    assert text.index("### Finding your way") - text.index("## How it works") < 1_500
    linked = {Path(target.split("#")[0]).name for target in LINK.findall(text) if target.startswith("docs/")}
    assert {page.name for page in PAGES[1:]} <= linked, sorted({page.name for page in PAGES[1:]} - linked)


def test_every_command_the_readme_and_docs_name_exists():
    targets, commands = make_targets(), film_commands()
    assert {"film", "test", "preview", "studio", "page"} <= targets and {"plan", "measure", "film"} <= commands
    missing = []
    for page in PAGES:
        for code in code_of(page.read_text(encoding="utf-8")):
            for target in re.findall(r"(?:^|[\s;(])make ([a-z][a-z-]*)", code):
                if target not in targets:
                    missing.append(f"{page.relative_to(ROOT)}: make {target}")
            for command in re.findall(r"(?:^|[\s;(])(?:\.venv/bin/)?film ([a-z][a-z-]*)", code):
                if command not in commands:
                    missing.append(f"{page.relative_to(ROOT)}: film {command}")
    assert not missing, "\n".join(missing)


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and resolved.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", FENCE.sub("", resolved.read_text(encoding="utf-8")), re.M)
                if anchor not in {slug(heading) for heading in headings}:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)

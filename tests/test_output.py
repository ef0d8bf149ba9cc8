"""Only the project's own messages reach the terminal (issue 54): a film made as `make preview` makes it (its command,
at the tests' size) prints its progress, the files it wrote and the film's path, line by line in the project's
forms, and nothing a library logs (fontTools' subsetter listed every glyph of the page's maths font at INFO). The
real runs are test_beat_cache_key.py's; the forms and the logging set-up are checked here."""

from __future__ import annotations

import io
import logging
import re
import warnings
from pathlib import Path

# Every line `film film` may print on a good run, in the project's words.
FORMS = [
    r"film: making .+ for [\w.-]+ at \w+ quality",
    r"film: (narration\.wav|the film's sound) is up to date",
    r"film: (speaking|levelling|voicing) .+",
    r"beats: \d+ cached.*",
    r"  \[beats \d+/\d+\] rendering: .+",
    r"  rendered [\w-]+ in [\d.]+ s  \[beats \d+/\d+\]",
    r"page: stills \d+/\d+",
    r"subtitles: \S+film\.srt, \S+film\.vtt; poster: \S+poster\.png",
    r"publishing: \S+youtube-description\.txt, \S+transcript\.txt, \S+thumbnail\.jpg, \S+page/index\.html",
    r"duration [\d.]+ s; made in [\d.]+ s \(\d+ beats? rendered, \d+ reused\)",
    r"\S*film\.mp4",  # the film's path (relative to where the command ran, where it can be)
]


def strays(lines: list[str]) -> list[str]:
    """The lines of a film run that are none of the project's message forms (a real run's lines are read so in
    test_beat_cache_key.py, whose runs render beats and write the page, whose maths font fontTools cuts)."""
    return [line for line in lines if not any(re.fullmatch(form, line) for form in FORMS)]


def test_a_whole_runs_lines_are_the_projects_own(cli_tiny_film_made):
    """The suite's `film film` (make film's command, every beat from the cache, its kit and page made, the page's
    maths font cut by fontTools): each line it printed is one of the project's forms, the film's path last."""
    lines = (cli_tiny_film_made.parent / "printed.txt").read_text().splitlines()
    assert any(line.startswith("publishing: ") and "page/index.html" in line for line in lines)
    assert strays(lines) == []
    assert Path(lines[-1]).resolve() == (cli_tiny_film_made / "preview" / "film.mp4").resolve()  # (the path, last)


def test_the_forms_refuse_a_librarys_lines():
    assert strays(["film: making Prefill vs decode for h100-sxm-llama-3.1-8b-bf16 at tiny quality",
                   "  rendered prefill in 4.1 s  [beats 1/9]", "/tmp/build/preview/film.mp4"]) == []
    chatter = ["film: maxp pruned", "film: Glyph names: ['.notdef', 'A']", "INFO:fontTools.subset:head pruned",
               "/usr/lib/python3/dist-packages/x.py:3: UserWarning: careful"]
    assert strays(chatter) == chatter


def test_a_librarys_info_and_warnings_never_print_and_its_errors_are_named(monkeypatch):
    from render import logs

    stream = io.StringIO()
    monkeypatch.setattr(logging.getLogger(), "handlers", list(logging.getLogger().handlers))
    monkeypatch.setattr(logging.getLogger("film"), "handlers", list(logging.getLogger("film").handlers))
    level, propagate = logging.getLogger("film").level, logging.getLogger("film").propagate
    root_level = logging.getLogger().level
    try:
        logs.configure(logging.INFO, stream)
        logging.getLogger("fontTools.subset").info("maxp pruned")
        logging.getLogger("distributed.worker").warning("a worker's note")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a library's warning", UserWarning, stacklevel=1)
        logging.getLogger("film").info("making the film")
        logging.getLogger("film").warning("a \x1b[31mred\x1b[0m word")
        logging.getLogger("svgelements").error("no such path")
    finally:
        logging.captureWarnings(False)
        logging.getLogger("film").setLevel(level)
        logging.getLogger("film").propagate = propagate
        logging.getLogger().setLevel(root_level)
    assert stream.getvalue().splitlines() == ["film: making the film", "film: a red word",
                                              "film: svgelements failed: no such path"]

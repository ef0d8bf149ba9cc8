"""Only the project's own messages reach the terminal (issue 54): a film made as `make preview` makes it (its command,
at the tests' size) prints its progress, the files it wrote and the film's path, line by line in the project's
forms, and nothing a library logs (fontTools' subsetter listed every glyph of the page's maths font at INFO)."""

from __future__ import annotations

import io
import logging
import re
import shutil
import subprocess
import sys
import warnings

from conftest import ROOT

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
    r"/\S+/film\.mp4",
]


def test_a_film_run_prints_only_the_projects_own_lines(tmp_path, default_tiny_film):
    build = tmp_path / "build"
    shutil.copytree(default_tiny_film.build / "cache", build / "cache", symlinks=True)
    (tmp_path / "none").mkdir()
    result = subprocess.run([sys.executable, "-m", "render.cli", "film", "--quality", "tiny", "--build", str(build),
                             "--recordings", str(tmp_path / "none")], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = (result.stderr + result.stdout).splitlines()
    assert any(line.startswith("publishing: ") and "page/index.html" in line for line in lines)  # the font was cut
    strays = [line for line in lines if not any(re.fullmatch(form, line) for form in FORMS)]
    assert not strays, strays
    assert result.stdout.strip().splitlines()[-1] == str(build / "preview" / "film.mp4")  # the film's path, last


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

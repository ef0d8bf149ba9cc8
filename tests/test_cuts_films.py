"""The extended cut's films (CUT=extended): the film as timed byte for byte as without the cut, the extended film's
chapters and subtitles, its page step by step. Apart from tests/test_cuts.py so that the two test processes share
the renders (a file's tests run in one)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, copy_project, run_film
from test_cuts import NEW_BEATS, without_cuts


@pytest.fixture(scope="module")
def extended():
    from render.plan.resolve import resolve_plan

    return resolve_plan(cut="extended")


def film_files(folder: Path, project: Path = ROOT) -> dict[str, bytes]:
    """Every file a film wrote (its bookkeeping, the dot-files, aside), by its path in the folder (where it names
    the project's folder, a copy's is written as the project's)."""
    return {str(path.relative_to(folder)): path.read_bytes().replace(str(project).encode(), str(ROOT).encode())
            for path in sorted(folder.rglob("*"))
            if path.is_file() and not any(part.startswith(".") for part in path.relative_to(folder).parts)
            and path.relative_to(folder).parts[0] not in ("cache", "h100-sxm-llama-3.1-8b-bf16-extended")}


def test_without_cut_every_file_of_the_film_is_as_without_the_cut(cli_tiny_film, tmp_path):
    """The default film made from the storyboard as it was before it had cuts, against the session's: every file
    byte for byte (the film, its sound, subtitles, chapters, stills, page and kit)."""
    project = copy_project(tmp_path / "project")
    without_cuts(tmp_path).replace(project / "script" / "storyboard.yaml")
    build = tmp_path / "build"
    shutil.copytree(cli_tiny_film / "cache", build / "cache")
    made = subprocess.run([sys.executable, "-m", "render.cli", "film", "--quality", "tiny", "--build", str(build)],
                          cwd=project, capture_output=True, text=True, timeout=900)
    assert made.returncode == 0, made.stderr
    before, now = film_files(build, project), film_files(cli_tiny_film)
    assert sorted(before) == sorted(now) and "preview/film.mp4" in now
    assert [name for name in now if before[name] != now[name]] == []


def test_the_extended_film_is_made_with_its_new_chapters(cli_tiny_film, extended):
    """`film film --cut extended` as a user runs it: its own folder; the film as long as its plan, the new beats'
    chapters and words in its subtitles."""
    made = subprocess.run([sys.executable, "-m", "render.cli", "film", "--quality", "tiny", "--build",
                           str(cli_tiny_film), "--cut", "extended"], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert made.returncode == 0, made.stderr
    folder = cli_tiny_film / extended.choice.name / "preview"
    probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_format", "-show_chapters", "-of", "json",
                                       str(folder / "film.mp4")], capture_output=True, text=True).stdout)
    assert float(probe["format"]["duration"]) == pytest.approx(extended.duration, abs=0.1)
    chapters = [(chapter["tags"]["title"], float(chapter["start_time"])) for chapter in probe["chapters"]]
    for beat_id in NEW_BEATS:
        beat = extended.beat(beat_id)
        assert (beat.title, pytest.approx(beat.start, abs=0.05)) in chapters
    subtitles = " ".join((folder / "film.srt").read_text().split())
    assert "Chunked prefill cuts it into" in subtitles and "as DistServe does" in subtitles
    # Composed as the film's beats are (issue 68): each beat balanced within 6% of the width about the middle (the new
    # ones once sat 16-22% left of it), and the new beats' drawing spanning at least 77% of it on average (they once
    # spanned 49-75%; the film's beats span 85-90%).
    from test_film import content_spread

    spread = content_spread(folder / "film.mp4", extended)
    assert {beat: round(centre, 3) for beat, (centre, _) in spread.items() if abs(centre) > 0.06} == {}
    narrowest = min(width for beat, (_, width) in spread.items() if beat not in NEW_BEATS)
    assert {beat: round(spread[beat][1], 2) for beat in NEW_BEATS if spread[beat][1] < min(0.77, narrowest)} == {}


def test_the_extended_films_page_speaks_its_numbers_step_by_step(cli_tiny_film, extended):
    """The extended film's page (written by the film test above, or made here): its steps go through the new beats
    with Under load's controls and readouts, at the film's own stream; the section's numbers are the film's."""
    from render import formatting as fmt
    from test_review import chromium

    page = cli_tiny_film / extended.choice.name / "preview" / "page" / "index.html"
    if not page.exists():
        made = run_film("film", "--quality", "tiny", "--build", str(cli_tiny_film), "--cut", "extended")
        assert made.returncode == 0, made.stderr
    load = extended.load
    browser = chromium()
    try:
        browser.get(page.as_uri())
        data = browser.execute_script("return window.underLoad.data;")
        assert data["rates"] == [f"{rate:g} requests/s" for rate in load.rates]
        nearest = min(range(len(load.rates)), key=lambda index: abs(load.rates[index] - load.rate))
        assert data["start"]["rate"] == nearest
        capacity = browser.execute_script(
            "return document.querySelector('#load-table [data-load-show=capacity]').textContent;")
        assert capacity == f"{fmt.approx(load.continuous.capacity)} requests/s"
        browser.find_element("id", "read-steps").click()
        for _ in range([beat.id for beat in extended.beats].index("capacity")):
            browser.find_element("id", "step-next").click()
        step = browser.find_element("css selector", "article.step:not([hidden])")
        assert "Capacity" in step.find_element("tag name", "h3").text
        assert {control.get_attribute("data-control") for control in
                step.find_elements("css selector", ".step-controls [data-control]")} == {"rate", "scheduler", "slo"}
        readout = {dt.text: dd.text for dt, dd in zip(step.find_elements("css selector", "dl.step-readout dt"),
                                                     step.find_elements("css selector", "dl.step-readout dd"))}
        assert readout["Capacity"] == capacity
        # A step's copy of a control moves the same state: the section's readout follows it.
        step.find_element("css selector", ".pill[data-scheduler='0']").click()
        assert browser.execute_script(
            "return document.querySelector('#load-table [data-load-show=scheduler]').textContent;") == "Static"
    finally:
        browser.quit()


def test_the_default_films_scenes_read_what_they_read_before_the_cut(cli_tiny_film):
    """What each beat's scene of the film as timed reads of the plan (shown.json, which make film writes and the
    review page lists) is as it was before the extended cut existed: no scene of the default film reads the load
    group (two budgets names the capacity only in the cut). If a scene is meant to read more, copy the film's
    shown.json over tests/goldens/default-film-shown.json."""
    golden = ROOT / "tests" / "goldens" / "default-film-shown.json"
    assert (cli_tiny_film / "preview" / "shown.json").read_bytes() == golden.read_bytes()

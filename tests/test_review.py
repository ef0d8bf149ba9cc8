"""The publishing kit and the review page, checked in a real browser (Debian's chromium and
chromium-driver, driven by Selenium; nothing is downloaded: both paths are given)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from render import formatting as fmt
from render.media import probe
from render.plan.tracking import value_at
from render.plan.types import Plan

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


def run_film(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """conftest's run_film, with the time a review or a page of a tiny film may take."""
    import conftest

    return conftest.run_film(*args, cwd=cwd, timeout=900)


@pytest.fixture(scope="module")
def reviewed(cli_tiny_film):
    """A CI-sized film (tiny quality) with its kit, made by the CLI, and its review page."""
    build = cli_tiny_film
    review = run_film("review", "--build", str(build))
    assert review.returncode == 0, review.stderr
    folder = build / "preview"
    return build, folder, folder / "review" / "index.html", review


@pytest.fixture(scope="module")
def plan(reviewed):
    """The timed plan the film was made from."""
    build = reviewed[0]
    return Plan.from_json((build / "timed-plan.json").read_text())


def test_the_kit_lies_beside_the_film(reviewed, plan):
    _, folder, _, _ = reviewed
    description = (folder / "youtube-description.txt").read_text()
    chapters = re.findall(r"^(\d+:\d\d) (.+)$", description, re.MULTILINE)
    assert chapters[0] == ("0:00", "Two waits")
    assert [title for _, title in chapters] == [beat.title for beat in plan.beats]
    starts = [int(m) * 60 + int(s) for m, s in (clock.split(":") for clock, _ in chapters)]
    assert all(later - earlier >= 10 for earlier, later in zip(starts, starts[1:]))  # YouTube's shortest chapter
    assert plan.source in description and "https://" in description.split("Sources", 1)[1]
    assert fmt.duration(plan.numbers.prefill.seconds) in description
    transcript = (folder / "transcript.txt").read_text()
    for beat in plan.beats:
        assert beat.narration in transcript
    thumbnail = folder / "thumbnail.jpg"
    assert thumbnail.stat().st_size < 2 * 1024 * 1024
    with Image.open(thumbnail) as image:
        assert image.format == "JPEG" and image.size == (1280, 720)
        # the title band: near-black behind light lettering, at the top
        band = image.crop((0, 0, 1280, 240)).convert("L")
        assert band.getextrema()[0] < 30 and band.getextrema()[1] > 220


def test_review_before_any_film_says_what_to_run(tmp_path):
    result = run_film("review", "--build", str(tmp_path), "--gpu", "a100-sxm-80gb")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no film to review" in result.stderr and "run `make film GPU=a100-sxm-80gb`" in result.stderr


def test_the_review_folder_is_self_contained(reviewed):
    _, folder, page, output = reviewed
    html = page.read_text()
    assert "review: stills" in output.stderr + output.stdout  # progress, as make film shows it
    # nothing loaded from the network: no CDN script, stylesheet or web font (links to the sources are fine)
    assert not re.search(r"""src=["']https?:|<link[^>]+href=["']https?:|@import|url\(["']?https?:""", html)
    assert (page.parent / "film.mp4").stat().st_size == (folder / "film.mp4").stat().st_size
    stills = sorted((page.parent / "stills").glob("*.jpg"))
    assert len(stills) > 20
    for still in stills:
        assert f'src="stills/{still.name}"' in html


def chromium(env: dict[str, str] | None = None):
    """Debian's headless Chromium driven by Selenium (both paths given: nothing is downloaded), its viewport
    1280x800, its console kept, run with `env` (the environment's by default); the caller quits it."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail("chromium and chromium-driver are not installed: `make test` installs them "
                    "(render/tools/bootstrap.py)")
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must not fetch anything
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
                     "--mute-audio", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER), env=env), options=options)
    # What a page's script does is checked, not how fast a busy machine runs it: no script is cut off at
    # Selenium's 30 s (the chart's clash walk over every stop takes a few seconds, many more beside a heavy load).
    driver.set_script_timeout(600)
    driver.set_page_load_timeout(600)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",  # the viewport itself is 1280x800
                           {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    return driver


@pytest.fixture(scope="module")
def browser(reviewed):
    driver = chromium()
    _, _, page, _ = reviewed
    driver.get(page.as_uri())
    yield driver
    driver.quit()


def wait_for(driver, script: str, timeout: float = 20.0):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script))


def test_the_page_plays_the_film_with_captions_chapters_and_transcript(browser, reviewed, plan):
    build, folder, page, _ = reviewed
    duration = float(probe(folder / "film.mp4")["format"]["duration"])
    assert wait_for(browser, "var v = document.getElementById('film'); return v.readyState >= 1 && v.duration;") \
        == pytest.approx(duration, abs=0.1)
    cues = wait_for(browser, "var t = document.getElementById('film').textTracks[0];"
                             "t.mode = 'hidden'; return t.cues && t.cues.length;")
    assert cues == sum(len(beat.timing.subtitles) for beat in plan.beats)
    chapters = browser.find_elements("css selector", "button.chapter")
    assert len(chapters) == len(plan.beats)
    assert all(c.text.endswith(beat.title) for c, beat in zip(chapters, plan.beats))
    chapters[3].click()
    assert wait_for(browser,
        "return document.getElementById('film').currentTime;") == pytest.approx(plan.beats[3].start, abs=0.05)
    assert wait_for(browser, "var c = document.querySelectorAll('button.chapter')[3];"
                             "return c.getAttribute('aria-current') === 'true';")
    clause = plan.beats[5].timing.clauses[1]
    button = next(b for b in browser.find_elements("css selector", "a.clause") if b.text == clause.text)
    browser.execute_script("arguments[0].scrollIntoView();", button)
    button.click()
    assert wait_for(browser, "return document.getElementById('film').currentTime;") == pytest.approx(clause.start,
                                                                                                     abs=0.05)
    shot = build / "review-1280x800.png"
    browser.execute_script("window.scrollTo(0, 0);")
    browser.save_screenshot(str(shot))
    with Image.open(shot) as image:
        assert image.size == (1280, 800)
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


def test_the_numbers_table_explains_every_number_the_film_speaks_or_shows(browser, plan, reviewed):
    rows = {row.get_attribute("data-path"): row for row in browser.find_elements("css selector", "#numbers tbody tr")}
    shown = json.loads((reviewed[1] / "shown.json").read_text())  # what the scenes read, recorded by the render
    assert shown["prefill"], "the film recorded no numbers for its pictures"

    def is_number(path: str) -> bool:
        value = value_at(plan, path)
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    spoken = {path for beat in plan.beats for path in [*beat.reads, *shown[beat.id]] if is_number(path)}
    assert {"numbers.prefill.ops", "spec.peak_flops", "numbers.batch.kv_bytes"} <= spoken
    assert spoken and spoken <= set(rows), sorted(spoken - set(rows))
    for path in spoken:
        formula = rows[path].find_element("css selector", ".formula").text
        sources = rows[path].find_element("css selector", ".sources").text
        assert formula.strip(), path
        assert sources.strip(), path
    datasheet = rows["spec.peak_flops"].find_element("css selector", ".sources a")
    assert datasheet.get_attribute("href").startswith("https://") and "datasheet" in datasheet.text
    listed = browser.find_element("css selector", "#source-measured").text
    assert plan.measured.dataset.path in listed and plan.measured.dataset.provider in listed


ACCESSIBILITY = """
function luminance(rgb) {
  var c = rgb.map(function (v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}
function parse(color) {
  var m = color.match(/[\\d.]+/g).map(Number);
  return {rgb: m.slice(0, 3), alpha: m.length > 3 ? m[3] : 1};
}
function background(element) {
  for (var e = element; e; e = e.parentElement) {
    var c = parse(getComputedStyle(e).backgroundColor);
    if (c.alpha > 0.5) { return c.rgb; }
  }
  return [255, 255, 255];
}
var low = [];
document.querySelectorAll('body *').forEach(function (e) {
  var own = Array.prototype.some.call(e.childNodes, function (n) { return n.nodeType === 3 && n.textContent.trim(); });
  if (!own || e.closest('video') || !e.getClientRects().length) { return; }
  var fg = luminance(parse(getComputedStyle(e).color).rgb), bg = luminance(background(e));
  var ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
  if (ratio < 4.5) { low.push(e.tagName + ' ' + e.textContent.trim().slice(0, 40) + ' ' + ratio.toFixed(2)); }
});
var levels = Array.prototype.map.call(document.querySelectorAll('h1, h2, h3, h4, h5, h6'),
                                      function (h) { return Number(h.tagName[1]); });
return {
  missingAlt: Array.prototype.filter.call(document.images, function (i) { return !i.getAttribute('alt'); }).length,
  captions: document.querySelectorAll('video track[kind=captions]').length,
  levels: levels, lowContrast: low, lang: document.documentElement.lang
};
"""


def test_the_page_passes_a_basic_accessibility_check(browser):
    report = browser.execute_script(ACCESSIBILITY)
    assert report["missingAlt"] == 0
    assert report["captions"] == 1
    assert report["lang"] == "en"
    levels = report["levels"]
    assert levels[0] == 1 and levels.count(1) == 1
    assert all(later <= earlier + 1 for earlier, later in zip(levels, levels[1:])), levels
    assert report["lowContrast"] == []


def test_a_missing_still_is_reported_on_the_page_not_a_crash(reviewed, plan, tmp_path):
    """A film cut short (here: its first 20 seconds) has no frame for the later cues."""
    import ffmpeg

    from render.publish.review import make_review

    _, folder, _, _ = reviewed
    short = tmp_path / "film.mp4"
    ffmpeg.input(str(folder / "film.mp4"), t=20).output(str(short), c="copy").overwrite_output().run(quiet=True)
    (tmp_path / "film.vtt").write_text((folder / "film.vtt").read_text())
    page = make_review(plan, short, {beat.id: list(beat.reads) for beat in plan.beats}, tmp_path, say=lambda _: None)
    html = page.read_text()
    assert html.count('class="missing"') >= 20 and "the film has no frame there" in html
    assert 'src="stills/two-waits--paste.jpg"' in html  # the early ones are there
    assert (page.parent / "stills" / "two-waits--paste.jpg").stat().st_size > 0


def test_other_films_are_linked_but_not_scratch_or_review_copies(tmp_path):
    from render.publish.review import variants

    for folder in ("preview", "a100-sxm-80gb-llama-3.1-8b-bf16", "a100-sxm-80gb-llama-3.1-8b-bf16/review",
                   "preview/.review.123", "cache/beats"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "film.mp4").write_bytes(b"film")
    (tmp_path / "film.mp4").write_bytes(b"film")
    (tmp_path / "a100-sxm-80gb-llama-3.1-8b-bf16" / "review" / "index.html").write_text("<html></html>")
    found = variants(tmp_path, tmp_path / "review", tmp_path)
    assert [(v["href"], v["has_review"]) for v in found] == [
        ("../a100-sxm-80gb-llama-3.1-8b-bf16/review/index.html", True), ("../preview/film.mp4", False)]


def test_the_page_shows_what_the_measured_endpoint_achieves_with_uncertainties_and_residuals(browser, plan):
    """The measured dataset's fit (render/specs/calibration.py): each figure with its one sigma, each measured figure
    beside the fitted one, and what the fit cannot say."""
    section = browser.find_element("css selector", "section.fit")
    assert section.find_element("css selector", "h2").text == "What the measured endpoint achieves"
    figures = {item.find_element("css selector", "dt").text: item.find_element("css selector", "dd").text
               for item in section.find_elements("css selector", ".fit-figures > div")}
    fit = plan.measured.fit
    assert figures["Decode bandwidth"].startswith(fmt.share_of(fit.memory_efficiency.value,
                                                               fit.memory_efficiency.uncertainty))
    assert "209 tokens/s at best" in figures["Decode bandwidth"] and "74% ±" in figures["Decode bandwidth"]
    assert " ± " in figures["Overhead per request"] and " ± " in figures["Prefill arithmetic"]
    rows = section.find_elements("css selector", "table.fit-points tbody tr")
    assert len(rows) == len(fit.points) == 5
    first = [cell.text for cell in rows[0].find_elements("css selector", "td")]
    assert first[0] == "TTFT at 34 tokens" and first[1] == "about 0.30 ± 0.05 s" and first[3] == "+8.1%"
    assert "assumed H100 SXM" in section.text

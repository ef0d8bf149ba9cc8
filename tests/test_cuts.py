"""The extended cut (CUT=extended): the film goes on, after "The cache rides along", to a server under load, every
number from the serving simulator as `film load` gives it; and the film as the transcript times it is untouched."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from render import formatting as fmt
from render.errors import FilmError
from render.files import STORYBOARD_PATH
from render.plan.resolve import resolve_plan
from conftest import ROOT, copy_project, run_film

NEW_BEATS = ("queue", "long-prompt", "capacity")


@pytest.fixture(scope="module")
def extended():
    return resolve_plan(cut="extended")


@pytest.fixture(scope="module")
def default():
    return resolve_plan()


def without_cuts(folder: Path) -> Path:
    """The storyboard as it was before it had cuts: everything above `cuts:`."""
    text = STORYBOARD_PATH.read_text()
    path = folder / "storyboard.yaml"
    path.write_text(text[:text.index("\n# Other cuts of the film")] + "\n")
    return path


def test_the_cut_goes_after_the_cache_rides_along_and_moves_the_end_on(extended, default):
    ids = [beat.id for beat in extended.beats]
    assert ids == [beat.id for beat in default.beats][:8] + list(NEW_BEATS) + ["two-budgets"]
    added = sum(extended.beat(beat_id).duration for beat_id in NEW_BEATS)
    assert 45 <= added <= 75
    assert extended.beat("queue").start == default.beat("cache-rides-along").end
    assert extended.beat("two-budgets").start == default.beat("two-budgets").start + added
    assert extended.duration == default.duration + added
    for before, after in zip(extended.beats, extended.beats[1:]):
        assert before.end == after.start
    # The beats before it are the film's, word for word and to the second.
    for beat in default.beats[:8]:
        assert extended.beat(beat.id) == beat
    assert extended.choice.name == "h100-sxm-llama-3.1-8b-bf16-extended" and not extended.choice.is_default


def test_the_default_plan_is_as_it_was_before_the_storyboard_had_cuts(default, tmp_path):
    copy = without_cuts(tmp_path)
    before = resolve_plan(storyboard_path=copy)
    assert default.to_json() == before.to_json().replace(str(copy), "script/storyboard.yaml")
    assert '"load"' not in default.to_json() and '"cut"' not in default.to_json()


def test_every_number_the_cut_speaks_is_what_film_load_prints(extended):
    """The plan's load group against `film load --json` at the same settings, a separate process: the film's rate
    under every scheduler, and the sweep's capacities and curves."""
    load = extended.load
    p = load.parameters
    settings = ["--prompt-tokens", str(load.prompt_tokens), "--answer-tokens", str(p.answer_tokens),
                "--requests", str(p.requests), "--seed", str(p.seed),
                "--slo", f"ttft={p.slo_ttft_seconds},tpot={p.slo_tpot_seconds}", "--batch", str(p.static_batch),
                "--max-wait", str(p.static_wait_seconds),
                "--chunk-tokens", str(p.chunk_tokens), "--scheduler", "static,continuous,chunked,disaggregated",
                "--json"]
    at_rate = run_film("load", "--rate", str(load.rate), *settings)
    assert at_rate.returncode == 0, at_rate.stderr
    reports = {report["scheduler"]: report for report in json.loads(at_rate.stdout)}
    for found in load.schedulers:
        report = reports[found.name]
        assert found.ttft_p90_seconds == pytest.approx(report["ttft_seconds"]["p90"], rel=1e-9)
        assert found.ttft_p50_seconds == pytest.approx(report["ttft_seconds"]["p50"], rel=1e-9)
        assert found.tpot_p90_seconds == pytest.approx(report["tpot_seconds"]["p90"], rel=1e-9)
        assert found.goodput == pytest.approx(report["goodput_requests_per_second"], rel=1e-9)
    swept = run_film("load", "--sweep", ",".join(f"{rate:g}" for rate in load.rates), *settings)
    assert swept.returncode == 0, swept.stderr
    sweep = json.loads(swept.stdout)
    assert list(load.rates) == sweep["rates"]
    # film load's own sweep, taken on past the highest knee where it ends short of it, and the film's rate among them
    auto = json.loads(run_film("load", "--sweep", "auto", *settings).stdout)
    assert load.rate in load.rates
    others = [rate for rate in load.rates if rate != load.rate]
    assert others == auto["rates"] or (others[-1] > auto["rates"][-1] and len(others) == len(auto["rates"]))
    for found in load.schedulers:
        assert found.capacity == sweep["capacity_requests_per_second"][found.name]
        assert list(found.p90_ttft_curve) == pytest.approx(
            [report["ttft_seconds"]["p90"] for report in sweep["reports"][found.name]], rel=1e-9)
    # The film's rate is film load's own when none is given: half the deployment's saturation.
    alone = run_film("load", *settings[:-3], "--json")
    assert json.loads(alone.stdout)["rate"] == load.rate


def test_the_narration_says_the_simulations_numbers(extended):
    load = extended.load
    queue, long, capacity = (extended.beat(beat_id).narration for beat_id in NEW_BEATS)
    assert f"here {fmt.approx(load.rate)} requests a second" in queue
    assert fmt.duration(load.continuous.ttft_p90_seconds) in queue
    assert fmt.duration(load.static.ttft_p90_seconds) in queue
    assert f"{fmt.count(load.long_prompt_tokens)}-token prompt" in long
    assert fmt.duration(load.stall_seconds) in long and f"{load.chunks} pieces" in long
    assert fmt.milliseconds(load.chunked_step_seconds) in long
    assert f"{fmt.approx(load.continuous.capacity)} requests a second with continuous batching" in capacity
    assert f"{fmt.approx(load.chunked.capacity)} chunked" in capacity
    assert load.static.capacity is None and f"static fewer than {fmt.approx(load.rates[0])}" in capacity
    assert f"two H100s take {fmt.approx(load.disaggregated.capacity)}" in capacity
    # A knee: the continuous curve is flat well below its capacity and past the objective above it.
    curve = dict(zip(load.rates, load.continuous.p90_ttft_curve))
    assert max(value for rate, value in curve.items() if rate < load.continuous.capacity / 2) < 0.5
    assert max(curve.values()) > 2 * 0.5


def test_a_deployment_that_meets_no_objective_says_so(extended):
    """Under an objective no scheduler can meet (a token in a microsecond), the capacity beat says so rather than
    naming a number."""
    from render.plan.load import load_numbers
    from render.plan.phrases import capacities, disaggregation

    impossible = load_numbers(extended.choice, 2000, 32000, type(extended.load.parameters)(
        **{**extended.load.parameters.__dict__, "slo_tpot_seconds": 0.001}))
    assert not impossible.serves
    assert capacities(impossible, extended.choice.hardware) == \
        f"meets them under no scheduler, not even at {fmt.approx(impossible.rates[0])} requests a second"
    assert disaggregation(impossible, extended.choice.hardware).endswith("two H100s miss them too")


@pytest.mark.parametrize("old, new, message", [
    ("        length: 24\n", "        length: 2\n",
     r"storyboard\.yaml:\d+: cut 'extended' beat 'queue': length 2 is 2 seconds; give a beat from 5 to 120 seconds"),
    ("    after: cache-rides-along\n", "    after: cache-rides\n",
     r"storyboard\.yaml:\d+: cut 'extended': after must name one of the film's beats but its last .*not 'cache-rides'"),
    ("      - id: long-prompt\n", "      - id: prefill\n",
     r"storyboard\.yaml:\d+: cut 'extended' beat 'prefill': the film already has a beat 'prefill'"),
    ("      chunk_tokens: 512 ", "      chunk_tokens: 5 ",
     r"storyboard\.yaml:\d+: cut 'extended' load: chunk_tokens must be from 16 to 65,536 tokens, not 5"),
])
def test_a_bad_cut_is_named_where_it_is_written(storyboard_copy, old, new, message):
    with pytest.raises(FilmError, match=message):
        resolve_plan(storyboard_path=storyboard_copy(old, new))


def test_an_unknown_cut_names_the_cuts_there_are():
    made = run_film("plan", "--cut", "director's")
    assert made.returncode != 0 and "Traceback" not in made.stderr
    assert ("--cut \"director's\": script/storyboard.yaml defines the cuts default, extended (CUT=extended)"
            in made.stderr)


def test_make_passes_cut_on_as_text(tmp_path):
    made = subprocess.run(["make", "-s", "plan", "CUT=extended; touch pwned"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert made.returncode != 0 and "--cut 'extended; touch pwned':" in made.stderr
    assert not (ROOT / "pwned").exists()


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


def cut_choice_check(choice: tuple, cache: Path, lint: bool) -> tuple:
    """One choice's extended cut narrated (check-choices' own check: its speech within every slot), and with `lint`,
    the new beats' layout and captions linted (as tests/test_layout.py lints the film's)."""
    from render.plan.types import FilmRequest
    from render.tools import check_choices as cc
    from render.video.beats import lint_beat
    from render.voice.narration import Narrator
    from render.voice.subtitles import caption_problems

    gpu, gpus, model, dtype, *efficiency = choice
    request = FilmRequest(gpu, model, dtype, gpus, efficiency=efficiency[0] if efficiency else None, cut="extended")
    checked = cc.check_choice(request, cache)
    problems = []
    if lint and checked.outcome == "fits":
        plan = Narrator(resolve_plan(request, recordings=cache / "none"), cache).narrate().plan
        for beat_id in NEW_BEATS:
            beat = plan.beat(beat_id)
            problems += [f"{beat_id}: {problem}" for problem in lint_beat(plan, beat_id, cache)]
            problems += [f"{beat_id}: caption {problem}"
                         for problem in caption_problems(list(beat.timing.subtitles), beat.end)]
    return checked, problems


def test_the_extended_cut_narrates_and_lays_out_for_every_choice_that_stresses_it(tmp_path, seed_speech):
    """For the layout lint's choices (each linted: no text over text or an edge, nothing in the margin, every caption
    readable) and the ends of every axis check-choices samples: the cut's speech fits every slot, or the choice is
    refused for memory as the film's is."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from render.plan.types import FilmRequest
    from render.tools import check_choices as cc
    from test_layout import LINT_CHOICES

    cache = seed_speech(tmp_path)
    ends = cc.axis_ends(cc.load_catalog(cc.DATA_DIR), FilmRequest("h100-sxm", "llama-3.1-8b", "bf16", 1))
    choices = [*LINT_CHOICES, *[(end.gpu, end.gpus, end.model, end.dtype) for end in ends]]
    choices = list(dict.fromkeys(choices))
    lint = [choice in LINT_CHOICES for choice in choices]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = dict(zip(choices, pool.map(cut_choice_check, choices, [cache] * len(choices), lint)))
    refused = {choice for choice, (checked, _) in found.items() if checked.outcome == "refused"}
    assert refused == {("h100-sxm", 1, "deepseek-v3", "bf16")}
    assert {choice: f"{checked.beat} {checked.note}" for choice, (checked, _) in found.items()
            if checked.outcome == "fails"} == {}
    assert {choice: problems for choice, (_, problems) in found.items() if problems} == {}


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


def test_a_stream_left_unsaid_is_film_loads_own():
    """The page of a film without the cut simulates film load's defaults: each of the storyboard's load fields left
    out is film load's."""
    from render.plan.types import LoadParameters
    from render.serving.load import DEFAULT_SLO, LoadRequest, SchedulerSettings

    given, scheduler = LoadParameters(), SchedulerSettings()
    request = LoadRequest.__dataclass_fields__
    assert (given.answer_tokens, given.requests, given.seed) == (
        request["answer"].default.mean, request["requests"].default, request["seed"].default)
    assert (given.slo_ttft_seconds, given.slo_tpot_seconds) == (DEFAULT_SLO.ttft_seconds, DEFAULT_SLO.tpot_seconds)
    assert (given.static_batch, given.static_wait_seconds, given.chunk_tokens) == (
        scheduler.batch, scheduler.max_wait, scheduler.chunk_tokens)


def test_the_default_films_scenes_read_what_they_read_before_the_cut(cli_tiny_film):
    """What each beat's scene of the film as timed reads of the plan (shown.json, which make film writes and the
    review page lists) is as it was before the extended cut existed: no scene of the default film reads the load
    group (two budgets names the capacity only in the cut). If a scene is meant to read more, copy the film's
    shown.json over tests/goldens/default-film-shown.json."""
    golden = ROOT / "tests" / "goldens" / "default-film-shown.json"
    assert (cli_tiny_film / "preview" / "shown.json").read_bytes() == golden.read_bytes()
